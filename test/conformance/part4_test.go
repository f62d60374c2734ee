package conformance

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// Part 4, L59: "All operations act on the user named by `:id` and need a
// token issued for that user (see Authentication)." Each of the five
// operations, with a token for another user, is refused with 403 and changes
// and bills nothing; with the path user's own token it works on that user.
func TestEveryOperationActsOnThePathUserWithTheirOwnToken(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	posts := e.sim.SeedBookmarks(alice, 10)
	e.sim.CreateFolder(alice, "77", "Reading")
	e.sim.AddToFolder(alice, "77", posts[0])
	e.sim.AddUser(bob, "bob")
	bobs := e.client(e.sim.IssueToken(bob))
	alices := e.client(e.sim.IssueToken(alice))
	ctx := context.Background()
	newPost := e.sim.NewPostID()

	ops := []struct {
		name string
		call func(c *client.Client) error
	}{
		{"list", func(c *client.Client) error {
			_, _, err := c.ListBookmarks(ctx, alice, client.ListOptions{})
			return err
		}},
		{"folders", func(c *client.Client) error { _, _, err := c.ListFolders(ctx, alice, client.PageOptions{}); return err }},
		{"folder", func(c *client.Client) error {
			_, _, err := c.GetFolder(ctx, alice, "77", client.PageOptions{})
			return err
		}},
		{"add", func(c *client.Client) error { _, _, err := c.AddBookmark(ctx, alice, newPost); return err }},
		{"remove", func(c *client.Client) error { _, _, err := c.RemoveBookmark(ctx, alice, posts[9]); return err }},
	}
	for _, op := range ops {
		if err := op.call(bobs); !errors.Is(err, client.ErrForbidden) {
			t.Errorf("%s with bob's token on alice's path: err = %v, want 403", op.name, err)
		}
	}
	if got := e.sim.Bookmarks(alice); !slices.Equal(got, posts) {
		t.Errorf("bob's refused calls changed alice's list: %v", got)
	}
	if n := e.sim.TotalPostsReturned(); n != 0 {
		t.Errorf("refused calls billed %d posts", n)
	}
	for _, op := range ops {
		if err := op.call(alices); err != nil {
			t.Errorf("%s with alice's token: %v", op.name, err)
		}
	}
	if got := e.sim.Bookmarks(alice); len(got) != 10 || got[0] != newPost || slices.Contains(got, posts[9]) {
		t.Errorf("alice's own calls: list = %v", got)
	}
}

// Part 4.1, L63: "`GET {base_url}/2/users/:id/bookmarks`", and Part 4.2,
// L91-94: the folder list, folder read, add and remove paths and methods.
func TestOperationsUseTheDocumentedMethodsAndPaths(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	posts := e.sim.SeedBookmarks(alice, 3)
	e.sim.AddToFolder(alice, "77", posts[0])
	c := e.client(e.sim.IssueToken(alice))
	ctx := context.Background()
	newPost := e.sim.NewPostID()
	checks := []struct {
		call         func() error
		method, path string
	}{
		{func() error { _, _, err := c.ListBookmarks(ctx, alice, client.ListOptions{}); return err }, "GET", "/2/users/1001/bookmarks"},
		{func() error { _, _, err := c.ListFolders(ctx, alice, client.PageOptions{}); return err }, "GET", "/2/users/1001/bookmarks/folders"},
		{func() error { _, _, err := c.GetFolder(ctx, alice, "77", client.PageOptions{}); return err }, "GET", "/2/users/1001/bookmarks/folders/77"},
		{func() error { _, _, err := c.AddBookmark(ctx, alice, newPost); return err }, "POST", "/2/users/1001/bookmarks"},
		{func() error { _, _, err := c.RemoveBookmark(ctx, alice, posts[1]); return err }, "DELETE", "/2/users/1001/bookmarks/" + posts[1]},
	}
	for _, ch := range checks {
		if err := ch.call(); err != nil {
			t.Fatalf("%s %s: %v", ch.method, ch.path, err)
		}
		if got := e.rec.last(); got.Method != ch.method || got.Path != ch.path {
			t.Errorf("sent %s %s, want %s %s", got.Method, got.Path, ch.method, ch.path)
		}
	}
}

