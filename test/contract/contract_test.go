// Package contract checks the client and the simulator against X's
// published OpenAPI description (testdata: the parts of revisions 2.166 and
// 2.167 the project uses). Every request the client can build is checked
// against the revision of its naming, and every answer the simulator
// serves in a naming against that revision's response schemas.
package contract

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/spec"
)

const user = "1001"

// revisionOf is the revision of X's description each naming is.
var revisionOf = map[client.Naming]string{client.NamingTweets: "2.166", client.NamingPosts: "2.167"}

// gaps are what the client sends that a revision does not declare, because
// the revision leaves it out: revision 2.166 declares no query parameter
// for a folder's posts, though its answer carries meta.next_token, and X's
// reference pages them as it pages bookmarks; 2.167 declares max_results
// and pagination_token. (A folder read without them could not be read past
// its first page.)
var gaps = map[string][]string{
	"2.166": {
		"GET /2/users/{id}/bookmarks/folders/{folder_id}: query parameter max_results is not one of revision 2.166",
		"GET /2/users/{id}/bookmarks/folders/{folder_id}: query parameter pagination_token is not one of revision 2.166",
	},
}

// exchange is one request to the API and its answer.
type exchange struct {
	method, path string
	query        url.Values
	request      []byte
	status       int
	body         []byte
}

// recorder records the exchanges that pass through it.
type recorder struct {
	mu        sync.Mutex
	exchanges []exchange
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		body, _ = io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	answer, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(answer))
	r.mu.Lock()
	r.exchanges = append(r.exchanges, exchange{req.Method, req.URL.Path, req.URL.Query(), body, resp.StatusCode, answer})
	r.mu.Unlock()
	return resp, nil
}

// specs are every combination of settings the spec allows that shape a
// bookmarks request: each set of content kinds, and each value of either
// revision's enums added in the fields section (with every kind on); the
// ones the spec refuses (private metrics) are not built.
func specs(t *testing.T, revisions ...*revision) []*spec.Spec {
	t.Helper()
	kinds := []string{"authors", "media", "referenced_posts", "long_text", "articles"}
	var out []*spec.Spec
	parse := func(content map[string]bool, fields map[string][]string) {
		b, _ := json.Marshal(map[string]any{"accounts": []any{map[string]any{"access_token": "a"}}, "content": content, "fields": fields})
		if s, err := spec.Parse(b); err == nil {
			out = append(out, s)
		} else if !strings.Contains(err.Error(), "is only readable for your own posts") {
			t.Fatalf("%s: %v", b, err)
		}
	}
	for set := range 1 << len(kinds) {
		content := map[string]bool{}
		for i, k := range kinds {
			content[k] = set&(1<<i) != 0
		}
		parse(content, nil)
	}
	all := map[string]bool{"authors": true, "media": true, "referenced_posts": true, "long_text": true, "articles": true}
	for field, params := range map[string][]string{
		"tweet_fields": {"TweetFieldsParameter", "PostFieldsParameter"}, "expansions": {"TweetExpansionsParameter", "PostExpansionsParameter"},
		"user_fields": {"UserFieldsParameter"}, "media_fields": {"MediaFieldsParameter"},
		"poll_fields": {"PollFieldsParameter"}, "place_fields": {"PlaceFieldsParameter"},
	} {
		var values []string
		for _, r := range revisions {
			for _, name := range params {
				if p, ok := r.params[name]; ok {
					items, _ := p.Schema["items"].(map[string]any)
					for _, v := range items["enum"].([]any) {
						if !slices.Contains(values, v.(string)) {
							values = append(values, v.(string))
						}
					}
				}
			}
		}
		if len(values) == 0 {
			t.Fatalf("no values of %s", field)
		}
		for _, v := range values {
			parse(all, map[string][]string{field: {v}})
		}
	}
	return out
}

