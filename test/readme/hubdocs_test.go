package readme

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/cqspec"
)

// The hub's pages (docs/overview.md, docs/configuration.md, which
// `cq-source-x package` ships) show spec files that parse and validate.
func TestHubPagesSpecsAreValid(t *testing.T) {
	for _, page := range []string{"../../docs/overview.md", "../../docs/configuration.md"} {
		text, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, m := range yamlBlock.FindAllSubmatch(text, -1) {
			block := string(m[2])
			if !strings.HasPrefix(block, "kind:") {
				continue
			}
			n++
			env := func(name string) (string, bool) { return "value-of-" + name, true }
			if _, err := cqspec.Parse([]byte(block), page, env, time.Now()); err != nil {
				t.Errorf("%s: spec %d does not parse: %v\n%s", page, n, err, block)
			}
		}
		if n == 0 {
			t.Errorf("%s shows no spec file", page)
		}
	}
}

// docs/configuration.md has a row for every field of the plugin's spec
// (spec/schema.json), and none for a field the spec does not have.
func TestConfigurationPageListsEveryField(t *testing.T) {
	var schema struct {
		Defs map[string]struct {
			Properties map[string]schemaProperty `json:"properties"`
		} `json:"$defs"`
	}
	b, err := os.ReadFile("../../spec/schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &schema); err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	var walk func(def, prefix string)
	walk = func(def, prefix string) {
		for name, p := range schema.Defs[def].Properties {
			for _, alt := range p.OneOf { // optional sections: the type, or null
				if alt.Ref != "" || alt.Items != nil && alt.Items.Ref != "" {
					p = alt
				}
			}
			ref, path := p.Ref, prefix+name
			if p.Items != nil && p.Items.Ref != "" { // a list of objects: accounts[]
				ref, path = p.Items.Ref, path+"[]"
			}
			if sub := strings.TrimPrefix(ref, "#/$defs/"); sub != "" && sub != "Duration" && sub != "ByteSize" {
				walk(sub, path+".")
				continue
			}
			want[path] = true
		}
	}
	walk("Spec", "")

	page, err := os.ReadFile("../../docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]bool{}
	for _, line := range strings.Split(string(page), "\n") {
		first, _, ok := strings.Cut(strings.TrimPrefix(line, "| "), " |")
		if !ok || !strings.HasPrefix(line, "| `") {
			continue
		}
		// A row may name several fields of one section: `fields.expansions`, `user_fields`.
		section := ""
		for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(first, -1) {
			name := m[1]
			if i := strings.LastIndex(name, "."); i >= 0 {
				section = name[:i+1]
			} else {
				name = section + name
			}
			documented[name] = true
		}
	}
	for f := range want {
		if !documented[f] {
			t.Errorf("docs/configuration.md has no row for %s", f)
		}
	}
	for f := range documented {
		if !want[f] {
			t.Errorf("docs/configuration.md documents %s, which the spec does not have", f)
		}
	}
}

type schemaProperty struct {
	Ref   string `json:"$ref"`
	Items *struct {
		Ref string `json:"$ref"`
	} `json:"items"`
	OneOf []schemaProperty `json:"oneOf"`
}
