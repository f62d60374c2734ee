package export_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/bookmarks"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/test/synctest"
)

// TestKill9BookmarksRemove kills `cq-source-x bookmarks remove --yes` at
// every step that matters (its journal written, before each request, after
// each answer and before the journal has it, after the journal has it, and
// at each step of recording the removals in the archive), then runs the
// same command again. The resumed run removes what is left and never a
// post twice, but for the one whose request was sent when the process
// died: sending it again is safe, X answers bookmarked:false. After each
// kill the state describes only what is on disk; after the resumed run
// each removal is in x_bookmark_changes exactly once, the walk memory
// forgets the removed posts, and the next export archives every bookmark.
func TestKill9BookmarksRemove(t *testing.T) { testKill9Bookmarks(t, bookmarks.OpRemove) }

// TestKill9BookmarksAdd is TestKill9BookmarksRemove for `bookmarks add
// --yes`, of posts the account no longer holds: the resumed run adds what
// is left, never a post twice but the one in flight (X answers
// bookmarked:true again), each addition is in x_bookmark_changes exactly
// once, and the next export archives every bookmark, the added ones too.
func TestKill9BookmarksAdd(t *testing.T) { testKill9Bookmarks(t, bookmarks.OpAdd) }

func testKill9Bookmarks(t *testing.T, kind string) {
	if testing.Short() {
		t.Skip("spawns about a hundred processes")
	}
	op, change := xsim.OpRemoveBookmark, bookmarks.ChangeRemoved
	if kind == bookmarks.OpAdd {
		op, change = xsim.OpAddBookmark, bookmarks.ChangeAdded
	}
	// Each kill sends up to 8 requests: more than X's 50 per 15 minutes
	// in all (the windows are TestBookmarksRemoveWaitsOutTheWindows').
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 40, folders: 1}}
	tokens := seed(sim, users)
	spec := filepath.Join(t.TempDir(), "spec.yml")
	if err := os.WriteFile(spec, []byte(specYAML(sim.URL(), users, tokens, `["*"]`)), 0o644); err != nil {
		t.Fatal(err)
	}
	all := sim.Bookmarks("1001")
	posts := []string{all[0], all[1], all[2], all[10], all[20], all[30], all[39]}
	if kind == bookmarks.OpAdd {
		for _, id := range posts { // removed in X's app before the export
			sim.Unbookmark("1001", id)
		}
	}
	list := slices.Clone(sim.Bookmarks("1001"))
	base := t.TempDir()
	template := filepath.Join(base, "template")
	if c := runChild(t, spec, template, 0, 0); c.killed || c.code != 0 {
		t.Fatal(c.output)
	}
	idsFile := filepath.Join(base, "ids.txt")
	if err := os.WriteFile(idsFile, []byte(strings.Join(posts, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	requests := map[string]int{}
	sim.OnRequest(func(r xsim.RequestInfo) {
		if r.Operation == op {
			mu.Lock()
			requests[r.PostID]++
			mu.Unlock()
		}
	})
	// reset gives the simulator its list back and forgets the requests.
	reset := func() {
		for _, id := range sim.Bookmarks("1001") {
			sim.Unbookmark("1001", id)
		}
		for i := len(list) - 1; i >= 0; i-- {
			sim.Bookmark("1001", list[i])
		}
		mu.Lock()
		clear(requests)
		mu.Unlock()
	}
	command := func(dir string) []string {
		return []string{"bookmarks", kind, "--spec", spec, "--out", dir, "--ids", idsFile, "--yes"}
	}
	sent := func() (total, most int) {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range requests {
			total, most = total+n, max(most, n)
		}
		return
	}
	done := func(id string) bool { return slices.Contains(sim.Bookmarks("1001"), id) == (kind == bookmarks.OpAdd) }

	probe := filepath.Join(base, "probe")
	copyDir(t, template, probe)
	clean := runCommand(t, command(probe), 0, 0)
	if clean.killed || clean.code != 0 {
		t.Fatalf("clean run: %s", clean.output)
	}
	if total, _ := sent(); total != len(posts) {
		t.Fatalf("a clean run sent %d requests for %d posts", total, len(posts))
	}
	steps := len(clean.steps)
	kinds := map[string]bool{}
	for k := 1; k <= steps; k++ {
		t.Run(fmt.Sprintf("kill-at-%d", k), func(t *testing.T) {
			reset()
			dir := filepath.Join(base, fmt.Sprint(k))
			copyDir(t, template, dir)
			c := runCommand(t, command(dir), k, 0)
			if !c.killed {
				t.Fatalf("not killed at step %d of %d: %s", k, steps, c.output)
			}
			at := c.steps[len(c.steps)-1]
			kinds[at] = true
			checkNotAhead(t, dir, users)
			if _, most := sent(); most > 1 {
				t.Fatalf("killed at %q: a post was sent twice by one run", at)
			}
			checkChangesOnce(t, dir)
			again := runCommand(t, command(dir), 0, 0)
			if again.killed || again.code != 0 {
				t.Fatalf("resumed after a kill at %q: %s", at, again.output)
			}
			total, most := sent()
			if most > 2 || total > len(posts)+1 {
				t.Errorf("killed at %q: %d requests for %d posts (%v)", at, total, len(posts), requests)
			}
			if at != "answer received" && total != len(posts) {
				t.Errorf("killed at %q, where no request was in flight: %d requests for %d posts", at, total, len(posts))
			}
			for _, id := range posts {
				if !done(id) {
					t.Errorf("%s: the %s was not done", id, kind)
				}
			}
			changes := checkChangesOnce(t, dir)
			for _, id := range posts {
				if changes.Latest["1001"][id] != change {
					t.Errorf("%s: the change recorded is %q, want %q", id, changes.Latest["1001"][id], change)
				}
			}
			// Every answer the journal holds is recorded as billed once, the
			// killed run's too; an answer the kill lost is not known.
			if billed := writesBilled(t, dir, op); billed < len(posts) || billed > total {
				t.Errorf("killed at %q: x_api_usage records %d writes billed; X billed %d for %d posts", at, billed, total, len(posts))
			}
			if _, err := os.Stat(filepath.Join(dir, ".ops", kind, "1001.plan")); err == nil {
				t.Error("the journal of the finished run is left")
			}
			if kind == bookmarks.OpRemove {
				info, err := archive.ReadState(dir)
				if err != nil {
					t.Fatal(err)
				}
				for _, id := range posts {
					if slices.Contains(info.HeldBookmarks["1001"], id) {
						t.Errorf("the walk memory still holds %s", id)
					}
				}
			}
			if c := runChild(t, spec, dir, 0, 0); c.killed || c.code != 0 {
				t.Fatalf("export after the resumed run: %s", c.output)
			}
			checkArchive(t, dir, sim, users)
		})
	}
	for _, k := range []string{"journal written", "journal sending", "answer received", "journal answered", "committed", "published x_bookmark_changes"} {
		if !kinds[k] {
			t.Errorf("no kill at %q (%v)", k, kinds)
		}
	}
}

// checkChangesOnce checks that x_bookmark_changes has no (operation, user,
// post) twice, and returns the changes.
func checkChangesOnce(t *testing.T, dir string) *bookmarks.Changes {
	t.Helper()
	rows := rowSet(t, parquetFiles(t, dir, "x_bookmark_changes"))
	seen := map[string]int{}
	for row, n := range rows {
		f := strings.Split(row, "\x00")
		// _cq_sync_time, _cq_source_name, operation_id, user_id, post_id, ...
		seen[f[2]+"/"+f[3]+"/"+f[4]] += n
	}
	for k, n := range seen {
		if n > 1 {
			t.Errorf("x_bookmark_changes has %s %d times", k, n)
		}
	}
	ch, err := bookmarks.ReadChanges(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}

// writesBilled adds up the writes_billed of the archive's x_api_usage rows
// of op.
func writesBilled(t *testing.T, dir, op string) int {
	t.Helper()
	n := 0
	for _, path := range parquetFiles(t, dir, "x_api_usage") {
		_, recs, _ := synctest.ReadParquet(t, path)
		for _, r := range recs {
			ops, writes := r.Column(r.Schema().FieldIndices("operation")[0]), r.Column(r.Schema().FieldIndices("writes_billed")[0])
			for i := range int(r.NumRows()) {
				if ops.ValueStr(i) == op {
					w, _ := strconv.Atoi(writes.ValueStr(i))
					n += w
				}
			}
		}
	}
	return n
}
