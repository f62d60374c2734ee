package client

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
)

var errTestStop = errors.New("test stop")

// A stopped client sends nothing: a call made after the stop returns its
// cause at once, and the meter counts no request.
func TestStop_ACallAfterTheStopSendsNothing(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, pageBody(100, 1, "")) })
	stop, cancel := context.WithCancelCause(context.Background())
	c, _ := newTestClient(t, ts, nil, WithStop(stop, 0))
	if _, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil {
		t.Fatalf("before the stop: %v", err)
	}
	cancel(errTestStop)
	_, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	if !errors.Is(err, errTestStop) {
		t.Fatalf("after the stop: %v, want the stop's cause", err)
	}
	if ts.Count() != 1 {
		t.Errorf("%d requests reached the server, want 1", ts.Count())
	}
	if u := c.Meter().Usage(testUser, OpListBookmarks); u.Requests != 1 || u.Errors != 0 {
		t.Errorf("usage %+v, want the one request before the stop", u)
	}
}

// A request in flight when the client is stopped may finish within the
// grace: X billed the page, so it is received and kept. Past the grace, it
// is cancelled, and the call returns the stop's cause.
func TestStop_LetsTheRequestInFlightFinishWithinTheGrace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer time.Duration // when the server answers, after the stop
		grace  time.Duration
		kept   bool
	}{
		{"answered within the grace", 50 * time.Millisecond, 5 * time.Second, true},
		{"not answered within the grace", time.Hour, 100 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			arrived, stopped := make(chan struct{}), make(chan struct{})
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
				close(arrived)
				<-stopped
				select {
				case <-time.After(tc.answer):
					writeJSON(w, 200, pageBody(100, 3, ""))
				case <-r.Context().Done():
				}
			})
			stop, cancel := context.WithCancelCause(context.Background())
			c, _ := newTestClient(t, ts, nil, WithStop(stop, tc.grace))
			type result struct {
				page *PostPage
				err  error
			}
			got := make(chan result, 1)
			go func() {
				page, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
				got <- result{page, err}
			}()
			<-arrived
			cancel(errTestStop)
			close(stopped)
			select {
			case r := <-got:
				if tc.kept && (r.err != nil || len(r.page.Data) != 3) {
					t.Errorf("the page in flight was not kept: %v", r.err)
				}
				if !tc.kept && !errors.Is(r.err, errTestStop) {
					t.Errorf("err = %v, want the stop's cause", r.err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the call did not return after the stop")
			}
			if _, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); !errors.Is(err, errTestStop) || ts.Count() != 1 {
				t.Errorf("the next call: %v, %d requests; want the stop's cause and nothing sent", err, ts.Count())
			}
		})
	}
}

// A wait for a rate-limit window ends at the stop, on the wall clock as on
// any other: an 11-minute wait does not hold a stopped export.
func TestStop_EndsARateLimitWait(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		setRate(w, 180, 0, time.Now().Add(11*time.Minute))
		writeJSON(w, 429, bodyTooMany)
	})
	stop, cancel := context.WithCancelCause(context.Background())
	waiting := make(chan struct{})
	c, err := New(ts.Client(), WithBaseURL(ts.URL), WithClock(clock.Real{}), WithStop(stop, time.Minute),
		WithWaitHook(func(string, Operation, time.Duration) { close(waiting) }))
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
		errc <- err
	}()
	<-waiting
	cancel(errTestStop)
	select {
	case err := <-errc:
		if !errors.Is(err, errTestStop) {
			t.Errorf("err = %v, want the stop's cause", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the wait did not end at the stop")
	}
	if err := c.Sleep(context.Background(), time.Hour); !errors.Is(err, errTestStop) {
		t.Errorf("Sleep after the stop: %v, want the stop's cause at once", err)
	}
}
