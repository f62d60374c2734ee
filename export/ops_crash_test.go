package export_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/xsim"
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
func TestKill9BookmarksRemove(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns about a hundred processes")
	}
	// Each kill sends up to 8 removals: more than X's 50 per 15 minutes
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
	base := t.TempDir()
	template := filepath.Join(base, "template")
	if c := runChild(t, spec, template, 0, 0); c.killed || c.code != 0 {
		t.Fatal(c.output)
	}
	list := slices.Clone(sim.Bookmarks("1001"))
	remove := []string{list[0], list[1], list[2], list[10], list[20], list[30], list[39]}
	idsFile := filepath.Join(base, "ids.txt")
	if err := os.WriteFile(idsFile, []byte(strings.Join(remove, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	deletes := map[string]int{}
	sim.OnRequest(func(r xsim.RequestInfo) {
		if r.Operation == xsim.OpRemoveBookmark {
			mu.Lock()
			deletes[r.Path[strings.LastIndexByte(r.Path, '/')+1:]]++
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
		clear(deletes)
		mu.Unlock()
	}
	removeCmd := func(dir string) []string {
		return []string{"bookmarks", "remove", "--spec", spec, "--out", dir, "--ids", idsFile, "--yes"}
	}
	sent := func() (total, most int) {
		mu.Lock()
		defer mu.Unlock()
		for _, n := range deletes {
			total, most = total+n, max(most, n)
		}
		return
	}

	probe := filepath.Join(base, "probe")
	copyDir(t, template, probe)
	clean := runCommand(t, removeCmd(probe), 0, 0)
	if clean.killed || clean.code != 0 {
		t.Fatalf("clean run: %s", clean.output)
	}
	if total, _ := sent(); total != len(remove) {
		t.Fatalf("a clean run sent %d DELETEs for %d posts", total, len(remove))
	}
	steps := len(clean.steps)
	kinds := map[string]bool{}
	for k := 1; k <= steps; k++ {
		t.Run(fmt.Sprintf("kill-at-%d", k), func(t *testing.T) {
			reset()
			dir := filepath.Join(base, fmt.Sprint(k))
			copyDir(t, template, dir)
			c := runCommand(t, removeCmd(dir), k, 0)
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
			again := runCommand(t, removeCmd(dir), 0, 0)
			if again.killed || again.code != 0 {
				t.Fatalf("resumed after a kill at %q: %s", at, again.output)
			}
			total, most := sent()
			if most > 2 || total > len(remove)+1 {
				t.Errorf("killed at %q: %d DELETEs for %d posts (%v)", at, total, len(remove), deletes)
			}
			if at != "answer received" && total != len(remove) {
				t.Errorf("killed at %q, where no request was in flight: %d DELETEs for %d posts", at, total, len(remove))
			}
			for _, id := range remove {
				if slices.Contains(sim.Bookmarks("1001"), id) {
					t.Errorf("%s is still bookmarked", id)
				}
			}
			changes := checkChangesOnce(t, dir)
			for _, id := range remove {
				if changes.Latest["1001"][id] != "removed" {
					t.Errorf("the removal of %s is not recorded", id)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, ".ops", "remove", "1001.plan")); err == nil {
				t.Error("the journal of the finished run is left")
			}
			info, err := export.ReadState(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range remove {
				if slices.Contains(info.HeldBookmarks["1001"], id) {
					t.Errorf("the walk memory still holds %s", id)
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
func checkChangesOnce(t *testing.T, dir string) *export.Changes {
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
	ch, err := export.ReadChanges(dir)
	if err != nil {
		t.Fatal(err)
	}
	return ch
}
