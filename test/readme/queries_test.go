package readme

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/cli"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// sqlBlock matches a fenced SQL block.
var sqlBlock = regexp.MustCompile("(?ms)^```sql\n(.*?)^```")

// exportDir is an exporter's archive of an account of a simulator, in
// cwd/out, also named cwd/x-archive (docs/export.md's name).
type exportDir struct {
	sim       *xsim.Server
	cwd, spec string
}

// newArchive exports the account 1001 with the bookmarks saved.
func newExportDir(t *testing.T, bookmarks int) *exportDir {
	t.Helper()
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	sim.SeedBookmarks("1001", bookmarks)
	a := &exportDir{sim: sim, cwd: t.TempDir()}
	a.spec = filepath.Join(a.cwd, "spec.yml")
	text := "kind: source\nspec:\n  name: x\n  path: ./cq-source-x\n  registry: local\n  tables: [\"*\"]\n  destinations: [\"file\"]\n  spec:\n" +
		"    base_url: " + sim.URL() + "\n    accounts:\n      - user_id: \"1001\"\n        access_token: \"" + sim.IssueToken("1001") + "\"\n"
	if err := os.WriteFile(a.spec, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	a.run(t, "export", "--spec", a.spec, "--out", a.out(), "--quiet")
	if err := os.Symlink("out", filepath.Join(a.cwd, "x-archive")); err != nil {
		t.Fatal(err)
	}
	return a
}

func (a *exportDir) out() string { return filepath.Join(a.cwd, "out") }

// run runs `cq-source-x args...`.
func (a *exportDir) run(t *testing.T, args ...string) {
	t.Helper()
	var output strings.Builder
	if code := cli.Run(context.Background(), args, strings.NewReader(""), &output, &output); code != 0 {
		t.Fatalf("%v: exit %d\n%s", args, code, output.String())
	}
}

// duckDB is the directory of test/duckdb's scripts with DuckDB for
// Node.js installed; the test skips without it.
func duckDB(t *testing.T) string {
	t.Helper()
	duck := os.Getenv("CQX_DUCKDB_DIR")
	if duck == "" {
		t.Skip("DuckDB for Node.js not installed (CQX_DUCKDB_DIR unset; .ci/run sets it)")
	}
	return duck
}

// query runs sql with DuckDB in the archive's directory and returns the
// rows.
func (a *exportDir) query(t *testing.T, duck, sql string) ([]map[string]any, error) {
	t.Helper()
	cmd := exec.Command("node", filepath.Join(duck, "query.mjs"), sql)
	cmd.Dir = a.cwd
	b, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			return nil, fmt.Errorf("%w\n%s", err, ee.Stderr)
		}
		return nil, err
	}
	var rows []map[string]any
	if err := json.Unmarshal(b, &rows); err != nil {
		return nil, fmt.Errorf("%w: %s", err, b)
	}
	return rows, nil
}

// The DuckDB queries of README.md and docs/export.md work on an archive
// whose account has no bookmark yet: every table has a file from the
// first export on. (CI runs the README's first query on the demo's
// archive too.)
func TestTheQueriesWorkOnAnArchiveWithNoBookmarks(t *testing.T) {
	a := newExportDir(t, 0)
	for _, table := range export.TableNames() {
		if files, _ := filepath.Glob(filepath.Join(a.out(), table, "*.parquet")); len(files) != 1 {
			t.Errorf("%s: %d files after the first export, want 1", table, len(files))
		}
	}

	duck := duckDB(t)
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
			if _, err := a.query(t, duck, sql); err != nil {
				t.Errorf("%s: the query fails on an archive with no bookmarks: %v\n%s", doc, err, sql)
			}
		}
	}
	if n < 4 {
		t.Errorf("ran %d queries of README.md and docs/export.md", n)
	}
}

// docs/export.md's query of the bookmarks held now gives the archived
// bookmarks but those whose latest change is a removal: one removed is
// left out, one removed and added back is in.
func TestTheBookmarksHeldNowQueryLeavesOutTheRemoved(t *testing.T) {
	duck := duckDB(t)
	a := newExportDir(t, 5)
	archived := a.sim.Bookmarks("1001")
	removed, restored := archived[1], archived[3]
	a.changeBookmarks(t, "remove", removed, restored)
	a.changeBookmarks(t, "add", restored)
	doc, err := os.ReadFile("../../docs/export.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), "### The bookmarks held now")
	m := sqlBlock.FindStringSubmatch(section)
	if m == nil {
		t.Fatal(`docs/export.md has no query under "The bookmarks held now"`)
	}
	rows, err := a.query(t, duck, m[1])
	if err != nil {
		t.Fatalf("%v\n%s", err, m[1])
	}
	var got []string
	for _, r := range rows {
		got = append(got, fmt.Sprint(r["post_id"]))
	}
	want := slices.DeleteFunc(slices.Clone(archived), func(id string) bool { return id == removed })
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the bookmarks held now are %v, want the archived %v without the removed %s", got, archived, removed)
	}
}

// changeBookmarks runs `bookmarks remove` or `add` of posts.
func (a *exportDir) changeBookmarks(t *testing.T, kind string, posts ...string) {
	t.Helper()
	ids := filepath.Join(t.TempDir(), "ids.txt")
	if err := os.WriteFile(ids, []byte(strings.Join(posts, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a.run(t, "bookmarks", kind, "--spec", a.spec, "--out", a.out(), "--ids", ids, "--yes")
}

// The sandbox demo (README's first command) stores the photos of its
// bookmarks, and README's query of a bookmark with its local files lists
// them: each path is a file of the archive, whole.
func TestTheDemoStoresItsPhotosAndTheREADMEQueryListsThem(t *testing.T) {
	duck := duckDB(t)
	a := &exportDir{cwd: t.TempDir()}
	a.run(t, "export", "--sandbox", "--out", a.out(), "--quiet")
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(text), "A bookmark with its photos, as local files")
	m := sqlBlock.FindStringSubmatch(section)
	if m == nil {
		t.Fatal("README.md has no query of a bookmark with its local files")
	}
	rows, err := a.query(t, duck, m[1])
	if err != nil {
		t.Fatalf("%v\n%s", err, m[1])
	}
	if len(rows) == 0 {
		t.Fatal("the demo's archive lists no bookmark with its local files")
	}
	for _, r := range rows {
		path, _ := r["local_file"].(string)
		data, err := os.ReadFile(filepath.Join(a.cwd, filepath.FromSlash(path)))
		if err != nil {
			t.Fatalf("row %v: %v", r, err)
		}
		sum := sha256.Sum256(data)
		if !strings.Contains(path, hex.EncodeToString(sum[:])) || fmt.Sprint(len(data)) != fmt.Sprint(r["size"]) {
			t.Fatalf("row %v: %s holds %d bytes of another hash", r, path, len(data))
		}
	}
}
