package client

import (
	"context"
	"net/http"
	"reflect"
	"strings"
	"testing"
)

func TestListBookmarks_SendsPathQueryFieldsAndHeaders(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, pageBody(1880000000000000100, 2, "7140DIBDN0V9C7BT"))
	})
	c, _ := newTestClient(t, ts, StaticToken("test-token-abc"), WithUserAgent("cq-source-x/test"))
	page, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{
		PageOptions: PageOptions{MaxResults: 5, PaginationToken: "7140dibdn0v9c7bt"},
		Fields: Fields{
			TweetFields: []string{"created_at", "author_id", "note_tweet"},
			Expansions:  []string{"author_id", "attachments.media_keys"},
			UserFields:  []string{"username"},
			MediaFields: []string{"url", "alt_text"},
			PollFields:  []string{"options"},
			PlaceFields: []string{"full_name"},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	reqs := ts.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Method != "GET" || r.Path != "/2/users/"+testUser+"/bookmarks" {
		t.Errorf("request %s %s", r.Method, r.Path)
	}
	want := map[string][]string{
		"max_results":      {"5"},
		"pagination_token": {"7140dibdn0v9c7bt"},
		"tweet.fields":     {"created_at,author_id,note_tweet"},
		"expansions":       {"author_id,attachments.media_keys"},
		"user.fields":      {"username"},
		"media.fields":     {"url,alt_text"},
		"poll.fields":      {"options"},
		"place.fields":     {"full_name"},
	}
	if !reflect.DeepEqual(r.Query, want) {
		t.Errorf("query %v\nwant  %v", r.Query, want)
	}
	if got := r.Header.Get("Authorization"); got != "Bearer test-token-abc" {
		t.Errorf("Authorization %q", got)
	}
	if r.Header.Get("User-Agent") != "cq-source-x/test" || r.Header.Get("Accept") != "application/json" {
		t.Errorf("headers %v", r.Header)
	}
	if len(page.Data) != 2 || page.Meta.NextToken != "7140DIBDN0V9C7BT" || resp.PostsReturned != 2 || resp.Attempts != 1 || resp.StatusCode != 200 {
		t.Errorf("page %+v resp %+v", page.Meta, resp)
	}
	if resp.Request.Header.Get("Authorization") != "" {
		t.Error("Response.Request carries the Authorization header")
	}
}

func TestListBookmarks_OmitsZeroMaxResultsAndEmptyFields(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, pageBody(0, 0, ""))
	})
	c, _ := newTestClient(t, ts, nil)
	page, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if q := ts.Requests()[0].Query; len(q) != 0 {
		t.Errorf("query %v, want none", q)
	}
	if len(page.Data) != 0 || page.Meta.NextToken != "" || resp.PostsReturned != 0 {
		t.Errorf("empty page: %+v %+v", page, resp)
	}
}

func TestListFoldersAndGetFolder_PathsAndPaging(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if strings.HasSuffix(r.URL.Path, "/folders") {
			writeJSON(w, 200, `{"data":[{"id":"1146654567674912769","name":"Reading list"}],"meta":{"result_count":1,"next_token":"1ABC"}}`)
			return
		}
		writeJSON(w, 200, `{"data":[{"id":"1880000000000000001"},{"id":"1880000000000000002"}],"meta":{"result_count":2}}`)
	})
	c, _ := newTestClient(t, ts, nil)
	ctx := context.Background()
	fp, _, err := c.ListFolders(ctx, testUser, PageOptions{MaxResults: 100, PaginationToken: "0V"})
	if err != nil {
		t.Fatal(err)
	}
	if len(fp.Data) != 1 || fp.Data[0] != (Folder{ID: "1146654567674912769", Name: "Reading list"}) || fp.Meta.NextToken != "1ABC" {
		t.Errorf("folders %+v", fp)
	}
	pp, resp, err := c.GetFolder(ctx, testUser, "1146654567674912769", PageOptions{MaxResults: 20})
	if err != nil {
		t.Fatal(err)
	}
	if len(pp.Data) != 2 || pp.Data[0].ID != "1880000000000000001" || resp.PostsReturned != 2 {
		t.Errorf("folder posts %+v resp %+v", pp, resp)
	}
	reqs := ts.Requests()
	if reqs[0].Path != "/2/users/"+testUser+"/bookmarks/folders" || !reflect.DeepEqual(reqs[0].Query, map[string][]string{"max_results": {"100"}, "pagination_token": {"0V"}}) {
		t.Errorf("list folders request %+v", reqs[0])
	}
	if reqs[1].Path != "/2/users/"+testUser+"/bookmarks/folders/1146654567674912769" || !reflect.DeepEqual(reqs[1].Query, map[string][]string{"max_results": {"20"}}) {
		t.Errorf("get folder request %+v", reqs[1])
	}
}

