package conformance

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// Token test (c), and Part 5, L101: "App-only bearer token | Does not work for the list
// operation. Bookmarks are private and no app-context version exists." Part
// 7, L121 ("Response to an app-only token: not shown"), the facts: 403
// "Unsupported Authentication". The client's error must say that bookmarks
// need a user-context token and to run `cq-source-x login`; it is not retried
// and bills nothing. Checked with the token given directly and with the token
// coming out of a token file through the auth transport.
func TestAppOnlyTokenIsRefusedWithClearHint(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	posts := e.sim.SeedBookmarks(alice, 5)
	e.sim.AddToFolder(alice, "77", posts[0])
	appOnly := e.sim.IssueAppOnlyToken()
	ctx := context.Background()

	check := func(t *testing.T, c *client.Client) {
		calls := map[string]func() (*client.Response, error){
			"list": func() (*client.Response, error) {
				_, r, err := c.ListBookmarks(ctx, alice, client.ListOptions{})
				return r, err
			},
			"folders": func() (*client.Response, error) {
				_, r, err := c.ListFolders(ctx, alice, client.PageOptions{})
				return r, err
			},
			"folder": func() (*client.Response, error) {
				_, r, err := c.GetFolder(ctx, alice, "77", client.PageOptions{})
				return r, err
			},
			"add": func() (*client.Response, error) {
				_, r, err := c.AddBookmark(ctx, alice, e.sim.NewPostID())
				return r, err
			},
			"remove": func() (*client.Response, error) { _, r, err := c.RemoveBookmark(ctx, alice, posts[1]); return r, err },
			"me":     func() (*client.Response, error) { _, r, err := c.Me(ctx); return r, err },
		}
		for name, call := range calls {
			resp, err := call()
			var apiErr *client.APIError
			if !errors.Is(err, client.ErrAppOnlyToken) || !errors.Is(err, client.ErrForbidden) || !errors.As(err, &apiErr) {
				t.Errorf("%s: err = %v, want ErrAppOnlyToken", name, err)
				continue
			}
			if apiErr.Status != 403 || apiErr.Title != "Unsupported Authentication" || apiErr.Hint != client.HintAppOnlyToken {
				t.Errorf("%s: %d %q hint %q", name, apiErr.Status, apiErr.Title, apiErr.Hint)
			}
			if msg := err.Error(); !containsAll(msg, "bookmarks need a user-context token", "run `cq-source-x login`") {
				t.Errorf("%s: message lacks the hint: %s", name, msg)
			}
			if resp == nil || resp.Attempts != 1 {
				t.Errorf("%s: retried (%+v)", name, resp)
			}
			if strings.Contains(err.Error(), appOnly) {
				t.Errorf("%s: the token is in the message", name)
			}
		}
		if got := e.sim.Bookmarks(alice); !slices.Equal(got, posts) {
			t.Errorf("list changed: %v", got)
		}
		if n := e.sim.TotalPostsReturned(); n != 0 {
			t.Errorf("%d posts billed", n)
		}
	}

	t.Run("static token", func(t *testing.T) { check(t, e.client(appOnly)) })
	t.Run("token file", func(t *testing.T) {
		// A token file holding an app-only token (e.g. pasted by hand).
		file := auth.TokenFile{Path: filepath.Join(t.TempDir(), "x-token.json")}
		if err := file.Save(&auth.StoredToken{AccessToken: appOnly, TokenType: "bearer", ClientID: "app-1"}); err != nil {
			t.Fatal(err)
		}
		cfg := auth.Config{ClientID: "app-1", TokenURL: e.sim.TokenURL(), AuthURL: e.sim.AuthorizeURL()}
		src, err := auth.NewFileTokenSource(ctx, cfg, file, auth.WithClock(e.clk))
		if err != nil {
			t.Fatal(err)
		}
		check(t, e.clientWith(&http.Client{Transport: auth.NewTransport(src, e.tr)}))
	})
}

// Part 5, L102: "Scopes for the list operation | `tweet.read`, `users.read`,
// `bookmark.read`". A token with the three reads the list; a token missing
// any one of them is refused with 403 naming it.
func TestListNeedsTweetReadUsersReadAndBookmarkRead(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 3)
	need := []string{"tweet.read", "users.read", "bookmark.read"}
	if _, _, err := e.client(e.sim.IssueToken(alice, need...)).ListBookmarks(context.Background(), alice, client.ListOptions{}); err != nil {
		t.Fatalf("with %v: %v", need, err)
	}
	for i, missing := range need {
		scopes := append(slices.Clone(need[:i]), need[i+1:]...)
		scopes = append(scopes, "bookmark.write", "offline.access")
		_, _, err := e.client(e.sim.IssueToken(alice, scopes...)).ListBookmarks(context.Background(), alice, client.ListOptions{})
		if !errors.Is(err, client.ErrForbidden) || !strings.Contains(err.Error(), missing) {
			t.Errorf("without %s: err = %v", missing, err)
		}
	}
	if got := auth.Scopes(false); !slices.Equal(got, append(need, "offline.access")) {
		t.Errorf("the login asks for %v", got)
	}
}

// Part 5, L104 (and Part 4.1, L65): "Presentation | Header `Authorization:
// Bearer <ACCESS_TOKEN>`". Every operation sends exactly that header; a
// request without it, or with the token presented any other way, is 401.
func TestTokenIsPresentedAsAuthorizationBearerHeader(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	posts := e.sim.SeedBookmarks(alice, 3)
	e.sim.AddToFolder(alice, "77", posts[0])
	token := e.sim.IssueToken(alice)
	c := e.client(token)
	ctx := context.Background()
	if _, _, err := c.Me(ctx); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.ListBookmarks(ctx, alice, client.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.ListFolders(ctx, alice, client.PageOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.GetFolder(ctx, alice, "77", client.PageOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.AddBookmark(ctx, alice, e.sim.NewPostID()); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.RemoveBookmark(ctx, alice, posts[2]); err != nil {
		t.Fatal(err)
	}
	reqs := e.rec.all()
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6", len(reqs))
	}
	for _, r := range reqs {
		if r.Authorization != "Bearer "+token {
			t.Errorf("%s %s: Authorization %q", r.Method, r.Path, r.Authorization)
		}
		if r.Query.Has("access_token") {
			t.Errorf("%s %s: token in the query", r.Method, r.Path)
		}
	}

	// No header at all: 401, with the client's hint.
	bare := e.clientWith(&http.Client{Transport: e.tr})
	_, _, err := bare.ListBookmarks(ctx, alice, client.ListOptions{})
	var apiErr *client.APIError
	if !errors.Is(err, client.ErrUnauthorized) || !errors.As(err, &apiErr) || apiErr.Hint != client.HintUnauthorized {
		t.Errorf("no Authorization header: err = %v, want 401", err)
	}
	// The token presented otherwise: query parameter, another scheme.
	if status, _, _ := e.rawGet("/2/users/"+alice+"/bookmarks?access_token="+token, ""); status != 401 {
		t.Errorf("token as a query parameter: status %d, want 401", status)
	}
	req, _ := http.NewRequest(http.MethodGet, e.sim.URL()+"/2/users/"+alice+"/bookmarks", nil)
	req.Header.Set("Authorization", "Token "+token)
	resp, err := (&http.Client{Transport: e.tr}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 401 {
		t.Errorf("Authorization: Token ...: status %d, want 401", resp.StatusCode)
	}
}
