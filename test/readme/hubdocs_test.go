package readme

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/export"
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
			if _, err := export.ParseSpec([]byte(block), page, env, time.Now()); err != nil {
				t.Errorf("%s: spec %d does not parse: %v\n%s", page, n, err, block)
			}
		}
		if n == 0 {
			t.Errorf("%s shows no spec file", page)
		}
	}
}
