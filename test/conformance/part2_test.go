package conformance

import (
	"context"
	"encoding/base32"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// Part 2, L28: "`data` | array of post resources | present when results
// exist", and L30: "`meta` | object | present". With no results, data is
// absent and meta is still there.
func TestDataIsAbsentWhenThereAreNoResultsAndMetaIsAlwaysPresent(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.AddUser(alice, "alice")
	token := e.sim.IssueToken(alice)
	status, _, body := e.rawGet("/2/users/"+alice+"/bookmarks", token)
	m := jsonObject(t, body)
	if status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	if _, ok := m["data"]; ok {
		t.Errorf("empty list: data present: %s", body)
	}
	meta, ok := m["meta"].(map[string]any)
	if !ok || meta["result_count"] != float64(0) {
		t.Errorf("empty list: meta = %v, want result_count 0", m["meta"])
	}
	p, _ := page(t, e.client(token), alice, 0, "")
	if len(p.Data) != 0 || p.Meta.ResultCount != 0 || p.Meta.NextToken != "" {
		t.Errorf("client page of an empty list = %+v", p)
	}

	e.sim.SeedBookmarks(alice, 3)
	_, _, body = e.rawGet("/2/users/"+alice+"/bookmarks", token)
	m = jsonObject(t, body)
	if data, ok := m["data"].([]any); !ok || len(data) != 3 {
		t.Errorf("three bookmarks: data = %v", m["data"])
	}
	if _, ok := m["meta"].(map[string]any); !ok {
		t.Errorf("meta missing: %s", body)
	}
}

// Part 2, L29: "`data[].id` | string | present in each element | Identifier
// of the post".
func TestEveryPostHasAStringID(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	want := e.sim.SeedBookmarks(alice, 30)
	_, _, body := e.rawGet("/2/users/"+alice+"/bookmarks?max_results=30", e.sim.IssueToken(alice))
	data, _ := jsonObject(t, body)["data"].([]any)
	if len(data) != 30 {
		t.Fatalf("data has %d elements, want 30", len(data))
	}
	for i, el := range data {
		id, ok := el.(map[string]any)["id"].(string)
		if !ok || id != want[i] {
			t.Errorf("data[%d].id = %#v, want the string %q", i, el.(map[string]any)["id"], want[i])
		}
	}
}

// Part 2, L31: "`meta.result_count` | integer | present | Number of resources
// returned in this response. Equals the number billed."
func TestResultCountEqualsPostsBilled(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 58)
	c := e.client(e.sim.IssueToken(alice))
	token := ""
	for _, size := range []int{1, 7, 20, 100} { // the last page holds the 30 left
		before := e.usage(alice, xsim.OpListBookmarks).PostsReturned
		p, resp := page(t, c, alice, size, token)
		billed := e.usage(alice, xsim.OpListBookmarks).PostsReturned - before
		if p.Meta.ResultCount != len(p.Data) || billed != p.Meta.ResultCount || resp.PostsReturned != billed {
			t.Errorf("max_results %d: result_count %d, %d posts, simulator billed %d, client counted %d",
				size, p.Meta.ResultCount, len(p.Data), billed, resp.PostsReturned)
		}
		token = p.Meta.NextToken
	}
	if got := c.Meter().Usage(alice, client.OpListBookmarks).PostsReturned; got != 58 {
		t.Errorf("client meter: %d posts, want 58", got)
	}
}

// Part 2, L32: "`meta.next_token` | string | present only when more results
// exist; absent on the last page".
func TestNextTokenAbsentOnLastPage(t *testing.T) {
	for _, tc := range []struct{ n, p, pages int }{{30, 10, 3}, {31, 10, 4}, {9, 10, 1}, {10, 10, 1}} {
		e := newEnv(t, xsim.Options{})
		e.sim.SeedBookmarks(alice, tc.n)
		token := e.sim.IssueToken(alice)
		c := e.client(token)
		next := ""
		for i := 1; ; i++ {
			p, _ := page(t, c, alice, tc.p, next)
			last := i == tc.pages
			if (p.Meta.NextToken == "") != last {
				t.Fatalf("n=%d p=%d: page %d of %d has next_token %q", tc.n, tc.p, i, tc.pages, p.Meta.NextToken)
			}
			if last {
				break
			}
			next = p.Meta.NextToken
		}
		// On the wire: the member is absent, not empty.
		path := "/2/users/" + alice + "/bookmarks?max_results=" + strconv.Itoa(tc.p)
		if next != "" {
			path += "&pagination_token=" + next
		}
		_, _, body := e.rawGet(path, token)
		meta := jsonObject(t, body)["meta"].(map[string]any)
		if _, ok := meta["next_token"]; ok {
			t.Errorf("n=%d p=%d: last page carries next_token: %s", tc.n, tc.p, body)
		}
	}
}

