package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
)

// t0 is the virtual clock's start, on a whole second.
var t0 = time.Date(2026, 1, 15, 10, 0, 0, 0, time.UTC)

const testUser = "2244994945"

// recClock is a virtual clock that records every Sleep.
type recClock struct {
	*clock.Virtual
	mu     sync.Mutex
	sleeps []time.Duration
}

func newRecClock() *recClock { return &recClock{Virtual: clock.NewVirtual(t0)} }

func (r *recClock) Sleep(ctx context.Context, d time.Duration) error {
	r.mu.Lock()
	r.sleeps = append(r.sleeps, d)
	r.mu.Unlock()
	return r.Virtual.Sleep(ctx, d)
}

func (r *recClock) Sleeps() []time.Duration {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Duration(nil), r.sleeps...)
}

// recorded is a request as the test server saw it.
type recorded struct {
	Method, Path string
	Query        map[string][]string
	Header       http.Header
	Body         string
}

// testServer is an httptest.Server whose handler is set per test and which
// records every request.
type testServer struct {
	*httptest.Server
	mu      sync.Mutex
	reqs    []recorded
	handler func(w http.ResponseWriter, r *http.Request, n int) // n: 1-based request number
}

func newTestServer(t testing.TB, h func(w http.ResponseWriter, r *http.Request, n int)) *testServer {
	ts := &testServer{handler: h}
	ts.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts.mu.Lock()
		ts.reqs = append(ts.reqs, recorded{Method: r.Method, Path: r.URL.Path, Query: r.URL.Query(), Header: r.Header.Clone(), Body: string(body)})
		n := len(ts.reqs)
		h := ts.handler
		ts.mu.Unlock()
		h(w, r, n)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func (ts *testServer) SetHandler(h func(w http.ResponseWriter, r *http.Request, n int)) {
	ts.mu.Lock()
	ts.handler = h
	ts.mu.Unlock()
}

func (ts *testServer) Requests() []recorded {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return append([]recorded(nil), ts.reqs...)
}

func (ts *testServer) Count() int {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	return len(ts.reqs)
}

// newTestClient returns a client for ts on a recording virtual clock with a
// fixed jitter seed; opts come after the defaults so they can override them.
func newTestClient(t testing.TB, ts *testServer, hc *http.Client, opts ...Option) (*Client, *recClock) {
	t.Helper()
	clk := newRecClock()
	if hc == nil {
		hc = ts.Client()
	}
	all := append([]Option{WithBaseURL(ts.URL), WithClock(clk), WithRandom(1)}, opts...)
	c, err := New(hc, all...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, clk
}

func writeJSON(w http.ResponseWriter, status int, body string) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, body)
}

func setRate(w http.ResponseWriter, limit, remaining int, reset time.Time) {
	w.Header().Set("x-rate-limit-limit", strconv.Itoa(limit))
	w.Header().Set("x-rate-limit-remaining", strconv.Itoa(remaining))
	unix := reset.Unix()
	if reset.Nanosecond() > 0 {
		unix++ // whole seconds, never before the real reset
	}
	w.Header().Set("x-rate-limit-reset", strconv.FormatInt(unix, 10))
}

// Real-shaped bodies (docs/architecture.md, docs/design/x-api-facts.md).
const (
	bodyUnauthorized = `{"title":"Unauthorized","type":"about:blank","status":401,"detail":"Unauthorized"}`
	bodyAppOnly      = `{"title":"Unsupported Authentication","detail":"Authenticating with OAuth 2.0 Application-Only is forbidden for this endpoint.  Supported authentication types are [OAuth 2.0 User Context].","type":"https://api.twitter.com/2/problems/unsupported-authentication","status":403}`
	bodyNotEnrolled  = `{"client_id":"28364718","detail":"When authenticating requests to the Twitter API v2 endpoints, you must use keys and tokens from a Twitter developer App that is attached to a Project. You can create a project via the developer portal.","registration_url":"https://developer.twitter.com/en/docs/projects/overview","title":"Client Forbidden","required_enrollment":"Appropriate Level of API Access","reason":"client-not-enrolled","type":"https://api.x.com/2/problems/client-forbidden"}`
	bodyCredits      = `{"title":"CreditsDepleted","detail":"Your enrolled account [1780000000000000000] does not have any credits to fulfill this request.","type":"https://api.x.com/2/problems/credits","status":402}`
	bodyInvalid      = `{"errors":[{"parameters":{"max_results":["1000"]},"message":"The ` + "`max_results`" + ` query parameter value [1000] is not between 1 and 100"}],"title":"Invalid Request","detail":"One or more parameters to your request was invalid.","type":"https://api.x.com/2/problems/invalid-request"}`
	bodyNotFound     = `{"title":"Not Found Error","detail":"Could not find user with id: [1].","type":"https://api.twitter.com/2/problems/resource-not-found","status":404}`
	bodyServer       = `{"title":"Service Unavailable","detail":"Service Unavailable","type":"about:blank","status":503}`
	bodyTooMany      = `{"title":"Too Many Requests","detail":"Too Many Requests","type":"about:blank","status":429}`
	bodyTooManyOld   = `{"errors":[{"code":88,"message":"Rate limit exceeded"}]}`
)

