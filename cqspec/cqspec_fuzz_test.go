package cqspec

import (
	"strings"
	"testing"
)

// FuzzParse: no spec file makes the exporter's parser panic or hang
// (a ${file:} reference reads at most 1 MiB of a regular file); a spec it
// accepts has a source with a name, a path and a valid plugin spec.
func FuzzParse(f *testing.F) {
	f.Add([]byte(minimalSpec))
	f.Add([]byte(minimalSpec + "---\nkind: destination\nspec:\n  name: file\n  path: cloudquery/file\n"))
	f.Add([]byte(strings.Replace(minimalSpec, `"tok-1001"`, `"${TOKEN}"`, 1)))
	f.Add([]byte(strings.Replace(minimalSpec, "version: v0.0.0", "version: v0.0.0\n  otel_endpoint: \"${time:2 days ago}\"", 1)))
	f.Add([]byte("kind: source\nspec: {name: x, path: a/cq-source-x, registry: github, version: v1.0.0, tables: ['*'], destinations: [d], spec: {accounts: [{access_token: t}]}}\n# ${file:nope}\n"))
	env := envOf(map[string]string{"TOKEN": "tok", "EMPTY": ""})
	f.Fuzz(func(t *testing.T, data []byte) {
		src, err := Parse(data, "spec.yml", env, specNow)
		if err != nil {
			return
		}
		if src.Name == "" || src.Path == "" || src.Plugin == nil || src.Plugin.Validate() != nil {
			t.Fatalf("accepted a source without name, path or a valid plugin spec: %+v", src)
		}
	})
}
