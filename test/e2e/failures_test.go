package e2e

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/internal/xsim"
)

// A walk that fails half way leaves the account's state exactly as it was,
// is reported as an error, and shows in x_api_usage; the next sync, with the
// API healthy again, loses nothing.
func TestFailedWalkLeavesStateAndShowsInUsage(t *testing.T) {
	h := newHarness(t, 300)
	h.sync()
	before := h.store.Committed()["x_bookmarks/"+user]
	h.bookmarkNew(60)
	h.sim.OnRequest(func(ri xsim.RequestInfo) {
		if ri.Operation == xsim.OpListBookmarks && ri.Query.Get("pagination_token") != "" {
			h.sim.SetFaults(xsim.Faults{Seed: 1, ServerErrorRate: 1, Operations: []string{xsim.OpListBookmarks}})
		}
	})
	r := h.sync()
	h.sim.OnRequest(nil)
	h.sim.SetFaults(xsim.Faults{})
	if got := h.store.Committed()["x_bookmarks/"+user]; got != before {
		t.Fatal("the failed walk changed the stored state")
	}
	u := r.usage["list_bookmarks"]
	if u["walk_outcomes"] != "failed" || !strings.Contains(u["failure"], "state not advanced") || len(r.errors) == 0 {
		t.Fatalf("failure not reported: usage %v, errors %v", u, r.errors)
	}
	if u["errors"] == "0" || u["requests"] == "0" {
		t.Fatalf("usage does not count the failed requests: %v", u)
	}
	r = h.sync()
	h.mustLoseNothing()
	if r.outcome() != "met_held" {
		t.Fatalf("next sync: %v", r)
	}
}

// One account failing does not stop another.
func TestOneFailedAccountDoesNotStopTheOthers(t *testing.T) {
	h := newHarness(t, 50)
	h.sim.SeedBookmarks("1002", 20)
	h.spec["accounts"] = []map[string]any{
		{"user_id": "1002", "access_token": "not-a-valid-token"},
		{"user_id": user, "access_token": h.sim.IssueToken(user)},
	}
	r := h.sync()
	h.mustLoseNothing()
	if len(r.newRows) != 50 {
		t.Fatalf("healthy account: %v", r)
	}
	if _, ok := h.store.Committed()["x_bookmarks/1002"]; ok {
		t.Fatal("the failed account's state was written")
	}
	if len(r.errors) == 0 {
		t.Fatal("no sync error reported for the failed account")
	}
}

// max_billed_posts stops a walk cleanly, does not advance, and says so.
func TestBilledPostCapStopsWithoutAdvancing(t *testing.T) {
	h := newHarness(t, 500)
	h.spec["planner"] = map[string]any{"max_billed_posts": 200}
	r := h.sync()
	u := r.usage["list_bookmarks"]
	if r.billed != 200 || u["walk_outcomes"] != "stopped_by_budget" || !strings.Contains(u["failure"], "max_billed_posts") {
		t.Fatalf("cap not applied or not reported: %v", r)
	}
	if _, ok := h.store.Committed()["x_bookmarks/"+user]; ok {
		t.Fatal("state advanced after a walk stopped by the cap")
	}
}

// Another app of the same user drains the 15-minute window in the middle of
// a walk. The walk waits for the reset instead of restarting, because a
// restart would bill every post it had already read again.
func TestRateLimitMidWalkWaitsForTheResetInsteadOfRestarting(t *testing.T) {
	h := newHarness(t, 3000)
	other := h.sim.IssueToken(user)
	drained := false
	h.sim.OnRequest(func(ri xsim.RequestInfo) {
		if ri.Operation != xsim.OpListBookmarks || drained || ri.Seq < 5 {
			return
		}
		drained = true
		for range 180 {
			req, _ := http.NewRequest(http.MethodGet, h.sim.URL()+"/2/users/"+user+"/bookmarks?max_results=1", nil)
			req.Header.Set("Authorization", "Bearer "+other)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	})
	r := h.sync()
	h.sim.OnRequest(nil)
	h.mustLoseNothing()
	u := r.usage["list_bookmarks"]
	t.Logf("usage: %v", u)
	// The walk billed each of its posts once: 3000 posts, not 3000 + a restart.
	if len(r.newRows) != 3000 || u["posts_billed"] != "3000" || u["rate_limit_waits"] == "0" {
		t.Fatalf("walk did not wait it out: %v", r)
	}
}

// A folder's membership is replaced only when its walk completed: when the
// walk fails, the membership of the last good sync is emitted again (so a
// destination that deletes stale rows keeps it) and its state is unchanged.
func TestFailedFolderWalkKeepsThePreviousMembership(t *testing.T) {
	h := newHarness(t, 40)
	h.sim.CreateFolder(user, "77", "reading")
	for _, id := range h.sim.Bookmarks(user)[:6] {
		h.sim.AddToFolder(user, "77", id)
	}
	tables := []string{"x_bookmark_folders", "x_api_usage"}
	first := h.folderPosts(h.sync(tables...))
	if len(first) != 6 {
		t.Fatalf("first sync: %d folder posts, want 6", len(first))
	}
	before := h.store.Committed()["x_bookmark_folder_posts/"+user+"/77"]
	h.sim.AddToFolder(user, "77", h.sim.Bookmarks(user)[10])
	h.sim.SetFaults(xsim.Faults{Seed: 1, ServerErrorRate: 1, Operations: []string{xsim.OpGetFolder}})
	r := h.sync(tables...)
	h.sim.SetFaults(xsim.Faults{})
	if got := h.folderPosts(r); !slices.Equal(got, first) {
		t.Fatalf("after a failed walk the folder emitted %v, want the previous membership %v", got, first)
	}
	if h.store.Committed()["x_bookmark_folder_posts/"+user+"/77"] != before {
		t.Fatal("the failed folder walk changed its state")
	}
	if u := r.usage["get_folder"]; u["walk_outcomes"] != "failed" || u["failure"] == "" {
		t.Fatalf("usage does not show the failed folder walk: %v", u)
	}
	if got := h.folderPosts(h.sync(tables...)); len(got) != 7 {
		t.Fatalf("next sync: %d folder posts, want 7", len(got))
	}
}

// An API that refuses field selection (the document leaves it "not shown")
// still gets its posts read: the walk asks again without fields, unbilled.
func TestRefusedFieldSelectionFallsBackToDefaultFields(t *testing.T) {
	h := newHarness(t, 25)
	h.spec["fields"] = map[string]any{"tweet_fields": []string{"created_at", "no_such_field"}}
	r := h.sync()
	h.mustLoseNothing()
	if len(r.newRows) != 25 || r.billed != 25 || r.outcome() != "reached_end" {
		t.Fatalf("sync with a refused field: %v", r)
	}
}
