package conformance

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// Part 3, rule 1, L53: "When the user bookmarks a post, that post becomes the
// first element and every other element moves down one place." Bookmarking
// a post that is already in the list moves it to the top.
func TestBookmarkMovesPostToTop(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	old := e.sim.SeedBookmarks(alice, 12)
	c := e.client(e.sim.IssueToken(alice))
	ctx := context.Background()

	id := e.sim.NewPostID()
	if ok, _, err := c.AddBookmark(ctx, alice, id); err != nil || !ok {
		t.Fatalf("AddBookmark = %v, %v", ok, err)
	}
	p, _ := page(t, c, alice, 100, "")
	if want := append([]string{id}, old...); !slices.Equal(postIDs(p), want) {
		t.Fatalf("after bookmarking %s: %v, want %v", id, postIDs(p), want)
	}

	// A post already in the list, bookmarked again, moves to the top.
	e.clk.Advance(time.Hour)
	again := old[6]
	if ok, _, err := c.AddBookmark(ctx, alice, again); err != nil || !ok {
		t.Fatalf("AddBookmark(again) = %v, %v", ok, err)
	}
	p, _ = page(t, c, alice, 100, "")
	rest := slices.DeleteFunc(append([]string{id}, old...), func(s string) bool { return s == again })
	if want := append([]string{again}, rest...); !slices.Equal(postIDs(p), want) {
		t.Fatalf("after re-bookmarking %s: %v, want %v", again, postIDs(p), want)
	}
}

// Part 3, rule 2, L54: "When the user removes a bookmark, every element below
// it moves up one place."
func TestRemovalShiftsRestUp(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	old := e.sim.SeedBookmarks(alice, 12)
	c := e.client(e.sim.IssueToken(alice))
	if ok, _, err := c.RemoveBookmark(context.Background(), alice, old[4]); err != nil || ok {
		t.Fatalf("RemoveBookmark = %v, %v", ok, err)
	}
	p, _ := page(t, c, alice, 100, "")
	want := append(slices.Clone(old[:4]), old[5:]...)
	if !slices.Equal(postIDs(p), want) {
		t.Fatalf("after removing the 5th: %v, want %v", postIDs(p), want)
	}
	// On a page boundary: what was 6th is now 5th, the last of a page of 5.
	p5, _ := page(t, c, alice, 5, "")
	if got := p5.Data[4].ID; got != old[5] {
		t.Errorf("5th element = %s, want %s (moved up one place)", got, old[5])
	}
}

// Part 3, rule 3, L55: "The order is by bookmark time, not post time and not
// post identifier. A post made years ago is first if it was bookmarked last."
func TestOrderIsByBookmarkTimeNotPostTimeOrID(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 10)
	e.clk.Advance(time.Hour)
	// A post with a tiny id, made in 2009, saved last.
	ancient := xsim.Post{ID: "20", Text: "just setting up my twttr", AuthorID: "12", CreatedAt: time.Date(2009, 3, 21, 20, 50, 14, 0, time.UTC)}
	e.sim.PutPost(ancient)
	if err := e.sim.Bookmark(alice, ancient.ID); err != nil {
		t.Fatal(err)
	}
	c := e.client(e.sim.IssueToken(alice))
	p, _, err := c.ListBookmarks(context.Background(), alice, client.ListOptions{
		PageOptions: client.PageOptions{MaxResults: 11},
		Fields:      client.Fields{TweetFields: []string{"created_at"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.Data[0].ID != ancient.ID || p.Data[0].CreatedAt == nil || !p.Data[0].CreatedAt.Equal(ancient.CreatedAt) {
		t.Fatalf("first = %s (created %v), want the 2009 post %s", p.Data[0].ID, p.Data[0].CreatedAt, ancient.ID)
	}
	ids := postIDs(p)
	byTime := slices.IsSortedFunc(p.Data, func(a, b client.Post) int { return b.CreatedAt.Compare(*a.CreatedAt) })
	byID := slices.IsSortedFunc(ids, func(a, b string) int {
		if len(a) != len(b) {
			return len(b) - len(a)
		}
		return strings.Compare(b, a)
	})
	if byTime || byID {
		t.Errorf("list happens to be sorted by post time (%v) or id (%v); the test proves nothing", byTime, byID)
	}
	// And the list order is exactly the bookmark times, newest first.
	for i := 1; i < len(ids); i++ {
		a, _ := e.sim.BookmarkedAt(alice, ids[i-1])
		b, _ := e.sim.BookmarkedAt(alice, ids[i])
		if !a.After(b) {
			t.Errorf("%s (saved %v) listed before %s (saved %v)", ids[i-1], a, ids[i], b)
		}
	}
}
