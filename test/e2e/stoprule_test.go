package e2e

import (
	"slices"
	"strconv"
	"testing"

	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// The stop rule, case by case, through the plugin's resolver, walk and state
// against the simulator. walk/walk_test.go has the same cases on a bare list.

func TestFirstSyncArchivesTheWholeList(t *testing.T) {
	h := newHarness(t, 1234)
	r := h.sync()
	if len(r.newRows) != 1234 || r.billed != 1234 || r.outcome() != "reached_end" {
		t.Fatalf("first sync: %v", r)
	}
	h.mustLoseNothing()
	if got := h.memory().Held.IDs(); !slices.Equal(got, h.sim.Bookmarks(user)) {
		t.Fatal("state does not hold the list in order")
	}
}

func TestNothingNewBillsTwoPosts(t *testing.T) {
	h := newHarness(t, 300)
	h.sync()
	r := h.sync()
	if len(r.newRows) != 0 || r.billed != 2 || r.requests != 1 || r.outcome() != "met_held" {
		t.Fatalf("second sync: %v", r)
	}
}

// Case (a): the newest held post was un-bookmarked. The run of held posts
// begins one place down, and the post it skips costs one post more.
func TestStopRuleNewestHeldPostUnbookmarked(t *testing.T) {
	h := newHarness(t, 80)
	h.sync()
	newest := h.sim.Bookmarks(user)[0]
	if err := h.sim.Unbookmark(user, newest); err != nil {
		t.Fatal(err)
	}
	added := h.bookmarkNew(3)
	r := h.sync()
	h.mustLoseNothing()
	if len(r.newRows) != 3 || r.billed != 6 {
		t.Fatalf("want 3 new posts for 6 billed (k=3, +2, +1 for the removed post): %v", r)
	}
	if slices.Contains(h.memory().Held.IDs(), newest) {
		t.Fatal("state still holds the removed post")
	}
	// Only the removed post's absence is news; nothing is re-emitted.
	for _, id := range added {
		if h.emitted[id] != 1 {
			t.Fatalf("post %s emitted %d times", id, h.emitted[id])
		}
	}
}

// Case (b): an already held post was re-bookmarked and now sits at the top,
// above posts that are new. Stopping at the first held post would lose them.
func TestStopRuleRebookmarkedHeldPostAboveNewPosts(t *testing.T) {
	h := newHarness(t, 120)
	h.sync()
	added := h.bookmarkNew(4)
	old := h.sim.Bookmarks(user)[50]
	if err := h.sim.Bookmark(user, old); err != nil {
		t.Fatal(err)
	}
	r := h.sync()
	h.mustLoseNothing()
	if len(r.newRows) != 4 || r.billed != 7 {
		t.Fatalf("want the 4 new posts for 7 billed (k=5 above the tail, +2): %v", r)
	}
	if h.emitted[old] != 1 {
		t.Fatalf("re-bookmarked post emitted %d times; content is immutable, once is enough", h.emitted[old])
	}
	if got := h.memory().Held.IDs(); got[0] != old || !slices.Equal(got[1:5], reversed(added)) {
		t.Fatalf("state order %v, want the re-bookmarked post then the new ones", got[:6])
	}
	// The newest held post re-bookmarked above a new one is caught as well.
	h.bookmarkNew(1)
	if err := h.sim.Bookmark(user, h.sim.Bookmarks(user)[1]); err != nil {
		t.Fatal(err)
	}
	h.sync()
	h.mustLoseNothing()
}

// Case (c): several held posts were removed, at the top and deeper down.
// Each removal among the first posts of the tail costs one post more; the
// deeper ones are never seen and cost nothing.
func TestStopRuleSeveralHeldPostsRemoved(t *testing.T) {
	h := newHarness(t, 200)
	h.sync()
	list := h.sim.Bookmarks(user)
	for _, i := range []int{0, 1, 2, 4, 7, 100, 150} {
		if err := h.sim.Unbookmark(user, list[i]); err != nil {
			t.Fatal(err)
		}
	}
	h.bookmarkNew(2)
	r := h.sync()
	h.mustLoseNothing()
	if len(r.newRows) != 2 || r.billed != 9 {
		t.Fatalf("want 2 new posts for 9 billed (k=2, +2, +5 for the removals at 0, 1, 2, 4 and 7): %v", r)
	}
	// Every held post removed, and new ones added: the walk reads to the end.
	for _, id := range h.sim.Bookmarks(user) {
		_ = h.sim.Unbookmark(user, id)
	}
	added := h.bookmarkNew(3)
	r = h.sync()
	h.mustLoseNothing()
	if r.outcome() != "reached_end" || len(r.newRows) != 3 || !slices.Equal(h.memory().Held.IDs(), reversed(added)) {
		t.Fatalf("after removing every held post: %v, state %v", r, h.memory().Held.IDs())
	}
}

// Case (f): posts removed deep in the list, where no walk went, are still
// remembered; saved again one after the other above new posts, they are
// held posts in increasing remembered order, and not the tail.
func TestStopRuleRemovedPostsSavedAgainAboveNewPosts(t *testing.T) {
	h := newHarness(t, 400)
	h.sync()
	list := h.sim.Bookmarks(user)
	removed := []string{list[200], list[201], list[300]} // a thread of two, and one more
	for _, id := range removed {
		if err := h.sim.Unbookmark(user, id); err != nil {
			t.Fatal(err)
		}
	}
	h.bookmarkNew(1)
	h.sync()
	for _, order := range [][]string{{removed[2], removed[0]}, {removed[1], removed[0]}} {
		h.bookmarkNew(30)
		for _, id := range order { // the older first: they keep their old order
			if err := h.sim.Bookmark(user, id); err != nil {
				t.Fatal(err)
			}
		}
		r := h.sync()
		h.mustLoseNothing()
		if len(r.newRows) != 30 {
			t.Fatalf("want the 30 new posts: %v", r)
		}
	}
}

// Case (g): held posts saved again in a burst above new posts, in any
// order, are not the tail.
func TestStopRuleHeldPostsSavedAgainInABurstAboveNewPosts(t *testing.T) {
	h := newHarness(t, 300)
	h.sync()
	list := h.sim.Bookmarks(user)
	h.bookmarkNew(12)
	for _, id := range []string{list[140], list[90], list[91], list[20]} {
		if err := h.sim.Bookmark(user, id); err != nil {
			t.Fatal(err)
		}
	}
	r := h.sync()
	h.mustLoseNothing()
	if len(r.newRows) != 12 {
		t.Fatalf("want the 12 new posts: %v", r)
	}
}

// Case (d): the list is shorter than one page — including empty, and one post.
func TestStopRuleListShorterThanOnePage(t *testing.T) {
	for _, n := range []int{0, 1, 2, 5} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			h := newHarness(t, n)
			if r := h.sync(); len(r.newRows) != n || r.requests != 1 {
				t.Fatalf("first sync: %v", r)
			}
			if r := h.sync(); len(r.newRows) != 0 || r.billed != min(n, 2) {
				t.Fatalf("second sync: %v", r)
			}
			h.bookmarkNew(1)
			if r := h.sync(); len(r.newRows) != 1 || r.billed != min(n+1, 3) {
				t.Fatalf("third sync: %v", r)
			}
			h.mustLoseNothing()
		})
	}
}

