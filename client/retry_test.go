package client

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// noKeepAlive is an HTTP client that opens a connection per request, so a
// connection the server kills is not retried by net/http itself.
func noKeepAlive() *http.Client {
	return &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
}

// kill closes the connection without a response; rst makes it a reset.
func kill(t testing.TB, w http.ResponseWriter, rst bool) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		t.Errorf("hijack: %v", err)
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok && rst {
		_ = tc.SetLinger(0)
	}
	_ = conn.Close()
}

// checkBackoff asserts full-jitter sleeps: sleep n lies in [0, min(max, base·2^(n-1))].
func checkBackoff(t *testing.T, sleeps []time.Duration, want int, base, maxDelay time.Duration) {
	t.Helper()
	if len(sleeps) != want {
		t.Fatalf("%d sleeps %v, want %d", len(sleeps), sleeps, want)
	}
	ceil := base
	for i, d := range sleeps {
		if d < 0 || d > ceil {
			t.Errorf("sleep %d = %s, want within [0, %s]", i+1, d, ceil)
		}
		ceil = min(ceil*2, maxDelay)
	}
}

func TestRetry_5xxBacksOffExponentiallyWithFullJitterThenSucceeds(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch n {
		case 1:
			writeJSON(w, 503, bodyServer)
		case 2:
			writeJSON(w, 500, `{"title":"Internal Server Error"}`)
		case 3:
			writeJSON(w, 502, `<html>Bad Gateway</html>`)
		default:
			writeJSON(w, 200, pageBody(100, 3, ""))
		}
	})
	c, clk := newTestClient(t, ts, nil)
	page, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	if err != nil || len(page.Data) != 3 {
		t.Fatalf("err %v", err)
	}
	sleeps := clk.Sleeps()
	checkBackoff(t, sleeps, 3, 500*time.Millisecond, 30*time.Second)
	var total time.Duration
	for _, d := range sleeps {
		total += d
	}
	if resp.Attempts != 4 || resp.Waited != total || resp.PostsReturned != 3 {
		t.Errorf("resp attempts %d waited %s (sleeps %s) posts %d", resp.Attempts, resp.Waited, total, resp.PostsReturned)
	}
	u := c.Meter().Usage(testUser, OpListBookmarks)
	if u.Requests != 4 || u.Errors != 3 || u.Retries != 3 || u.Backoff != total || u.OK != 1 || u.PostsReturned != 3 {
		t.Errorf("usage %+v", u)
	}
}

func TestRetry_BackoffIsCappedAndJittered(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 503, bodyServer) })
	pol := RetryPolicy{Budget: -1, MaxAttempts: 8, BaseDelay: 2 * time.Second, MaxDelay: 5 * time.Second}
	c, clk := newTestClient(t, ts, nil, WithRetryPolicy(pol))
	_, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	if !errors.Is(err, ErrServer) {
		t.Fatalf("err %v", err)
	}
	checkBackoff(t, clk.Sleeps(), 7, 2*time.Second, 5*time.Second)

	// Full jitter: over many retries the sleeps spread over [0, ceiling].
	ts2 := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n%2 == 1 {
			writeJSON(w, 500, ``)
			return
		}
		writeJSON(w, 200, pageBody(1, 1, ""))
	})
	c2, clk2 := newTestClient(t, ts2, nil, WithLimits(map[Operation]int{OpListBookmarks: 0}))
	for i := 0; i < 200; i++ {
		if _, _, err := c2.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	lo, hi := time.Hour, time.Duration(0)
	for _, d := range clk2.Sleeps() {
		lo, hi = min(lo, d), max(hi, d)
	}
	if lo > 50*time.Millisecond || hi < 450*time.Millisecond || hi > 500*time.Millisecond {
		t.Errorf("first-retry sleeps span [%s, %s], want about [0, 500ms]", lo, hi)
	}
}

