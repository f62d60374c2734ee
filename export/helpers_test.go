package export_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/test/synctest"
)

// demoUser is an account of the test simulator.
type demoUser struct {
	id        string
	bookmarks int
	folders   int // each folder holds every 5th bookmark up to 20
}

// seed fills the simulator and returns the tokens by user id.
func seed(sim *xsim.Server, users []demoUser) map[string]string {
	tokens := map[string]string{}
	for _, u := range users {
		ids := sim.SeedBookmarks(u.id, u.bookmarks)
		for f := 0; f < u.folders; f++ {
			fid := fmt.Sprintf("%s%d", u.id, f+1)
			sim.CreateFolder(u.id, fid, fmt.Sprintf("folder %d", f+1))
			for i := len(ids) - 1 - f; i >= 0; i -= 5 {
				if len(sim.FolderPosts(u.id, fid)) < 20 {
					sim.AddToFolder(u.id, fid, ids[i])
				}
			}
		}
		tokens[u.id] = sim.IssueToken(u.id)
	}
	return tokens
}

// specYAML is a source spec for the simulator; tokens maps user ids to
// tokens in the order of users.
func specYAML(baseURL string, users []demoUser, tokens map[string]string, tables string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `kind: source
spec:
  name: x
  path: ./cq-source-x
  registry: local
  version: v0.0.0
  tables: %s
  destinations: ["file"]
  spec:
    base_url: %s
    max_attempts: 1
    accounts:
`, tables, baseURL)
	for _, u := range users {
		fmt.Fprintf(&b, "      - user_id: %q\n        access_token: %q\n", u.id, tokens[u.id])
	}
	return b.String()
}

// parquetFiles lists DIR/<table>/*.parquet in name order.
func parquetFiles(t testing.TB, dir, table string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, table, "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	return files
}

// bookmarkKeys counts the (user_id, post_id) pairs in the given files.
func bookmarkKeys(t testing.TB, files []string) map[[2]string]int {
	t.Helper()
	out := map[[2]string]int{}
	for _, path := range files {
		sc, recs, _ := synctest.ReadParquet(t, path)
		ui, pi := sc.FieldIndices("user_id"), sc.FieldIndices("post_id")
		if len(ui) != 1 || len(pi) != 1 {
			t.Fatalf("%s: no user_id/post_id", path)
		}
		for _, r := range recs {
			users, posts := r.Column(ui[0]).(*array.String), r.Column(pi[0]).(*array.String)
			for i := 0; i < int(r.NumRows()); i++ {
				out[[2]string{users.Value(i), posts.Value(i)}]++
			}
			r.Release()
		}
	}
	return out
}

// checkArchive checks DIR after a completed run: no (user_id, post_id)
// twice across DIR/x_bookmarks/*.parquet, every current bookmark of every
// user present, nothing left staged.
func checkArchive(t testing.TB, dir string, sim *xsim.Server, users []demoUser) map[[2]string]int {
	t.Helper()
	keys := bookmarkKeys(t, parquetFiles(t, dir, "x_bookmarks"))
	for k, n := range keys {
		if n > 1 {
			t.Errorf("(user %s, post %s) is in the files %d times", k[0], k[1], n)
		}
	}
	for _, u := range users {
		missing := 0
		for _, id := range sim.Bookmarks(u.id) {
			if keys[[2]string{u.id, id}] == 0 {
				missing++
				if missing < 4 {
					t.Errorf("user %s: bookmark %s is in no file", u.id, id)
				}
			}
		}
		if missing > 0 {
			t.Errorf("user %s: %d of %d bookmarks missing", u.id, missing, len(sim.Bookmarks(u.id)))
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, ".staging")); len(entries) > 0 {
		t.Errorf("staging not empty after a completed run: %v", entries)
	}
	return keys
}
