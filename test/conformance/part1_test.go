package conformance

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// Part 1, L7: "The service lets an application read the list of posts a given
// user has bookmarked (saved)."
func TestListReturnsTheUsersBookmarks(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	want := e.sim.SeedBookmarks(alice, 137)
	e.sim.SeedBookmarks(bob, 20) // someone else's list is not mixed in
	got, requests := walkAll(t, e.client(e.sim.IssueToken(alice)), alice, 25)
	if !slices.Equal(got, want) {
		t.Fatalf("walked %d ids, want the user's %d bookmarks in list order", len(got), len(want))
	}
	if requests != 6 {
		t.Errorf("requests = %d, want 6 (137 posts in pages of 25)", requests)
	}
}

// Part 1, L8: "The list is private to the user who made it. It can be read
// only with a token issued for that user."
func TestListIsReadableOnlyWithATokenIssuedForThatUser(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 10)
	bobs := e.client(e.sim.IssueToken(bob))
	_, _, err := bobs.ListBookmarks(context.Background(), alice, client.ListOptions{})
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || apiErr.Status != 403 || !errors.Is(err, client.ErrForbidden) {
		t.Fatalf("bob reading alice's list: err = %v, want 403 Forbidden", err)
	}
	if n := e.sim.TotalPostsReturned(); n != 0 {
		t.Errorf("%d posts billed for a refused read", n)
	}
	if p, _ := page(t, e.client(e.sim.IssueToken(alice)), alice, 0, ""); len(p.Data) != 10 {
		t.Errorf("alice's own token read %d posts, want 10", len(p.Data))
	}
}

// Part 1, L9 (and Part 2, L28): "The list is returned newest-bookmarked
// first."
func TestListIsNewestBookmarkedFirst(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	var saved []string // in the order the user saved them
	for range 25 {
		id := e.sim.NewPostID()
		if err := e.sim.Bookmark(alice, id); err != nil {
			t.Fatal(err)
		}
		saved = append(saved, id)
		e.clk.Advance(time.Minute)
	}
	p, _ := page(t, e.client(e.sim.IssueToken(alice)), alice, 25, "")
	if got, want := postIDs(p), reversed(saved); !slices.Equal(got, want) {
		t.Fatalf("order = %v, want newest-saved first %v", got, want)
	}
}

// Part 1, L9: "A page of results is requested with `max_results`, and the next
// page with `pagination_token`."
func TestPageSizeIsMaxResultsAndNextPageIsPaginationToken(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	all := e.sim.SeedBookmarks(alice, 20)
	c := e.client(e.sim.IssueToken(alice))
	p1, _ := page(t, c, alice, 7, "")
	if q := e.rec.last().Query; q.Get("max_results") != "7" || q.Has("pagination_token") {
		t.Errorf("first request query = %v", q)
	}
	if !slices.Equal(postIDs(p1), all[:7]) {
		t.Fatalf("page 1 = %v, want %v", postIDs(p1), all[:7])
	}
	p2, _ := page(t, c, alice, 7, p1.Meta.NextToken)
	if q := e.rec.last().Query; q.Get("pagination_token") != p1.Meta.NextToken {
		t.Errorf("second request query = %v, want pagination_token = next_token", q)
	}
	if !slices.Equal(postIDs(p2), all[7:14]) {
		t.Fatalf("page 2 = %v, want %v", postIDs(p2), all[7:14])
	}
}

// Part 1, L10: "Resources are billed, not requests. Each post returned in a
// response is billed once, at the service's post-read rate."
func TestEveryReturnedPostIsBilledOnce(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 237)
	c := e.client(e.sim.IssueToken(alice))
	ids, requests := walkAll(t, c, alice, 10)
	if len(ids) != 237 || len(set(ids)) != 237 {
		t.Fatalf("walked %d ids (%d distinct), want 237", len(ids), len(set(ids)))
	}
	u := e.usage(alice, xsim.OpListBookmarks)
	if u.PostsReturned != 237 || u.Requests != requests || requests != 24 {
		t.Errorf("simulator billed %d posts in %d requests (client sent %d); want 237 in 24", u.PostsReturned, u.Requests, requests)
	}
	if !approx(u.USD, 237*0.005) {
		t.Errorf("simulator USD = %v, want %v", u.USD, 237*0.005)
	}
	m := c.Meter().Usage(alice, client.OpListBookmarks)
	if m.PostsReturned != 237 || m.Requests != 24 || !approx(m.USD, 237*0.005) {
		t.Errorf("client meter = %+v, want 237 posts, 24 requests, USD 1.185", m)
	}
}