// pageBody is a small list_bookmarks page of n posts with ids from first
// down, and a next_token when next is not empty.
func pageBody(first int64, n int, next string) string {
	var b strings.Builder
	b.WriteString(`{"data":[`)
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		id := first - int64(i)
		fmt.Fprintf(&b, `{"id":"%d","text":"post %d","edit_history_tweet_ids":["%d"]}`, id, id, id)
	}
	b.WriteString(`],"meta":{"result_count":`)
	b.WriteString(strconv.Itoa(n))
	if next != "" {
		b.WriteString(`,"next_token":"` + next + `"`)
	}
	b.WriteString(`}}`)
	if n == 0 {
		return `{"meta":{"result_count":0}}`
	}
	return b.String()
}

// realisticPage is a list_bookmarks page as the real API returns it with
// tweet.fields=created_at,author_id,conversation_id,lang,entities,
// public_metrics,referenced_tweets,attachments,possibly_sensitive,
// in_reply_to_user_id,note_tweet and expansions=author_id,
// attachments.media_keys,referenced_tweets.id: n posts, includes, meta.
func realisticPage(n int, next string) []byte {
	var b strings.Builder
	b.WriteString("{\n  \"data\": [")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		id := 1880000000000000000 + int64(n-i)*7919
		author := 1000000 + i%17
		fmt.Fprintf(&b, `
    {
      "edit_history_tweet_ids": ["%[1]d"],
      "conversation_id": "%[1]d",
      "lang": "en",
      "possibly_sensitive": %[3]t,
      "created_at": "2026-01-%02[4]dT%02[5]d:30:00.%03[6]dZ",
      "public_metrics": {"retweet_count": %[7]d, "reply_count": 12, "like_count": %[8]d, "quote_count": 3, "bookmark_count": 41, "impression_count": 120931},
      "author_id": "%[2]d",
      "id": "%[1]d",
      "entities": {
        "urls": [{"start": 120, "end": 143, "url": "https://t.co/AbCdEf%[9]d", "expanded_url": "https://example.com/articles/2026/01/long-read-about-go-generics-%[9]d?utm_source=x", "display_url": "example.com/articles/2026/…", "status": 200, "title": "A long read about Go generics", "unwound_url": "https://example.com/articles/2026/01/long-read-about-go-generics-%[9]d"}],
        "mentions": [{"start": 0, "end": 8, "username": "golang", "id": "113419064"}],
        "hashtags": [{"start": 60, "end": 67, "tag": "golang"}],
        "annotations": [{"start": 20, "end": 26, "probability": 0.8734, "type": "Other", "normalized_text": "Go 1.26"}]
      },
      "attachments": {"media_keys": ["3_%[1]d"]},
      "referenced_tweets": [{"type": "quoted", "id": "%[10]d"}],
      "text": "@golang Go 1.26 ships \"encoding/json\" tweaks &amp; faster maps \u2014 thread \ud83e\uddf5\n\n#golang is %[9]d%% fun: https://t.co/AbCdEf%[9]d"
    }`, id, author, i%5 == 0, 1+i%28, i%24, i%1000, i*3, i*17, i, id-5)
	}
	b.WriteString("\n  ],\n  \"includes\": {\n    \"users\": [")
	for i := 0; i < 17; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `
      {"id": "%d", "name": "Gopher Number %d \ud83d\udc39", "username": "gopher%d", "created_at": "2012-03-04T05:06:07.000Z", "description": "Writes Go. Opinions are mine. Links: https://t.co/xyz%d", "profile_image_url": "https://pbs.twimg.com/profile_images/%d/abc_normal.jpg", "verified": false, "public_metrics": {"followers_count": %d, "following_count": 311, "tweet_count": 12345, "listed_count": 77, "like_count": 8000}}`,
			1000000+i, i, i, i, 1500000000000+i, 1000*i)
	}
	b.WriteString("\n    ],\n    \"media\": [")
	for i := 0; i < n; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		id := 1880000000000000000 + int64(n-i)*7919
		fmt.Fprintf(&b, `
      {"media_key": "3_%d", "type": "photo", "url": "https://pbs.twimg.com/media/G%dabc.jpg", "width": 1200, "height": 675, "alt_text": "A gopher at a desk"}`, id, i)
	}
	b.WriteString("\n    ],\n    \"tweets\": [")
	for i := 0; i < n/4; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `
      {"id": "%d", "text": "The quoted post number %d", "author_id": "%d", "created_at": "2025-12-01T00:00:00.000Z", "edit_history_tweet_ids": ["%d"]}`,
			1880000000000000000+int64(n-i*4)*7919-5, i, 1000000+i%17, 1880000000000000000+int64(n-i*4)*7919-5)
	}
	b.WriteString("\n    ]\n  },\n  \"errors\": [")
	b.WriteString(`
    {"value": "1879999999999999999", "detail": "Could not find tweet with referenced_tweets.id: [1879999999999999999].", "title": "Not Found Error", "resource_type": "tweet", "parameter": "referenced_tweets.id", "resource_id": "1879999999999999999", "type": "https://api.twitter.com/2/problems/resource-not-found"}`)
	b.WriteString("\n  ],\n  \"meta\": {\"result_count\": ")
	b.WriteString(strconv.Itoa(n))
	if next != "" {
		b.WriteString(`, "next_token": "` + next + `"`)
	}
	b.WriteString("}\n}\n")
	// The API sends compact JSON.
	var out bytes.Buffer
	if err := json.Compact(&out, []byte(b.String())); err != nil {
		panic(err)
	}
	return out.Bytes()
}