// Issue 13.4: a walk failed after 4 attempts at one request and threw away
// the posts it had billed. A transient fault is retried while the call's
// retry budget lasts, however many attempts that takes.
func TestRetry_TransientFaultsAreRetriedWhileTheBudgetLasts(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch {
		case n > 12:
			writeJSON(w, 200, pageBody(100, 2, ""))
		case n%3 == 0:
			kill(t, w, true)
		case n%3 == 1:
			writeJSON(w, 502, bodyServer)
		default:
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(200)
			_, _ = w.Write([]byte(`{"data":[`))
		}
	})
	c, clk := newTestClient(t, ts, noKeepAlive())
	page, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	if err != nil || len(page.Data) != 2 {
		t.Fatalf("err %v", err)
	}
	if resp.Attempts != 13 || len(clk.Sleeps()) != 12 {
		t.Errorf("%d attempts, sleeps %v; want 13 and 12", resp.Attempts, clk.Sleeps())
	}
	checkBackoff(t, clk.Sleeps(), 12, 500*time.Millisecond, 30*time.Second)
}

// When every attempt fails, the call gives up once its budget is spent:
// the backoff never sleeps past it, and the error says how long it tried.
func TestRetry_GivesUpWhenTheRetryBudgetIsSpent(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 503, bodyServer) })
	c, clk := newTestClient(t, ts, nil, WithRetryPolicy(RetryPolicy{Budget: 2 * time.Minute}))
	_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || !errors.Is(err, ErrServer) || apiErr.Status != 503 || apiErr.Response == nil {
		t.Fatalf("err %v", err)
	}
	if spent := clk.Now().Sub(t0); spent != 2*time.Minute || resp.Waited != spent {
		t.Errorf("clock moved %s, waited %s; want the budget, 2m", spent, resp.Waited)
	}
	if resp.Attempts != ts.Count() || resp.Attempts < 6 {
		t.Errorf("%d attempts, %d requests", resp.Attempts, ts.Count())
	}
	if !strings.Contains(err.Error(), "503 Service Unavailable") || !strings.Contains(err.Error(), "attempts in 2m0s") {
		t.Errorf("message %q", err)
	}
}

// With no time budget, MaxAttempts is what it was before there was one: the
// attempts a call gets. It is also the fewest a call gets when its budget is
// spent.
func TestRetry_MaxAttemptsIsTheFloorPastTheBudget(t *testing.T) {
	for _, budget := range []time.Duration{-1, time.Millisecond} {
		ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 503, bodyServer) })
		c, clk := newTestClient(t, ts, nil, WithRetryPolicy(RetryPolicy{Budget: budget, MaxAttempts: 3}))
		_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
		if !errors.Is(err, ErrServer) || resp.Attempts != 3 || len(clk.Sleeps()) != 2 {
			t.Errorf("budget %s: %d attempts, sleeps %v, err %v; want 3 attempts", budget, resp.Attempts, clk.Sleeps(), err)
		}
	}
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 503, bodyServer) })
	c, _ := newTestClient(t, ts, nil, WithRetryPolicy(RetryPolicy{Budget: -1, MaxAttempts: 1}))
	if _, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); resp.Attempts != 1 || !errors.Is(err, ErrServer) {
		t.Errorf("MaxAttempts 1 without a budget: %d attempts, err %v", resp.Attempts, err)
	}
}