// Case (e), posts bookmarked while the walk runs: the list shifts down, the
// walk reads a post twice (billed twice, emitted once) and the next sync
// finds the new post at the top. Nothing is lost.
func TestStopRuleListShiftsDownDuringWalk(t *testing.T) {
	h := newHarness(t, 500)
	h.sync()
	h.bookmarkNew(40)
	var during []string
	h.sim.OnRequest(func(ri xsim.RequestInfo) {
		if ri.Operation == xsim.OpListBookmarks && len(during) < 3 {
			during = append(during, h.sim.NewPostID())
			_ = h.sim.Bookmark(user, during[len(during)-1])
		}
	})
	h.sync()
	h.sim.OnRequest(nil)
	for id, n := range h.emitted {
		if n > 1 {
			t.Fatalf("post %s emitted %d times", id, n)
		}
	}
	h.sync()
	h.mustLoseNothing()
}

// Case (e), a bookmark removed above the read position while the walk runs:
// the list shifts up and the post at the page boundary is skipped. The
// guarantee (docs/walk.md): at most one post per removal, at a page boundary
// of that walk; the next sync finds it unless the posts it reads above it
// confirm a tail, so a removal during a walk is the one way to miss a post.
func TestStopRuleListShiftsUpDuringWalk(t *testing.T) {
	h := newHarness(t, 500)
	h.sync()
	h.bookmarkNew(10)
	removed := false
	h.sim.OnRequest(func(ri xsim.RequestInfo) {
		if ri.Operation == xsim.OpListBookmarks && !removed && ri.Query.Get("pagination_token") != "" {
			removed = true
			_ = h.sim.Unbookmark(user, h.sim.Bookmarks(user)[0])
		}
	})
	h.sync()
	h.sim.OnRequest(nil)
	if m := h.missing(); len(m) > 1 {
		t.Fatalf("one removal during the walk hid %d posts, want at most 1", len(m))
	}
	h.sync()
	h.mustLoseNothing()
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}