// Part 4.1, L69 (and Part 8, L142-144): "`max_results` | integer | no | 1 to
// 100; default 10 | Page size".
func TestMaxResultsIsOneTo100AndDefaultsTo10(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	all := e.sim.SeedBookmarks(alice, 150)
	token := e.sim.IssueToken(alice)
	c := e.client(token)

	p, _ := page(t, c, alice, 0, "") // 0: the parameter is left out
	if e.rec.last().Query.Has("max_results") || !slices.Equal(postIDs(p), all[:10]) {
		t.Errorf("default page: sent %v, got %d posts; want no max_results and 10 posts", e.rec.last().Query, len(p.Data))
	}
	for _, n := range []int{1, 100} {
		if p, _ := page(t, c, alice, n, ""); !slices.Equal(postIDs(p), all[:n]) {
			t.Errorf("max_results=%d returned %d posts", n, len(p.Data))
		}
	}

	// Out of range: the client refuses before sending ...
	sent := e.usage(alice, xsim.OpListBookmarks).Requests
	for _, n := range []int{101, -1} {
		_, _, err := c.ListBookmarks(context.Background(), alice, client.ListOptions{PageOptions: client.PageOptions{MaxResults: n}})
		var in *client.InputError
		if !errors.As(err, &in) || in.Parameter != "max_results" {
			t.Errorf("max_results=%d: err = %v, want an InputError", n, err)
		}
	}
	if now := e.usage(alice, xsim.OpListBookmarks).Requests; now != sent {
		t.Errorf("out-of-range max_results was sent (%d requests)", now-sent)
	}
	// ... and the server answers 400 invalid-request (facts: "400 invalid
	// request (`type` ends `/invalid-request`), e.g. `max_results` out of range").
	for _, v := range []string{"0", "101"} {
		status, _, body := e.rawGet("/2/users/"+alice+"/bookmarks?max_results="+v, token)
		typ, _ := jsonObject(t, body)["type"].(string)
		if status != 400 || !strings.HasSuffix(typ, "/invalid-request") {
			t.Errorf("max_results=%s: %d %s", v, status, body)
		}
	}
}

// Part 4.1, L70: "`pagination_token` | [...] | a `next_token` or
// `previous_token` value from an earlier response of the same walk | Selects
// the page to return". A token of the bookmark list does not select a page of
// a folder.
func TestPaginationTokenSelectsPagesOfItsOwnWalkOnly(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	posts := e.sim.SeedBookmarks(alice, 30)
	for _, id := range posts {
		e.sim.AddToFolder(alice, "77", id)
	}
	c := e.client(e.sim.IssueToken(alice))
	p, _ := page(t, c, alice, 10, "")
	_, _, err := c.GetFolder(context.Background(), alice, "77", client.PageOptions{MaxResults: 10, PaginationToken: p.Meta.NextToken})
	if !errors.Is(err, client.ErrInvalidRequest) {
		t.Errorf("list token on a folder: err = %v, want 400", err)
	}
	p2, _ := page(t, c, alice, 10, p.Meta.NextToken)
	if !slices.Equal(postIDs(p2), posts[10:20]) {
		t.Errorf("next_token selected %v, want %v", postIDs(p2), posts[10:20])
	}
}

// Part 4.1, rule 1, L76: "Results are ordered most recently bookmarked
// first." Across pages, with bookmarks made at different times and some
// posts re-saved.
func TestResultsAreMostRecentlyBookmarkedFirstAcrossPages(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	ids := e.sim.SeedBookmarks(alice, 40)
	for i := 0; i < 40; i += 3 { // re-save every third post, an hour apart
		e.clk.Advance(time.Hour)
		if err := e.sim.Bookmark(alice, ids[i]); err != nil {
			t.Fatal(err)
		}
	}
	got, _ := walkAll(t, e.client(e.sim.IssueToken(alice)), alice, 6)
	if len(got) != 40 {
		t.Fatalf("walked %d posts, want 40", len(got))
	}
	for i := 1; i < len(got); i++ {
		a, _ := e.sim.BookmarkedAt(alice, got[i-1])
		b, _ := e.sim.BookmarkedAt(alice, got[i])
		if !a.After(b) {
			t.Fatalf("position %d (saved %v) before position %d (saved %v)", i-1, a, i, b)
		}
	}
	if got[0] != ids[39] {
		t.Errorf("first = %s, want the last re-saved post %s", got[0], ids[39])
	}
}