// A Retry-After on a 5xx (seconds or an HTTP date) is waited for instead of
// the backoff; one longer than what is left of the budget ends the call at
// once, since the server says it will not be ready in time.
func TestRetry_RetryAfterIsHonoured(t *testing.T) {
	for _, tc := range []struct {
		header     func(now time.Time) string
		wantSleeps []time.Duration
		wantErr    bool
	}{
		{func(time.Time) string { return "7" }, []time.Duration{7 * time.Second}, false},
		{func(now time.Time) string { return now.Add(90 * time.Second).UTC().Format(http.TimeFormat) }, []time.Duration{90 * time.Second}, false},
		{func(time.Time) string { return "3600" }, nil, true},
	} {
		var clk *recClock
		ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			if n == 1 {
				w.Header().Set("Retry-After", tc.header(clk.Now()))
				writeJSON(w, 503, bodyServer)
				return
			}
			writeJSON(w, 200, pageBody(100, 1, ""))
		})
		c, clk0 := newTestClient(t, ts, nil)
		clk = clk0
		_, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
		if (err != nil) != tc.wantErr || !slices.Equal(clk.Sleeps(), tc.wantSleeps) {
			t.Errorf("Retry-After %q: sleeps %v, err %v; want sleeps %v", tc.header(t0), clk.Sleeps(), err, tc.wantSleeps)
		}
	}
}

// The time spent waiting for a rate-limit window is not taken from the
// retry budget: a 429 in the middle of a run of 5xx does not shorten it.
func TestRetry_RateLimitWaitsDoNotCountAgainstTheBudget(t *testing.T) {
	var clk *recClock
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch {
		case n == 2:
			setRate(w, 180, 0, clk.Now().Add(10*time.Minute))
			writeJSON(w, 429, bodyTooMany)
		case n < 6:
			writeJSON(w, 500, bodyServer)
		default:
			writeJSON(w, 200, pageBody(100, 1, ""))
		}
	})
	c, clk0 := newTestClient(t, ts, nil, WithRetryPolicy(RetryPolicy{Budget: time.Minute, MaxAttempts: 1, BaseDelay: 10 * time.Second, MaxDelay: 10 * time.Second}))
	clk = clk0
	if _, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil || resp.Attempts != 6 {
		t.Fatalf("err %v after %d attempts (sleeps %v)", err, resp.Attempts, clk.Sleeps())
	}
}

func TestRetry_ConnectionResetAndCloseAreRetried(t *testing.T) {
	for _, rst := range []bool{true, false} {
		ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			if n <= 2 {
				kill(t, w, rst)
				return
			}
			writeJSON(w, 200, pageBody(100, 2, ""))
		})
		c, clk := newTestClient(t, ts, noKeepAlive())
		page, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
		if err != nil || len(page.Data) != 2 {
			t.Fatalf("rst=%v: err %v", rst, err)
		}
		if ts.Count() != 3 || resp.Attempts != 3 {
			t.Errorf("rst=%v: %d requests, %d attempts", rst, ts.Count(), resp.Attempts)
		}
		checkBackoff(t, clk.Sleeps(), 2, 500*time.Millisecond, 30*time.Second)
		if u := c.Meter().Usage(testUser, OpListBookmarks); u.Errors != 2 || u.Requests != 3 || u.OK != 1 {
			t.Errorf("rst=%v: usage %+v", rst, u)
		}
	}
}

func TestRetry_ConnectionErrorsGiveUpWithAClearError(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { kill(t, w, true) })
	c, _ := newTestClient(t, ts, noKeepAlive(), WithRetryPolicy(RetryPolicy{Budget: 20 * time.Second}))
	_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	if err == nil || resp.Attempts < 4 {
		t.Fatalf("err %v attempts %d", err, resp.Attempts)
	}
	if msg := err.Error(); !strings.Contains(msg, fmt.Sprintf("x api: list_bookmarks: request failed after %d attempt(s) in 20s", resp.Attempts)) {
		t.Errorf("message %q", msg)
	}
}

// A server that was never reached (nothing listens at the address, or the
// name does not resolve) is a wrong base_url or no network far more often
// than a server in trouble: the call gets MaxAttempts tries, not the budget.
func TestRetry_AnUnreachedServerGetsMaxAttemptsNotTheBudget(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	clk := newRecClock()
	c, err := New(noKeepAlive(), WithBaseURL("http://"+addr), WithClock(clk), WithRandom(1),
		WithRetryPolicy(RetryPolicy{Budget: 5 * time.Minute, MaxAttempts: 3}))
	if err != nil {
		t.Fatal(err)
	}
	_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	if err == nil || resp.Attempts != 3 || len(clk.Sleeps()) != 2 {
		t.Fatalf("%d attempts, sleeps %v, err %v; want 3 attempts", resp.Attempts, clk.Sleeps(), err)
	}
	if !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("message %q", err)
	}
}

