package e2e

import (
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

func (h *harness) setCap(n int) {
	h.spec["planner"] = map[string]any{"max_billed_posts": n}
}

func mustSay(t *testing.T, what, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("%s %q lacks %q", what, got, w)
		}
	}
}

// A first sync of 3,000 bookmarks with max_billed_posts 100 reads 100 and
// stops; each sync reads from the top again (tokens are never kept), so the
// next ones, with the same cap, would bill the same 100 posts and stop at the
// same place forever. They do not start: they bill nothing and say what the
// first sync needs. With the cap raised once the first sync completes, and
// with it back at 100 the incremental syncs go on.
func TestFirstSyncStoppedByTheCapIsNotBilledAgain(t *testing.T) {
	h := newHarness(t, 3000)
	h.setCap(100)
	r := h.sync()
	if r.billed != 100 || len(r.newRows) != 100 || r.outcome() != "stopped_by_budget" {
		t.Fatalf("capped first sync: %v", r)
	}
	mustSay(t, "failure", r.usage["list_bookmarks"]["failure"], "user:1001: bookmarks walk stopped at the billed-post cap",
		"planner.max_billed_posts: 100", "after 100 billed posts", "before reaching the end of the list",
		"raise planner.max_billed_posts once, to 0 (no cap) or above 100")

	for range 2 {
		r = h.sync()
		if r.billed != 0 || r.requests != 0 || len(r.newRows) != 0 {
			t.Fatalf("a sync that cannot get past the capped one billed %d posts in %d requests", r.billed, r.requests)
		}
		u := r.usage["list_bookmarks"]
		if u["walk_outcomes"] != "stopped_by_budget" || len(r.errors) == 0 {
			t.Fatalf("refused walk not reported: %v", r)
		}
		mustSay(t, "failure", u["failure"], "user:1001: bookmarks walk not started, nothing billed",
			"stopped at the billed-post cap (planner.max_billed_posts: 100) after 100 billed posts", "with the cap at 100",
			"raise planner.max_billed_posts once")
	}

	h.setCap(0)
	r = h.sync()
	h.mustLoseNothing()
	if r.outcome() != "reached_end" || r.billed != 3000 {
		t.Fatalf("first sync with the cap raised: %v", r)
	}
	if v := h.store.Committed()["x_bookmarks/"+user+"/capped"]; v != "" {
		t.Fatalf("the cap record outlived the walk that got past it: %s", v)
	}
	h.setCap(100)
	h.bookmarkNew(5)
	r = h.sync()
	h.mustLoseNothing()
	if r.outcome() != "met_held" || r.billed > 10 {
		t.Fatalf("incremental sync under the cap: %v", r)
	}
}

// An incremental walk that finds more new posts than the cap lets it read is
// in the same trap, and is handled the same way.
func TestIncrementalSyncStoppedByTheCapIsNotBilledAgain(t *testing.T) {
	h := newHarness(t, 300)
	h.sync()
	h.bookmarkNew(150)
	h.setCap(100)
	r := h.sync()
	if r.billed != 100 || r.outcome() != "stopped_by_budget" {
		t.Fatalf("capped incremental sync: %v", r)
	}
	mustSay(t, "failure", r.usage["list_bookmarks"]["failure"], "before reaching the posts already archived")
	r = h.sync()
	if r.billed != 0 || r.requests != 0 {
		t.Fatalf("a sync that cannot get past the capped one billed %d posts in %d requests", r.billed, r.requests)
	}
	mustSay(t, "failure", r.usage["list_bookmarks"]["failure"], "not started, nothing billed", "before reaching the posts already archived",
		"above 100 plus the new posts below them and any saved since")
	// A cap above what the last walk billed may get past it: it runs.
	h.setCap(200)
	r = h.sync()
	h.mustLoseNothing()
	if r.outcome() != "met_held" {
		t.Fatalf("sync with the cap raised: %v", r)
	}
}

// A folder read for the first time under a cap smaller than the folder is
// in the same trap (its walk stops, and its members are emitted only once a
// walk ends cleanly), and is handled the same way.
func TestFolderWalkStoppedByTheCapIsNotBilledAgain(t *testing.T) {
	h := newHarness(t, 200)
	h.sim.CreateFolder(user, "77", "reading")
	for _, id := range h.sim.Bookmarks(user)[:150] {
		h.sim.AddToFolder(user, "77", id)
	}
	h.setCap(100)
	tables := []string{"x_bookmark_folders", "x_api_usage"}
	folderBilled := func() int { return h.sim.Usage(user)[xsim.OpGetFolder].PostsReturned }
	r := h.sync(tables...)
	if b := folderBilled(); b != 100 {
		t.Fatalf("capped folder walk billed %d", b)
	}
	mustSay(t, "failure", r.usage["get_folder"]["failure"], "folder 77 walk stopped at the billed-post cap")
	r = h.sync(tables...)
	if b := folderBilled(); b != 100 {
		t.Fatalf("a folder walk that cannot get past the capped one billed %d posts more", b-100)
	}
	mustSay(t, "failure", r.usage["get_folder"]["failure"], "folder 77 walk not started, nothing billed")
	h.setCap(0)
	if got := len(h.folderPosts(h.sync(tables...))); got != 150 {
		t.Fatalf("folder with the cap raised: %d members, want 150", got)
	}
}