// outageServer is an HTTP server at a fixed loopback address that can stop
// accepting connections, so that a dial is refused as it is when nothing
// listens, and accept them again.
type outageServer struct {
	t    testing.TB
	URL  string
	addr string
	srv  *http.Server
	mu   sync.Mutex
	ln   net.Listener
	n    int
}

func newOutageServer(t testing.TB, h func(w http.ResponseWriter, r *http.Request, n int)) *outageServer {
	s := &outageServer{t: t}
	s.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.n++
		n := s.n
		s.mu.Unlock()
		h(w, r, n)
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = ln.Addr().String()
	s.URL = "http://" + s.addr
	s.serve(ln)
	t.Cleanup(func() { _ = s.srv.Close() })
	return s
}

func (s *outageServer) serve(ln net.Listener) {
	s.mu.Lock()
	s.ln = ln
	s.mu.Unlock()
	go func() { _ = s.srv.Serve(ln) }()
}

// Stop closes the listener: connections are refused from now on.
func (s *outageServer) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.ln.Close(); err != nil {
		s.t.Errorf("closing the listener: %v", err)
	}
}

// Start listens again at the same address.
func (s *outageServer) Start() {
	ln, err := net.Listen("tcp", s.addr)
	if err != nil {
		s.t.Errorf("listening again at %s: %v", s.addr, err)
		return
	}
	s.serve(ln)
}

// Count is how many requests the server has answered.
func (s *outageServer) Count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// hookClock is a recording virtual clock that calls before(n) ahead of its
// n-th sleep (1-based), when before is set.
type hookClock struct {
	*recClock
	before func(n int)
}

func (h *hookClock) Sleep(ctx context.Context, d time.Duration) error {
	if h.before != nil {
		h.before(len(h.Sleeps()) + 1)
	}
	return h.recClock.Sleep(ctx, d)
}