// Issue 13.4: once the server has answered, a refused connection is a blip
// in the middle of a walk (a network drop, a load balancer refusing
// connections during a deploy), not a wrong base_url: it is retried within
// the retry budget like any other transient fault, past MaxAttempts, rather
// than fail the walk and throw away what it billed.
func TestRetry_ConnectionRefusedAfterTheServerAnsweredIsRetriedWithinTheBudget(t *testing.T) {
	srv := newOutageServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, pageBody(100, 2, "")) })
	clk := &hookClock{recClock: newRecClock()}
	c, err := New(noKeepAlive(), WithBaseURL(srv.URL), WithClock(clk), WithRandom(1),
		WithRetryPolicy(RetryPolicy{Budget: 5 * time.Minute, MaxAttempts: 3}))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil {
		t.Fatalf("first page: %v", err)
	}
	srv.Stop()
	const refused = 7 // more than twice MaxAttempts
	clk.before = func(n int) {
		if n == refused {
			srv.Start()
		}
	}
	page, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	if err != nil || len(page.Data) != 2 {
		t.Fatalf("after %d attempts (sleeps %v): err %v", resp.Attempts, clk.Sleeps(), err)
	}
	if resp.Attempts != refused+1 || srv.Count() != 2 {
		t.Errorf("%d attempts, %d requests answered; want %d and 2", resp.Attempts, srv.Count(), refused+1)
	}
}

func TestRetry_TruncatedBodyIsRetriedAndMeteredAsUnread(t *testing.T) {
	full := pageBody(1880000000000000100, 5, "")
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			// Declares the whole page, sends a fifth of it, then the
			// server closes the connection.
			w.Header().Set("Content-Length", strconv.Itoa(len(full)))
			w.WriteHeader(200)
			_, _ = w.Write([]byte(full[:len(full)/5]))
			return
		}
		writeJSON(w, 200, full)
	})
	c, clk := newTestClient(t, ts, nil)
	page, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{PageOptions: PageOptions{MaxResults: 5}})
	if err != nil || len(page.Data) != 5 {
		t.Fatalf("err %v", err)
	}
	if resp.Attempts != 2 || len(clk.Sleeps()) != 1 {
		t.Errorf("attempts %d sleeps %v", resp.Attempts, clk.Sleeps())
	}
	u := c.Meter().Usage(testUser, OpListBookmarks)
	// The cut page was billed, but for how many posts is not known: it is
	// counted as unread (at most its page size), not priced.
	if u.PostsReturned != 5 || u.PostsUnread != 5 || u.Errors != 1 || u.OK != 1 || u.USD != 5*x.Post {
		t.Errorf("usage %+v", u)
	}
}

func TestRetry_MalformedBodyIsRetried(t *testing.T) {
	handler := func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			writeJSON(w, 200, `{"data":[{"id":"1","text":"cut`)
			return
		}
		writeJSON(w, 200, pageBody(100, 1, ""))
	}
	ts := newTestServer(t, handler)
	c, _ := newTestClient(t, ts, nil)
	if _, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil || resp.Attempts != 2 {
		t.Fatalf("default policy: err %v", err)
	}
	if u := c.Meter().Usage(testUser, OpListBookmarks); u.PostsUnread != 10 {
		t.Errorf("PostsUnread %d, want the default page size 10", u.PostsUnread)
	}
}

