package client

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// The deadlines in these tests are real (they bound real I/O on loopback)
// and short; the retries' backoff runs on the virtual clock. Nothing is
// asserted about how long anything took, only about how it ended.

// noRetryBudget leaves max_attempts as the only bound, so that a test does
// not depend on how much real time its stalls take.
func noRetryBudget(attempts int) Option {
	return WithRetryPolicy(RetryPolicy{Budget: -1, MaxAttempts: attempts})
}

// A server that accepts the request and never answers holds a request for
// the header timeout, not forever: a transient fault, retried.
func TestTimeout_AServerThatNeverAnswers(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { <-r.Context().Done() })
	c, _ := newTestClient(t, ts, nil, noRetryBudget(3),
		WithTimeouts(Timeouts{Headers: 50 * time.Millisecond, Request: 10 * time.Second}))
	_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	var te *TimeoutError
	if !errors.As(err, &te) || te.Phase != PhaseHeaders {
		t.Fatalf("error %v, want a header timeout", err)
	}
	if resp.Attempts != 3 || ts.Count() != 3 {
		t.Errorf("%d attempts, %d requests; want 3 (a transient fault, retried)", resp.Attempts, ts.Count())
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "x api: list_bookmarks: request failed after 3 attempt(s) in ") ||
		!strings.HasSuffix(msg, ": no response within 50ms of sending the request (header timeout)") {
		t.Errorf("message %q", msg)
	}
	if u := c.Meter().Total(); u.Errors != 3 || u.Retries != 2 {
		t.Errorf("meter %+v", u)
	}
}

// A server that sends its headers and then its body a byte at a time is
// cut off at the request timeout; the page is retried like one cut short.
func TestTimeout_ABodySentAByteAtATime(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(200)
		for _, b := range []byte(pageBody(100, 10, "")) {
			if _, err := w.Write([]byte{b}); err != nil {
				return
			}
			w.(http.Flusher).Flush()
			select {
			case <-r.Context().Done():
				return
			case <-time.After(20 * time.Millisecond):
			}
		}
	})
	c, _ := newTestClient(t, ts, nil, noRetryBudget(2),
		WithTimeouts(Timeouts{Headers: 10 * time.Second, Request: 150 * time.Millisecond}))
	_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{PageOptions: PageOptions{MaxResults: 10}})
	var te *TimeoutError
	var me *MalformedResponseError
	if !errors.As(err, &te) || te.Phase != PhaseRequest || !errors.As(err, &me) {
		t.Fatalf("error %T %v, want a request timeout while reading the body", err, err)
	}
	if !strings.Contains(err.Error(), "x api: list_bookmarks: 200 response: body was cut short: the response was not received whole within 150ms (request timeout)") {
		t.Errorf("message %q", err)
	}
	if resp.Attempts != 2 {
		t.Errorf("%d attempts, want 2", resp.Attempts)
	}
	if u := c.Meter().Total(); u.PostsUnread != 20 {
		t.Errorf("unread posts %d, want 2 pages of 10", u.PostsUnread)
	}
}

// No connection within the connect timeout means no server was reached:
// like a refused connection, it gets max_attempts, not the retry budget.
func TestTimeout_NoConnectionIsAServerNeverReached(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, pageBody(0, 0, "")) })
	blackhole := &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		},
	}}
	c, _ := newTestClient(t, ts, blackhole, WithRetryPolicy(RetryPolicy{Budget: time.Hour, MaxAttempts: 2}),
		WithTimeouts(Timeouts{Connect: 30 * time.Millisecond}))
	_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	var te *TimeoutError
	if !errors.As(err, &te) || te.Phase != PhaseConnect || !strings.Contains(err.Error(), "no connection to the server within 30ms (connect timeout)") {
		t.Fatalf("error %v, want a connect timeout", err)
	}
	if resp.Attempts != 2 || ts.Count() != 0 {
		t.Errorf("%d attempts, %d requests reached the server; want 2 and 0", resp.Attempts, ts.Count())
	}
}

// A server that answers within the timeouts is not cut off, also when it
// takes a while, and a finished request's timers do not touch the next.
func TestTimeout_ASlowAnswerWithinTheTimeoutsIsRead(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		time.Sleep(30 * time.Millisecond)
		writeJSON(w, 200, pageBody(100, 3, ""))
	})
	c, _ := newTestClient(t, ts, nil, noRetryBudget(1),
		WithTimeouts(Timeouts{Connect: time.Second, Headers: time.Second, Request: 2 * time.Second}))
	for range 3 {
		if p, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil || len(p.Data) != 3 {
			t.Fatalf("%v", err)
		}
	}
}

func TestTimeout_NegativeIsRefused(t *testing.T) {
	if _, err := New(nil, WithTimeouts(Timeouts{Headers: -time.Second})); err == nil {
		t.Error("a negative timeout was accepted")
	}
	c, err := New(nil, WithTimeouts(Timeouts{Headers: time.Second}))
	if err != nil || c.timeouts != (Timeouts{Connect: DefaultConnectTimeout, Headers: time.Second, Request: DefaultRequestTimeout}) {
		t.Errorf("%+v %v", c.timeouts, err)
	}
}
