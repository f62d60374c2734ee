// Package conformance checks the client and auth packages against the
// interface document (docs/design/interface.md), Parts 1 to 9,
// and, where the document says "not shown", against the X API facts
// (docs/design/x-api-facts.md). Every test runs over real HTTP on 127.0.0.1
// against a started xsim simulator, with one virtual clock shared by the
// simulator, the client and the token sources, so rate-limit waits and token
// expiries take no real time.
//
// Each test's doc comment quotes the rule it checks, with its Part and line
// in the document ("L79" is line 79).
package conformance

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// t0 is the virtual clock's start, on a whole second.
var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// User ids are decimal strings, as the client requires.
const (
	alice = "1001"
	bob   = "1002"
)

// env is one started simulator and the virtual clock it shares with clients.
type env struct {
	t   *testing.T
	clk *clock.Virtual
	sim *xsim.Server
	tr  *http.Transport // dedicated, so its idle connections are closed at cleanup
	rec *recorder       // every API request the clients of this env sent
}

func newEnv(t *testing.T, opts xsim.Options) *env {
	t.Helper()
	clk := clock.NewVirtual(t0)
	opts.Clock = clk
	sim := xsim.New(opts)
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	e := &env{t: t, clk: clk, sim: sim, tr: tr, rec: &recorder{base: tr}}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		sim.Close()
	})
	return e
}

// client returns a client.Client that presents token as a bearer token,
// sends through the env's recorder, and sleeps on the virtual clock.
func (e *env) client(token string, opts ...client.Option) *client.Client {
	e.t.Helper()
	return e.clientWith(client.StaticTokenWithTransport(token, e.rec), opts...)
}

// clientWith is client with a given *http.Client (e.g. an auth transport).
func (e *env) clientWith(hc *http.Client, opts ...client.Option) *client.Client {
	e.t.Helper()
	all := append([]client.Option{
		client.WithBaseURL(e.sim.URL()),
		client.WithClock(e.clk),
		client.WithRandom(1),
	}, opts...)
	c, err := client.New(hc, all...)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// noBudget turns the client's own budget off for every operation and never
// waits for a reset, so the server's 429s become visible.
func noBudget() []client.Option {
	m := map[client.Operation]int{}
	for _, op := range client.Operations() {
		m[op] = 0
	}
	return []client.Option{client.WithLimits(m), client.WithRateLimitWaitCap(0)}
}

// usage is the simulator's meter row of one user and operation.
func (e *env) usage(user, op string) xsim.OpUsage {
	return e.sim.Usage(user)[op]
}

// rawGet sends a GET with the bearer token straight to the simulator (no
// client), for checks on the wire format itself.
func (e *env) rawGet(path, token string) (int, http.Header, []byte) {
	e.t.Helper()
	return e.raw(http.MethodGet, path, token)
}

func (e *env) raw(method, path, token string) (int, http.Header, []byte) {
	e.t.Helper()
	req, err := http.NewRequest(method, e.sim.URL()+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := (&http.Client{Transport: e.tr}).Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, resp.Header, body
}

// jsonObject decodes a JSON object, failing the test otherwise.
func jsonObject(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("not a JSON object: %v: %s", err, body)
	}
	return m
}

// sentRequest is one request as it left the client.
type sentRequest struct {
	Method, Path  string
	Query         url.Values
	Authorization string
}

// recorder is a RoundTripper that records requests (below StaticToken, so
// the Authorization header is visible) and passes them on.
type recorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	reqs []sentRequest
}

func (r *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	r.mu.Lock()
	r.reqs = append(r.reqs, sentRequest{
		Method: req.Method, Path: req.URL.Path, Query: req.URL.Query(),
		Authorization: req.Header.Get("Authorization"),
	})
	r.mu.Unlock()
	return r.base.RoundTrip(req)
}

func (r *recorder) all() []sentRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

func (r *recorder) last() sentRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.reqs) == 0 {
		return sentRequest{}
	}
	return r.reqs[len(r.reqs)-1]
}

// maxPages bounds every walk in these tests, so a server that never ends a
// walk fails the test instead of hanging it.
const maxPages = 1000

// page reads one page of bookmarks, failing the test on error.
func page(t *testing.T, c *client.Client, user string, max int, token string) (*client.PostPage, *client.Response) {
	t.Helper()
	p, resp, err := c.ListBookmarks(context.Background(), user, client.ListOptions{
		PageOptions: client.PageOptions{MaxResults: max, PaginationToken: token},
	})
	if err != nil {
		t.Fatalf("ListBookmarks(max %d): %v", max, err)
	}
	return p, resp
}

// walkAll walks the whole list with pages of size p and returns the ids in
// order and the number of requests.
func walkAll(t *testing.T, c *client.Client, user string, p int) (ids []string, requests int) {
	t.Helper()
	return walkToHeld(t, c, user, p, nil)
}

// walkToHeld walks from the top with pages of size p and stops at the first
// post in held (document Part 4.1 rule 6); with nothing held, at the end.
// It returns the new posts, in order, and the number of requests.
func walkToHeld(t *testing.T, c *client.Client, user string, p int, held map[string]bool) (fresh []string, requests int) {
	t.Helper()
	token := ""
	for {
		if requests == maxPages {
			t.Fatalf("walk did not end after %d pages", maxPages)
		}
		pg, _ := page(t, c, user, p, token)
		requests++
		for _, post := range pg.Data {
			if held[post.ID] {
				return fresh, requests
			}
			fresh = append(fresh, post.ID)
		}
		if pg.Meta.NextToken == "" {
			return fresh, requests
		}
		token = pg.Meta.NextToken
	}
}

func postIDs(p *client.PostPage) []string {
	ids := make([]string, len(p.Data))
	for i, post := range p.Data {
		ids[i] = post.ID
	}
	return ids
}

func set(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

func reversed(ids []string) []string {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}

// approx compares money amounts.
func approx(a, b float64) bool {
	d := a - b
	return d < 1e-9 && d > -1e-9
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