// A body read whole and valid JSON, but not what the operation returns,
// would come back the same: it is not asked for again (that would bill it
// again), and the error says what was wrong. The posts in it were billed and
// are counted; a refused page without posts costs nothing.
func TestNoRetry_WellFormedBodyOfTheWrongShape(t *testing.T) {
	for body, posts := range map[string]int{
		`{"data":{"id":"1"},"meta":{"result_count":1}}`: 0, // data not a list
		`{"data":[{"id":"1"}]}`:                         1, // no meta
		`{"meta":{"result_count":"none"}}`:              0,
	} {
		ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, body) })
		c, clk := newTestClient(t, ts, nil)
		_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{PageOptions: PageOptions{MaxResults: 90}})
		if !errors.Is(err, ErrMalformedResponse) || ts.Count() != 1 || resp.Attempts != 1 || len(clk.Sleeps()) != 0 {
			t.Errorf("%s: %d requests, sleeps %v, err %v", body, ts.Count(), clk.Sleeps(), err)
		}
		if u := c.Meter().Usage(testUser, OpListBookmarks); u.PostsReturned != posts || u.PostsUnread != 0 || u.USD != float64(posts)*x.Post {
			t.Errorf("%s: usage %+v; want %d posts billed", body, u, posts)
		}
	}
}

// An element of "errors" whose fields are not strings (a list of values, a
// numeric id) does not cost the page: its posts are kept, the odd field as
// its JSON text.
func TestAPartialErrorOfAnOddShapeKeepsThePage(t *testing.T) {
	body := `{"data":[{"id":"1","text":"a"},{"id":"2","text":"b"}],"errors":[{"title":"Not Found Error","value":["3","4"],"resource_id":5}],"meta":{"result_count":2}}`
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, body) })
	c, _ := newTestClient(t, ts, nil)
	page, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 2 || len(page.Errors) != 1 {
		t.Fatalf("%d posts and %d errors, want 2 and 1", len(page.Data), len(page.Errors))
	}
	if e := page.Errors[0]; e.Title != "Not Found Error" || e.Value != `["3","4"]` || e.ResourceID != "5" {
		t.Errorf("partial error %+v", e)
	}
}

func TestNoRetry_On4xxIncluding402(t *testing.T) {
	for status, body := range map[int]string{400: bodyInvalid, 401: bodyUnauthorized, 402: bodyCredits, 403: bodyAppOnly, 404: bodyNotFound, 409: `{}`, 422: `{}`} {
		ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, status, body) })
		c, clk := newTestClient(t, ts, nil)
		_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
		if err == nil || ts.Count() != 1 || resp.Attempts != 1 || len(clk.Sleeps()) != 0 {
			t.Errorf("%d: %d requests, sleeps %v, err %v", status, ts.Count(), clk.Sleeps(), err)
		}
	}
}

func TestRetry_StopsWhenTheContextIsCanceled(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	stop := errors.New("sync stopped")
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		cancel(stop)
		writeJSON(w, 503, bodyServer)
	})
	c, _ := newTestClient(t, ts, nil)
	_, resp, err := c.ListBookmarks(ctx, testUser, ListOptions{})
	if !errors.Is(err, stop) || ts.Count() != 1 || resp.Attempts != 1 {
		t.Errorf("err %v, %d requests", err, ts.Count())
	}
	// A context canceled before the call sends nothing.
	_, _, err = c.Me(ctx)
	if err == nil || ts.Count() != 1 {
		t.Errorf("canceled context: err %v, %d requests", err, ts.Count())
	}
}

type failingTransport struct{ err error }

func (f failingTransport) RoundTrip(*http.Request) (*http.Response, error) { return nil, f.err }

func TestRetry_AuthTransportErrorsAreNotRetried(t *testing.T) {
	c, err := New(&http.Client{Transport: failingTransport{errors.New("oauth2: token expired and refresh token is not set")}},
		WithClock(newRecClock()), WithBaseURL("http://127.0.0.1:1"))
	if err != nil {
		t.Fatal(err)
	}
	_, resp, err := c.Me(context.Background())
	if err == nil || resp.Attempts != 1 || !strings.Contains(err.Error(), "refresh token is not set") {
		t.Errorf("err %v attempts %d", err, resp.Attempts)
	}
}