// Part 2, L33: "`meta.previous_token` | string | may be present | Cursor that
// walks back toward the newest results".
func TestPreviousTokenWalksBackTowardNewest(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	all := e.sim.SeedBookmarks(alice, 50)
	c := e.client(e.sim.IssueToken(alice))
	var pages []*client.PostPage
	next := ""
	for range 4 {
		p, _ := page(t, c, alice, 10, next)
		pages = append(pages, p)
		next = p.Meta.NextToken
	}
	if pages[0].Meta.PreviousToken != "" {
		t.Errorf("the first page has a previous_token")
	}
	// From page 4 back to page 1.
	prev := pages[3].Meta.PreviousToken
	for i := 2; i >= 0; i-- {
		if prev == "" {
			t.Fatalf("page %d has no previous_token", i+2)
		}
		p, _ := page(t, c, alice, 10, prev)
		if want := all[i*10 : i*10+10]; !slices.Equal(postIDs(p), want) {
			t.Fatalf("previous_token led to %v, want page %d %v", postIDs(p), i+1, want)
		}
		prev = p.Meta.PreviousToken
	}
	if prev != "" {
		t.Errorf("walking back reached the newest page, which still has a previous_token")
	}
}

// Part 2, L37: "The token is a base32hex string."
func TestPaginationTokenIsOpaqueBase32hex(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 60)
	c := e.client(e.sim.IssueToken(alice))
	alphabet := regexp.MustCompile(`^[0-9A-V]+=*$`)
	var tokens []string
	next := ""
	for range maxPages {
		p, _ := page(t, c, alice, 7, next)
		for _, tok := range []string{p.Meta.NextToken, p.Meta.PreviousToken} {
			if tok != "" {
				tokens = append(tokens, tok)
			}
		}
		if next = p.Meta.NextToken; next == "" {
			break
		}
	}
	if len(tokens) < 10 {
		t.Fatalf("only %d tokens seen", len(tokens))
	}
	for _, tok := range tokens {
		if !alphabet.MatchString(tok) {
			t.Errorf("token %q is not base32hex", tok)
		}
		if _, err := base32.HexEncoding.WithPadding(base32.NoPadding).DecodeString(strings.TrimRight(tok, "=")); err != nil {
			t.Errorf("token %q does not decode as base32hex: %v", tok, err)
		}
	}
}

// Part 2, L38: "It is opaque. A client must not parse it and must not
// construct one." The client refuses a token that cannot have come from the
// API without sending it, and a well-formed token the server never issued (or
// issued for another list) is refused by the server with 400, not retried and
// not billed.
func TestConstructedPaginationTokensAreRefused(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 30)
	e.sim.SeedBookmarks(bob, 30)
	c := e.client(e.sim.IssueToken(alice))
	ctx := context.Background()

	_, _, err := c.ListBookmarks(ctx, alice, client.ListOptions{PageOptions: client.PageOptions{PaginationToken: "offset=10"}})
	var in *client.InputError
	if !errors.As(err, &in) || in.Parameter != "pagination_token" || !errors.Is(err, client.ErrInvalidInput) {
		t.Fatalf("token %q: err = %v, want an InputError", "offset=10", err)
	}
	if n := e.usage(alice, xsim.OpListBookmarks).Requests; n != 0 {
		t.Fatalf("an invalid token was sent (%d requests)", n)
	}

	bobsPage, _ := page(t, e.client(e.sim.IssueToken(bob)), bob, 10, "")
	for name, tok := range map[string]string{
		"made up":           "00000000000000000000",
		"from another list": bobsPage.Meta.NextToken,
	} {
		before := e.usage(alice, xsim.OpListBookmarks)
		_, resp, err := c.ListBookmarks(ctx, alice, client.ListOptions{PageOptions: client.PageOptions{PaginationToken: tok}})
		var apiErr *client.APIError
		if !errors.As(err, &apiErr) || apiErr.Status != 400 || !errors.Is(err, client.ErrInvalidRequest) {
			t.Errorf("%s token: err = %v, want 400", name, err)
			continue
		}
		after := e.usage(alice, xsim.OpListBookmarks)
		if resp.Attempts != 1 || after.Requests-before.Requests != 1 || after.PostsReturned != before.PostsReturned {
			t.Errorf("%s token: %d attempts, %d requests, %d posts billed; want 1, 1, 0",
				name, resp.Attempts, after.Requests-before.Requests, after.PostsReturned-before.PostsReturned)
		}
	}
}

