package conformance

import (
	"context"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// Part 9, L156: "The version is carried in the path prefix `/2/`." Every
// request of every operation goes to a path under /2/ (also when the base
// URL ends in a slash); the same path without the prefix is not an operation.
func TestVersionIsCarriedInThePathPrefix2(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	posts := e.sim.SeedBookmarks(alice, 3)
	e.sim.AddToFolder(alice, "77", posts[0])
	token := e.sim.IssueToken(alice)
	c := e.client(token)
	ctx := context.Background()
	_, _, _ = c.Me(ctx)
	_, _, _ = c.ListBookmarks(ctx, alice, client.ListOptions{})
	_, _, _ = c.ListFolders(ctx, alice, client.PageOptions{})
	_, _, _ = c.GetFolder(ctx, alice, "77", client.PageOptions{})
	_, _, _ = c.AddBookmark(ctx, alice, e.sim.NewPostID())
	_, _, _ = c.RemoveBookmark(ctx, alice, posts[1])
	reqs := e.rec.all()
	if len(reqs) != 6 {
		t.Fatalf("%d requests, want 6", len(reqs))
	}
	for _, r := range reqs {
		if !strings.HasPrefix(r.Path, "/2/") {
			t.Errorf("%s %s is not under /2/", r.Method, r.Path)
		}
	}
	if status, _, _ := e.rawGet("/users/"+alice+"/bookmarks", token); status != 404 {
		t.Errorf("GET /users/:id/bookmarks without /2/: status %d, want 404", status)
	}
	// A base URL with a trailing slash does not double it.
	c2, err := client.New(client.StaticTokenWithTransport(token, e.rec), client.WithBaseURL(e.sim.URL()+"/"), client.WithClock(e.clk))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c2.ListBookmarks(ctx, alice, client.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := e.rec.last().Path; got != "/2/users/"+alice+"/bookmarks" {
		t.Errorf("path %q", got)
	}
}
