package readme

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/xsim"
)

// sqlBlock matches a fenced SQL block.
var sqlBlock = regexp.MustCompile("(?ms)^```sql\n(.*?)^```")

// The DuckDB queries of README.md and docs/export.md work on an archive
// whose account has no bookmark yet: every table has a file from the
// first export on. (CI runs the README's first query on the demo's
// archive too.)
func TestTheQueriesWorkOnAnArchiveWithNoBookmarks(t *testing.T) {
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	spec := "kind: source\nspec:\n  name: x\n  path: ./cq-source-x\n  registry: local\n  tables: [\"*\"]\n  destinations: [\"file\"]\n  spec:\n" +
		"    base_url: " + sim.URL() + "\n    accounts:\n      - user_id: \"1001\"\n        access_token: \"" + sim.IssueToken("1001") + "\"\n"
	src, err := export.ParseSpec([]byte(spec), "spec.yml", os.LookupEnv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cwd := t.TempDir()
	out := filepath.Join(cwd, "out")
	if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: out}); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("out", filepath.Join(cwd, "x-archive")); err != nil { // docs/export.md's name
		t.Fatal(err)
	}
	for _, table := range export.TableNames() {
		if files, _ := filepath.Glob(filepath.Join(out, table, "*.parquet")); len(files) != 1 {
			t.Errorf("%s: %d files after the first export, want 1", table, len(files))
		}
	}

	duck := os.Getenv("CQX_DUCKDB_DIR")
	if duck == "" {
		t.Skip("DuckDB for Node.js not installed (CQX_DUCKDB_DIR unset; .ci/run sets it)")
	}
	n := 0
	for _, doc := range []string{"../../README.md", "../../docs/export.md"} {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range sqlBlock.FindAllSubmatch(text, -1) {
			sql := string(m[1])
			if !strings.Contains(sql, "'out/") && !strings.Contains(sql, "'x-archive/") {
				continue // a query of a database destination
			}
			n++
			cmd := exec.Command("node", filepath.Join(duck, "query.mjs"), sql)
			cmd.Dir = cwd
			if b, err := cmd.CombinedOutput(); err != nil {
				t.Errorf("%s: the query fails on an archive with no bookmarks: %v\n%s\n%s", doc, err, sql, b)
			}
		}
	}
	if n < 4 {
		t.Errorf("ran %d queries of README.md and docs/export.md", n)
	}
}
