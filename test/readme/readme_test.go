// Package readme checks that what README.md shows works: its spec files
// parse and validate as the exporter and the plugin read them. (Its shell
// commands are run by .ci/run and by the tests of each command.)
package readme

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/cqspec"
)

// yamlBlock matches a fenced YAML block, also one indented inside a list.
var yamlBlock = regexp.MustCompile("(?ms)^( *)```yaml\n(.*?)^ *```")

// Every YAML block of the README that is a whole spec file (it starts with
// `kind:`) is read as `cq-source-x export --spec` reads it: the source
// spec's fields and the plugin's spec are validated.
func TestREADMESpecsAreValid(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	env := func(name string) (string, bool) { return "value-of-" + name, true }
	n := 0
	for _, m := range yamlBlock.FindAllSubmatch(readme, -1) {
		indent, block := string(m[1]), string(m[2])
		lines := strings.Split(block, "\n")
		for i, l := range lines {
			lines[i] = strings.TrimPrefix(l, indent)
		}
		block = strings.Join(lines, "\n")
		if !strings.HasPrefix(block, "kind:") {
			continue
		}
		n++
		src, err := cqspec.Parse([]byte(block), "README.md", env, time.Now())
		if err != nil {
			t.Errorf("README spec %d does not parse: %v\n%s", n, err, block)
			continue
		}
		if src.Plugin == nil || len(src.Plugin.Accounts) == 0 {
			t.Errorf("README spec %d has no accounts", n)
		}
	}
	if n < 2 {
		t.Fatalf("found %d spec files in README.md, want the exporter's and the CloudQuery CLI's", n)
	}
}