// Part 4.1, rule 2, L77: "When `max_results=1`, `meta.result_count` is 1 and
// `data[0].id` is the newest saved post, if the user has any bookmark."
func TestMaxResultsOneGivesTheNewestSavedPost(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.AddUser(alice, "alice")
	c := e.client(e.sim.IssueToken(alice))
	p, _ := page(t, c, alice, 1, "")
	if p.Meta.ResultCount != 0 || len(p.Data) != 0 {
		t.Errorf("no bookmarks: result_count %d, data %v; want 0 and none", p.Meta.ResultCount, postIDs(p))
	}
	newest := e.sim.SeedBookmarks(alice, 12)[0]
	p, _ = page(t, c, alice, 1, "")
	if p.Meta.ResultCount != 1 || len(p.Data) != 1 || p.Data[0].ID != newest {
		t.Errorf("result_count %d, data %v; want 1 and [%s]", p.Meta.ResultCount, postIDs(p), newest)
	}
}

// Part 4.1, rule 3, L78: "A response with no `meta.next_token` is the last
// page of the walk." Following next_token until it is absent collects every
// bookmark, with no empty page at the end.
func TestResponseWithoutNextTokenIsTheLastPage(t *testing.T) {
	for _, tc := range []struct{ n, p int }{{100, 10}, {101, 10}, {1, 1}, {250, 100}} {
		e := newEnv(t, xsim.Options{})
		want := e.sim.SeedBookmarks(alice, tc.n)
		got, requests := walkAll(t, e.client(e.sim.IssueToken(alice)), alice, tc.p)
		if !slices.Equal(got, want) {
			t.Errorf("n=%d p=%d: walked %d posts, want all %d", tc.n, tc.p, len(got), tc.n)
		}
		if wantReq := (tc.n + tc.p - 1) / tc.p; requests != wantReq {
			t.Errorf("n=%d p=%d: %d requests, want %d (no trailing empty page)", tc.n, tc.p, requests, wantReq)
		}
	}
}

// Part 4.1, rule 4, L79: "Walking pages of size p to collect k new posts
// bills (floor(k/p)+1) x p resources, so the over-read is p - (k mod p)
// resources." Checked against the simulator's meter and the client's.
func TestOverReadIsPageSizeMinusKModP(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	user := 2000
	for _, p := range []int{1, 5, 10, 100} {
		for _, k := range []int{0, 1, 4, 5, 7, 23, 100, 250} {
			if p == 1 && k > 100 {
				continue // 251 requests: covered by the other page sizes
			}
			user++
			id := fmt.Sprint(user)
			held := set(e.sim.SeedBookmarks(id, 100)) // at least one full page of held posts
			added := e.sim.SeedBookmarks(id, k)
			c := e.client(e.sim.IssueToken(id))
			fresh, requests := walkToHeld(t, c, id, p, held)
			if !slices.Equal(fresh, added) {
				t.Fatalf("p=%d k=%d: collected %d new posts, want %d", p, k, len(fresh), k)
			}
			wantBilled := (k/p + 1) * p
			billed := e.usage(id, xsim.OpListBookmarks).PostsReturned
			if billed != wantBilled || billed-k != p-k%p {
				t.Errorf("p=%d k=%d: billed %d (over-read %d), want (floor(k/p)+1)*p = %d (over-read %d)",
					p, k, billed, billed-k, wantBilled, p-k%p)
			}
			if requests != k/p+1 {
				t.Errorf("p=%d k=%d: %d requests, want %d", p, k, requests, k/p+1)
			}
			if m := c.Meter().Usage(id, client.OpListBookmarks); m.PostsReturned != wantBilled || !approx(m.USD, float64(wantBilled)*0.005) {
				t.Errorf("p=%d k=%d: client meter %d posts, USD %v; want %d", p, k, m.PostsReturned, m.USD, wantBilled)
			}
		}
	}
}