// Part 1, L10 (also Part 4.1 rule 4, L79, and Part 8, L150): "Resources are
// billed, not requests." / "Requests themselves are not billed." A request
// that returns no post bills nothing, and failed requests bill nothing.
func TestRequestsAreNotBilled(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.AddUser(alice, "alice") // no bookmarks
	c := e.client(e.sim.IssueToken(alice))
	for range 20 {
		p, resp := page(t, c, alice, 100, "")
		if len(p.Data) != 0 || p.Meta.ResultCount != 0 || resp.PostsReturned != 0 {
			t.Fatalf("empty list returned %d posts", len(p.Data))
		}
	}
	// Failed requests: a token for another user (403), a bad pagination
	// token (400), an unknown user (404).
	e.sim.SeedBookmarks(bob, 50)
	ctx := context.Background()
	_, _, err403 := c.ListBookmarks(ctx, bob, client.ListOptions{})
	_, _, err400 := c.ListBookmarks(ctx, alice, client.ListOptions{PageOptions: client.PageOptions{PaginationToken: "0123456789ABCDEFGHIJKLMN"}})
	_, _, err404 := e.client(e.sim.IssueToken("1003")).ListBookmarks(ctx, "1999", client.ListOptions{})
	if !errors.Is(err403, client.ErrForbidden) || !errors.Is(err400, client.ErrInvalidRequest) || !errors.Is(err404, client.ErrNotFound) {
		t.Fatalf("errors = %v / %v / %v", err403, err400, err404)
	}
	u := e.usage(alice, xsim.OpListBookmarks)
	if u.Requests != 22 || u.PostsReturned != 0 || u.USD != 0 {
		t.Errorf("simulator: %d requests billed %d posts (USD %v); want 22 requests, nothing billed", u.Requests, u.PostsReturned, u.USD)
	}
	if n := e.sim.TotalPostsReturned(); n != 0 {
		t.Errorf("total billed = %d, want 0", n)
	}
	if m := c.Meter().Total(); m.PostsReturned != 0 || m.USD != 0 {
		t.Errorf("client meter billed %d posts, USD %v", m.PostsReturned, m.USD)
	}
}

// Part 1, client behaviour 1, L17: "Post content is immutable. A stored post
// never needs to be fetched again for its content." The same post read at
// different times (and after it was unsaved and saved again) comes back
// byte for byte the same.
func TestPostContentIsImmutable(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	ids := e.sim.SeedBookmarks(alice, 5)
	c := e.client(e.sim.IssueToken(alice))
	opts := client.ListOptions{
		PageOptions: client.PageOptions{MaxResults: 5},
		Fields:      client.Fields{TweetFields: []string{"created_at", "author_id", "lang", "conversation_id", "entities"}},
	}
	read := func() map[string][]byte {
		p, _, err := c.ListBookmarks(context.Background(), alice, opts)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string][]byte{}
		for _, post := range p.Data {
			if post.Text == "" || post.CreatedAt == nil {
				t.Fatalf("post %s lacks text or created_at", post.ID)
			}
			m[post.ID] = bytes.Clone(post.Raw)
		}
		return m
	}
	first := read()
	e.clk.Advance(30 * 24 * time.Hour)
	if err := e.sim.Unbookmark(alice, ids[2]); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.Bookmark(alice, ids[2]); err != nil {
		t.Fatal(err)
	}
	second := read()
	for _, id := range ids {
		if !bytes.Equal(first[id], second[id]) {
			t.Errorf("post %s changed between reads:\n%s\n%s", id, first[id], second[id])
		}
	}
}

// Part 1, client behaviour 3, L19: "Do not store a pagination token between
// runs. Store the identifier of the newest post already seen (a high-water
// mark) and walk from the top until that identifier appears."
func TestHighWaterMarkWalkFindsExactlyTheNewPosts(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 83)
	c := e.client(e.sim.IssueToken(alice))
	run1, _ := walkAll(t, c, alice, 20)
	hwm := run1[0]

	e.clk.Advance(24 * time.Hour)
	added := e.sim.SeedBookmarks(alice, 7) // saved between runs
	e.sim.ResetUsage()

	var fresh []string
	token := ""
	requests := 0
walk:
	for range maxPages {
		p, _ := page(t, c, alice, 5, token)
		requests++
		for _, post := range p.Data {
			if post.ID == hwm {
				break walk
			}
			fresh = append(fresh, post.ID)
		}
		if token = p.Meta.NextToken; token == "" {
			t.Fatal("walked off the end without meeting the high-water mark")
		}
	}
	if !slices.Equal(fresh, added) {
		t.Fatalf("new posts = %v, want %v", fresh, added)
	}
	if u := e.usage(alice, xsim.OpListBookmarks); requests != 2 || u.PostsReturned != 10 {
		t.Errorf("second run: %d requests billed %d posts; want 2 requests, 10 posts", requests, u.PostsReturned)
	}
}

// Part 1, client behaviour 4, L20: "A request with `max_results=1` is a
// complete answer to "is there anything new?". `data[0].id` is the most
// recently bookmarked post, and one post is billed."
func TestMaxResultsOneAnswersAnythingNew(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	hwm := e.sim.SeedBookmarks(alice, 40)[0]
	c := e.client(e.sim.IssueToken(alice))

	// Nothing new: the newest post is the high-water mark.
	p, resp := page(t, c, alice, 1, "")
	if p.Meta.ResultCount != 1 || len(p.Data) != 1 || p.Data[0].ID != hwm || resp.PostsReturned != 1 {
		t.Fatalf("nothing new: got %v (count %d), want [%s]", postIDs(p), p.Meta.ResultCount, hwm)
	}
	// Something new.
	id := e.sim.NewPostID()
	if err := e.sim.Bookmark(alice, id); err != nil {
		t.Fatal(err)
	}
	p, _ = page(t, c, alice, 1, "")
	if len(p.Data) != 1 || p.Data[0].ID != id {
		t.Fatalf("after a new bookmark: got %v, want [%s]", postIDs(p), id)
	}
	if u := e.usage(alice, xsim.OpListBookmarks); u.Requests != 2 || u.PostsReturned != 2 || !approx(u.USD, 2*0.005) {
		t.Errorf("two checks billed %d posts (USD %v) in %d requests; want one post each", u.PostsReturned, u.USD, u.Requests)
	}
}