// Part 2, L40 (and Part 7, L120): "Its validity is only for the duration of
// one walk. [...] a token kept from an earlier run points into a list that
// has shifted. Reusing it gives no error and returns plausible but skipped or
// duplicated posts, all billed."
func TestStaleTokenGivesNoErrorButShiftedPosts(t *testing.T) {
	setup := func(t *testing.T) (*env, *client.Client, []string, string) {
		e := newEnv(t, xsim.Options{})
		old := e.sim.SeedBookmarks(alice, 30)
		c := e.client(e.sim.IssueToken(alice))
		p, _ := page(t, c, alice, 5, "")
		e.clk.Advance(24 * time.Hour) // the next run
		return e, c, old, p.Meta.NextToken
	}
	check := func(t *testing.T, e *env, c *client.Client, token string, want []string) {
		before := e.usage(alice, xsim.OpListBookmarks).PostsReturned
		p, _ := page(t, c, alice, 5, token) // no error
		if !slices.Equal(postIDs(p), want) {
			t.Fatalf("stale token returned %v, want %v", postIDs(p), want)
		}
		if billed := e.usage(alice, xsim.OpListBookmarks).PostsReturned - before; billed != 5 {
			t.Errorf("billed %d posts, want 5", billed)
		}
	}
	t.Run("duplicated after new bookmarks", func(t *testing.T) {
		e, c, old, token := setup(t)
		e.sim.SeedBookmarks(alice, 3)
		// Page 1 was old[0:5]; the token now points at old[2:7]: three repeats.
		check(t, e, c, token, old[2:7])
	})
	t.Run("skipped after removals", func(t *testing.T) {
		e, c, old, token := setup(t)
		for _, id := range old[:3] {
			if err := e.sim.Unbookmark(alice, id); err != nil {
				t.Fatal(err)
			}
		}
		// The token now points at old[8:13]: old[5:8] are never seen.
		check(t, e, c, token, old[8:13])
	})
}

// Part 2, L44: "Fields of a post beyond `id`: not shown." The facts: "`id` and
// `text` are always present; `edit_history_tweet_ids` is returned by default;
// `created_at` is RFC 3339 with milliseconds".
func TestPostHasIDTextAndEditHistoryByDefault(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 5)
	token := e.sim.IssueToken(alice)
	_, _, body := e.rawGet("/2/users/"+alice+"/bookmarks", token)
	for _, el := range jsonObject(t, body)["data"].([]any) {
		post := el.(map[string]any)
		keys := make([]string, 0, len(post))
		for k := range post {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, []string{"edit_history_tweet_ids", "id", "text"}) {
			t.Errorf("default post fields = %v, want edit_history_tweet_ids id text", keys)
		}
	}
	_, _, body = e.rawGet("/2/users/"+alice+"/bookmarks?tweet.fields=created_at", token)
	rfc3339ms := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)
	for _, el := range jsonObject(t, body)["data"].([]any) {
		if ca, _ := el.(map[string]any)["created_at"].(string); !rfc3339ms.MatchString(ca) {
			t.Errorf("created_at = %q, want RFC 3339 with milliseconds", ca)
		}
	}
}