// Part 4.1, rule 6, L81: "A client should stop walking at the first post
// identifier it already holds. Everything beyond it is already stored."
// Between two runs the user saves new posts and removes some held ones; the
// walk that stops at the first held post has collected everything new, and
// walking on would find nothing that is not held.
func TestStopAtFirstHeldPostMissesNothing(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	c := e.client(e.sim.IssueToken(alice))
	e.sim.SeedBookmarks(alice, 60)
	run1, _ := walkAll(t, c, alice, 100)
	held := set(run1)

	e.clk.Advance(24 * time.Hour)
	for _, i := range []int{0, 1, 17, 59} { // unsaved, the newest held one among them
		if err := e.sim.Unbookmark(alice, run1[i]); err != nil {
			t.Fatal(err)
		}
	}
	added := e.sim.SeedBookmarks(alice, 13)
	fresh, _ := walkToHeld(t, c, alice, 10, held)
	if !slices.Equal(fresh, added) {
		t.Fatalf("collected %v, want the 13 new posts %v", fresh, added)
	}
	rest, _ := walkAll(t, c, alice, 100)
	for _, id := range rest[len(added):] {
		if !held[id] {
			t.Errorf("post %s beyond the first held post is not held", id)
		}
	}
}

// Part 4.1, rule 6, L81, its limit: the rule assumes held posts never move
// up. A held post the user saves again (Part 3 rule 1, L53) becomes the
// first element, so a walk that stops at it misses the posts saved between
// the runs before it. This test pins that behaviour of the plain rule; a
// client that must not miss them needs more than the rule (the walk package
// handles it).
func TestStopAtFirstHeldPostMissesPostsSavedBeforeAReSavedHeldPost(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	c := e.client(e.sim.IssueToken(alice))
	e.sim.SeedBookmarks(alice, 30)
	run1, _ := walkAll(t, c, alice, 100)
	held := set(run1)

	e.clk.Advance(24 * time.Hour)
	added := e.sim.SeedBookmarks(alice, 4)
	e.clk.Advance(time.Minute)
	if err := e.sim.Bookmark(alice, run1[20]); err != nil { // re-saved after the new ones
		t.Fatal(err)
	}
	fresh, requests := walkToHeld(t, c, alice, 10, held)
	if len(fresh) != 0 || requests != 1 {
		t.Fatalf("the plain rule collected %v in %d requests; want nothing in 1 (stopped at the re-saved post)", fresh, requests)
	}
	top, _ := page(t, c, alice, 5, "")
	if want := append([]string{run1[20]}, added...); !slices.Equal(postIDs(top), want) {
		t.Fatalf("top of the list = %v, want %v", postIDs(top), want)
	}
}