// exchanges are the client's requests of every kind in naming n, to the
// simulator serving that naming, and its answers.
func exchanges(t *testing.T, n client.Naming) []exchange {
	t.Helper()
	sim := xsim.New(xsim.Options{Naming: string(n), DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedContentExamples(user)
	posts := sim.SeedBookmarks(user, 250)
	const folder = "1146654567674912769"
	sim.CreateFolder(user, folder, "Reading")
	for _, id := range posts[:120] {
		sim.AddToFolder(user, folder, id)
	}
	rec := &recorder{}
	policy, err := client.NewNamingPolicy(string(n))
	if err != nil {
		t.Fatal(err)
	}
	newClient := func(token string) *client.Client {
		c, err := client.New(client.StaticTokenWithTransport(token, rec), client.WithBaseURL(sim.URL()), client.WithNamingPolicy(policy),
			client.WithTokenCheck(client.TokenOpaque), client.WithRetryPolicy(client.RetryPolicy{Budget: -1, MaxAttempts: 1}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c, ctx := newClient(sim.IssueToken(user)), context.Background()
	must := func(what string, err error) {
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}

	for _, s := range specs(t, loadRevision(t, "2.166"), loadRevision(t, "2.167")) {
		f := s.RequestFields()
		fields := client.Fields{TweetFields: f.TweetFields, Expansions: f.Expansions, UserFields: f.UserFields,
			MediaFields: f.MediaFields, PollFields: f.PollFields, PlaceFields: f.PlaceFields}
		for _, size := range []int{1, 100} {
			// An error is the simulator refusing a request (the tests say
			// why): the next page is not asked for.
			page, _, err := c.ListBookmarks(ctx, user, client.ListOptions{PageOptions: client.PageOptions{MaxResults: size}, Fields: fields})
			if err == nil {
				_, _, _ = c.ListBookmarks(ctx, user, client.ListOptions{PageOptions: client.PageOptions{MaxResults: size, PaginationToken: page.Meta.NextToken}, Fields: fields})
			}
		}
	}
	for _, size := range []int{1, 100} {
		_, _, err := c.ListFolders(ctx, user, client.PageOptions{MaxResults: size})
		must("list_folders", err)
		page, _, err := c.GetFolder(ctx, user, folder, client.PageOptions{MaxResults: size})
		must("get_folder", err)
		_, _, err = c.GetFolder(ctx, user, folder, client.PageOptions{MaxResults: size, PaginationToken: page.Meta.NextToken})
		must("get_folder, a next page", err)
	}
	_, _, err = c.Me(ctx)
	must("users_me", err)
	_, _, err = c.RemoveBookmark(ctx, user, posts[0])
	must("remove_bookmark", err)
	_, _, err = c.AddBookmark(ctx, user, posts[0])
	must("add_bookmark", err)

	app := newClient(sim.IssueAppOnlyToken())
	for _, o := range []client.CreateComplianceJobOptions{{Type: client.ComplianceTweets, Name: "archive check"}, {Type: client.ComplianceUsers}} {
		job, _, err := app.CreateComplianceJob(ctx, o)
		must("compliance_create_job", err)
		_, _, err = app.GetComplianceJob(ctx, job.ID)
		must("compliance_get_job", err)
		for _, status := range []string{"", client.JobCreated, client.JobInProgress, client.JobComplete, client.JobFailed, client.JobExpired} {
			if _, _, err = app.ListComplianceJobs(ctx, o.Type, status); !errors.Is(err, client.ErrInvalidInput) { // refused: not built
				must("compliance_list_jobs", err)
			}
		}
	}
	return rec.exchanges
}

// Every request the client can build, in each naming — every combination
// of content kinds, every value either revision lists added in the fields
// section, pages of 1 and 100 with and without a pagination token, and the
// folders, users/me, add, remove and compliance requests — uses only the
// parameters and values of the revision it targets (2.166 for the tweets
// naming, 2.167 for the posts naming), but for the gaps of a revision.
func TestEveryRequestIsOfTheRevisionItTargets(t *testing.T) {
	for n, version := range revisionOf {
		rev := loadRevision(t, version)
		problems := map[string]int{}
		ex := exchanges(t, n)
		for _, e := range ex {
			for _, p := range rev.checkRequest(e.method, e.path, e.query, e.request) {
				if !slices.Contains(gaps[version], p) {
					problems[p]++
				}
			}
		}
		for _, p := range slices.Sorted(func(yield func(string) bool) {
			for p := range problems {
				if !yield(p) {
					return
				}
			}
		}) {
			t.Errorf("%s naming, revision %s: %s (%d requests)", n, version, p, problems[p])
		}
		if len(ex) < 500 {
			t.Errorf("%s naming: only %d requests", n, len(ex))
		}
	}
}

// Every answer the simulator serves in a naming validates against the
// schema its revision gives the operation and status; every request of the
// client got a 2xx, so that none went unchecked.
func TestEveryAnswerOfTheSimulatorIsOfItsRevision(t *testing.T) {
	for n, version := range revisionOf {
		rev := loadRevision(t, version)
		failures := map[string]int{}
		for _, e := range exchanges(t, n) {
			if e.status/100 != 2 {
				t.Errorf("%s naming: %s %s?%s answered %d: %.300s", n, e.method, e.path, e.query.Encode(), e.status, e.body)
				continue
			}
			if err := rev.checkResponse(e.method, e.path, e.status, e.body); err != nil {
				failures[fmt.Sprintf("%v", err)]++
			}
		}
		for f, count := range failures {
			t.Errorf("%s naming, revision %s (%d answers): %s", n, version, count, f)
		}
	}
}
