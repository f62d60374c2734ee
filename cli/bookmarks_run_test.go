package cli

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/bookmarks"
)

// answerFor answers the removal of chosen posts itself; the rest go to X.
type answerFor map[string]func() *http.Response

func (a answerFor) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodDelete {
		if answer := a[r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]]; answer != nil {
			resp := answer()
			resp.Request = r
			return resp, nil
		}
	}
	return http.DefaultTransport.RoundTrip(r)
}

func jsonResponse(status int, body string) func() *http.Response {
	return func() *http.Response {
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Header: http.Header{"Content-Type": {"application/json"}},
			Body: io.NopCloser(strings.NewReader(body))}
	}
}

// A post X refuses (it does not exist) or answers for with the wrong
// state is listed and gone past; the run goes on, records what X
// confirmed, and says how many it refused.
func TestBookmarksRecordsThePostsXRefusesAndGoesOn(t *testing.T) {
	sim := startSim(t)
	f := newArchive(t, sim, map[string]int{"1001": 10})
	list := slices.Clone(sim.Bookmarks("1001"))
	missing, kept, removed := list[2], list[1], list[0] // removed oldest first: missing, kept, removed
	transport := answerFor{
		missing: jsonResponse(404, `{"title":"Not Found Error","detail":"Could not find tweet with id: [`+missing+`].","type":"https://api.twitter.com/2/problems/resource-not-found","status":404}`),
		kept:    jsonResponse(200, `{"data":{"bookmarked":true}}`),
	}
	var stdout, stderr bytes.Buffer
	err := runBookmarks(context.Background(), bookmarks.Options{Kind: bookmarks.OpRemove, Spec: f.spec, Out: f.out, IDsFile: f.ids(removed, kept, missing),
		Yes: true, Command: "bookmarks remove --ids test", Stdout: &stdout, Stderr: &stderr, Transport: transport})
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	mustContain(t, stderr.String(), "accounts[0] (user 1001): X refused post "+missing+": ",
		"accounts[0] (user 1001): X answered bookmarked:true for post "+kept+"\n",
		"accounts[0] (user 1001): removed 3 of 3\n")
	mustContain(t, stdout.String(), "accounts[0] (user 1001): removed 1 of 3, recorded in x_bookmark_changes; X refused 2 (listed above)\n")
	if ch := f.changes()["1001"]; len(ch) != 1 || ch[removed] != "removed" {
		t.Errorf("x_bookmark_changes: %v, want only %s removed", ch, removed)
	}
}