// Part 4.1, L83: "Expansion and field-selection parameters of this operation:
// not shown." The facts: `tweet.fields`, `expansions` (`author_id`, ...);
// "Expanded objects come back under `includes`".
func TestFieldSelectionAndExpansions(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 8)
	c := e.client(e.sim.IssueToken(alice))
	p, _, err := c.ListBookmarks(context.Background(), alice, client.ListOptions{
		PageOptions: client.PageOptions{MaxResults: 8},
		Fields: client.Fields{
			TweetFields: []string{"created_at", "author_id", "lang", "public_metrics"},
			Expansions:  []string{"author_id"},
			UserFields:  []string{"username"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if q := e.rec.last().Query; q.Get("tweet.fields") != "created_at,author_id,lang,public_metrics" || q.Get("expansions") != "author_id" {
		t.Errorf("query = %v", q)
	}
	users := p.Expanded.Users
	for _, post := range p.Data {
		if post.CreatedAt == nil || post.AuthorID == "" || post.Lang == "" || post.PublicMetrics == nil {
			t.Errorf("post %s lacks a selected field: %s", post.ID, post.Raw)
		}
		if _, ok := users[post.AuthorID]; !ok {
			t.Errorf("author %s of post %s not in includes.users", post.AuthorID, post.ID)
		}
	}
	// Without selection, none of them.
	p, _ = page(t, c, alice, 8, "")
	if p.Data[0].CreatedAt != nil || p.Data[0].AuthorID != "" || len(p.Includes.Users) != 0 {
		t.Errorf("unselected fields returned: %s", p.Data[0].Raw)
	}
}

// Facts (for Part 4.1, L83, and Part 7, L122): "A 200 may carry `errors`
// (partial errors [...]) beside `data`: keep the data, record the errors."
// Asking for non_public_metrics on others' posts gives one such error per post.
func TestPartialErrorsInA200AreKeptBesideData(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	want := e.sim.SeedBookmarks(alice, 4)
	c := e.client(e.sim.IssueToken(alice))
	p, resp, err := c.ListBookmarks(context.Background(), alice, client.ListOptions{
		PageOptions: client.PageOptions{MaxResults: 4},
		Fields:      client.Fields{TweetFields: []string{"non_public_metrics"}},
	})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("err = %v", err)
	}
	if !slices.Equal(postIDs(p), want) {
		t.Errorf("data = %v, want %v", postIDs(p), want)
	}
	if len(p.Errors) != 4 {
		t.Fatalf("%d partial errors, want 4", len(p.Errors))
	}
	for i, pe := range p.Errors {
		if pe.Title != "Field Authorization Error" || pe.ResourceID != want[i] || pe.ResourceType != "tweet" {
			t.Errorf("partial error %d = %+v", i, pe)
		}
	}
	if u := e.usage(alice, xsim.OpListBookmarks); u.PostsReturned != 4 {
		t.Errorf("billed %d, want 4 (the data was returned)", u.PostsReturned)
	}
}

// Part 4.2, L91: "GET `{base_url}/2/users/:id/bookmarks/folders` | List the
// user's bookmark folders", and Part 2, L45 (folder fields "not shown"; the
// facts: `{"data":[{"id":"...","name":"..."}],"meta":{"result_count":N,
// "next_token":"..."}}`, `max_results` and `pagination_token`).
func TestListFoldersReturnsIDAndNamePaginated(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	want := []client.Folder{{ID: "501", Name: "Recipes"}, {ID: "502", Name: "Go"}, {ID: "503", Name: "Later"}}
	for _, f := range want {
		e.sim.CreateFolder(alice, f.ID, f.Name)
	}
	c := e.client(e.sim.IssueToken(alice))
	ctx := context.Background()
	var got []client.Folder
	next := ""
	for range maxPages {
		p, _, err := c.ListFolders(ctx, alice, client.PageOptions{MaxResults: 2, PaginationToken: next})
		if err != nil {
			t.Fatal(err)
		}
		if p.Meta.ResultCount != len(p.Data) {
			t.Errorf("result_count %d for %d folders", p.Meta.ResultCount, len(p.Data))
		}
		got = append(got, p.Data...)
		if next = p.Meta.NextToken; next == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("folders = %v, want %v", got, want)
	}
	if n := e.sim.TotalPostsReturned(); n != 0 {
		t.Errorf("listing folders billed %d posts", n)
	}
}

// Part 4.2, L92: "GET `{base_url}/2/users/:id/bookmarks/folders/:folder_id` |
// Read one bookmark folder". The facts: post ids only, paginated like the
// list, "billed as ordinary post reads"; an unknown folder is 404.
func TestGetFolderReturnsPostIDsAndBillsEach(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	posts := e.sim.SeedBookmarks(alice, 25)
	e.sim.CreateFolder(alice, "77", "Reading")
	for _, id := range reversed(posts[:13]) { // added oldest first: folder order is posts[:13]
		e.sim.AddToFolder(alice, "77", id)
	}
	c := e.client(e.sim.IssueToken(alice))
	ctx := context.Background()
	var got []string
	next := ""
	for range maxPages {
		p, resp, err := c.GetFolder(ctx, alice, "77", client.PageOptions{MaxResults: 5, PaginationToken: next})
		if err != nil {
			t.Fatal(err)
		}
		if resp.PostsReturned != len(p.Data) || p.Meta.ResultCount != len(p.Data) {
			t.Errorf("page of %d: result_count %d, billed %d", len(p.Data), p.Meta.ResultCount, resp.PostsReturned)
		}
		for _, fp := range p.Data {
			got = append(got, fp.ID)
		}
		if next = p.Meta.NextToken; next == "" {
			break
		}
	}
	if !slices.Equal(got, posts[:13]) {
		t.Errorf("folder posts = %v, want %v", got, posts[:13])
	}
	if u := e.usage(alice, xsim.OpGetFolder); u.PostsReturned != 13 || u.Requests != 3 {
		t.Errorf("simulator: %d posts billed in %d requests, want 13 in 3", u.PostsReturned, u.Requests)
	}
	if m := c.Meter().Usage(alice, client.OpGetFolder); m.PostsReturned != 13 {
		t.Errorf("client meter: %d posts, want 13", m.PostsReturned)
	}
	_, _, err := c.GetFolder(ctx, alice, "78", client.PageOptions{})
	if !errors.Is(err, client.ErrNotFound) {
		t.Errorf("unknown folder: err = %v, want 404", err)
	}
}

// Part 4.2, L93: "POST `{base_url}/2/users/:id/bookmarks` | Add a bookmark".
// The facts: body `{"tweet_id":"..."}` → `{"data":{"bookmarked":true}}`.
func TestAddBookmarkSavesThePost(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 3)
	c := e.client(e.sim.IssueToken(alice))
	id := e.sim.NewPostID()
	ok, resp, err := c.AddBookmark(context.Background(), alice, id)
	if err != nil || !ok || resp.StatusCode != 200 {
		t.Fatalf("AddBookmark = %v, %v", ok, err)
	}
	if got := e.sim.Bookmarks(alice); len(got) != 4 || got[0] != id {
		t.Errorf("list = %v, want %s first", got, id)
	}
}

// Part 4.2, L94: "DELETE `{base_url}/2/users/:id/bookmarks/:tweet_id` |
// Remove a bookmark". The facts: → `{"data":{"bookmarked":false}}`.
func TestRemoveBookmarkUnsavesThePost(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	posts := e.sim.SeedBookmarks(alice, 3)
	c := e.client(e.sim.IssueToken(alice))
	ok, resp, err := c.RemoveBookmark(context.Background(), alice, posts[1])
	if err != nil || ok || resp.StatusCode != 200 {
		t.Fatalf("RemoveBookmark = %v, %v", ok, err)
	}
	if got := e.sim.Bookmarks(alice); !slices.Equal(got, []string{posts[0], posts[2]}) {
		t.Errorf("list = %v", got)
	}
}

// Part 5, L107: "Scopes required by the other operations: not shown." The
// facts: add and remove need `bookmark.write`; a read-only token is refused
// with 403 and the list is unchanged.
func TestAddAndRemoveNeedBookmarkWrite(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	posts := e.sim.SeedBookmarks(alice, 3)
	c := e.client(e.sim.IssueToken(alice, "tweet.read", "users.read", "bookmark.read"))
	ctx := context.Background()
	if _, _, err := c.AddBookmark(ctx, alice, e.sim.NewPostID()); !errors.Is(err, client.ErrForbidden) || !strings.Contains(err.Error(), "bookmark.write") {
		t.Errorf("add without bookmark.write: err = %v", err)
	}
	if _, _, err := c.RemoveBookmark(ctx, alice, posts[0]); !errors.Is(err, client.ErrForbidden) || !strings.Contains(err.Error(), "bookmark.write") {
		t.Errorf("remove without bookmark.write: err = %v", err)
	}
	if got := e.sim.Bookmarks(alice); !slices.Equal(got, posts) {
		t.Errorf("list changed: %v", got)
	}
	if _, _, err := c.ListBookmarks(ctx, alice, client.ListOptions{}); err != nil {
		t.Errorf("the read-only token cannot read: %v", err)
	}
}