func TestAddBookmark_PostsTweetIDAsJSON(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, `{"data":{"bookmarked":true}}`)
	})
	c, _ := newTestClient(t, ts, nil)
	ok, resp, err := c.AddBookmark(context.Background(), testUser, "1880000000000000001")
	if err != nil || !ok || resp.Operation != OpAddBookmark {
		t.Fatalf("AddBookmark = %v, %+v, %v", ok, resp, err)
	}
	r := ts.Requests()[0]
	if r.Method != "POST" || r.Path != "/2/users/"+testUser+"/bookmarks" || r.Body != `{"tweet_id":"1880000000000000001"}` ||
		r.Header.Get("Content-Type") != "application/json" {
		t.Errorf("request %+v", r)
	}
}

func TestRemoveBookmark_DeletesByPostID(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, `{"data":{"bookmarked":false}}`)
	})
	c, _ := newTestClient(t, ts, nil)
	ok, _, err := c.RemoveBookmark(context.Background(), testUser, "1880000000000000001")
	if err != nil || ok {
		t.Fatalf("RemoveBookmark = %v, %v", ok, err)
	}
	r := ts.Requests()[0]
	if r.Method != "DELETE" || r.Path != "/2/users/"+testUser+"/bookmarks/1880000000000000001" || r.Body != "" {
		t.Errorf("request %+v", r)
	}
}

func TestMe_ResolvesTheTokensUser(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, `{"data":{"id":"2244994945","name":"X Developers","username":"XDevelopers"}}`)
	})
	c, _ := newTestClient(t, ts, nil)
	u, resp, err := c.Me(context.Background())
	if err != nil || u.ID != "2244994945" || u.Name != "X Developers" || u.Username != "XDevelopers" || resp.Operation != OpUsersMe {
		t.Fatalf("Me = %+v, %v", u, err)
	}
	if p := ts.Requests()[0].Path; p != "/2/users/me" {
		t.Errorf("path %s", p)
	}
}

func TestWithBaseURL_KeepsPathPrefixAndRejectsBadURLs(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, `{"data":{"id":"1","name":"n","username":"u"}}`)
	})
	c, _ := newTestClient(t, ts, nil, WithBaseURL(ts.URL+"/proxy/x/"))
	if _, _, err := c.Me(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := ts.Requests()[0].Path; p != "/proxy/x/2/users/me" {
		t.Errorf("path %s", p)
	}
	if c, err := New(nil); err != nil || c.baseURL != DefaultBaseURL {
		t.Errorf("default base URL %v %v", c, err)
	}
	for _, bad := range []string{"", "api.x.com", "/2/users", "ftp://api.x.com", "https://", "https://api.x.com?x=1", "https://api.x.com/#f", "https://user:pw@api.x.com", "http://[::1"} {
		if _, err := New(nil, WithBaseURL(bad)); err == nil {
			t.Errorf("WithBaseURL(%q) accepted", bad)
		} else if strings.Contains(err.Error(), "pw@") {
			t.Errorf("error repeats user info: %v", err)
		}
	}
}

// The base URL carries the bearer token: plain http only to a loopback
// host (a simulator, a test server), never across a network.
func TestWithBaseURL_RequiresHTTPSExceptOnLoopback(t *testing.T) {
	for _, ok := range []string{"https://api.x.com", "https://api.x.com:8443/prefix", "http://127.0.0.1:8080", "http://127.9.9.9", "http://localhost:1", "http://LOCALHOST", "http://[::1]:80"} {
		if _, err := New(nil, WithBaseURL(ok)); err != nil {
			t.Errorf("WithBaseURL(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{"http://api.x.com", "http://10.0.0.1:8080", "http://192.168.1.10", "http://localhost.example.com", "http://[::ffff:10.0.0.1]"} {
		_, err := New(nil, WithBaseURL(bad))
		if err == nil || !strings.Contains(err.Error(), "must use https") {
			t.Errorf("WithBaseURL(%q): %v", bad, err)
		}
	}
	for _, bad := range []string{"https://api.x.com/a b", "https://api.x.com/a\tb", "https://api.x.com/\u00a0"} {
		if _, err := New(nil, WithBaseURL(bad)); err == nil {
			t.Errorf("WithBaseURL(%q) accepted", bad)
		}
	}
}

func TestOptions_RejectInvalidValues(t *testing.T) {
	for name, o := range map[string]Option{
		"nil clock": WithClock(nil), "negative cap": WithRateLimitWaitCap(-1), "negative limit": WithLimits(map[Operation]int{OpListBookmarks: -1}),
		"zero window": WithWindow(0), "negative margin": WithResetMargin(-1), "nil meter": WithMeter(nil),
		"empty UA": WithUserAgent(""), "UA newline": WithUserAgent("a\r\nX-Evil: 1"), "zero max body": WithMaxResponseBytes(0),
		"token check": WithTokenCheck(7),
	} {
		if _, err := New(nil, o); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestRedirect_IsNotFollowed(t *testing.T) {
	other := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, `{}`) })
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		http.Redirect(w, r, other.URL+"/steal", http.StatusFound)
	})
	c, _ := newTestClient(t, ts, StaticToken("redirect-token"))
	_, _, err := c.Me(context.Background())
	var apiErr *APIError
	if !asAPIError(err, &apiErr) || apiErr.Status != 302 || apiErr.Hint == "" {
		t.Fatalf("err = %v", err)
	}
	if other.Count() != 0 {
		t.Error("the redirect was followed (and would have carried the token)")
	}
}
