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
	c, _ := newTestClient(t, ts, nil, WithStop(stop))
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

// A request in flight when the client is stopped is cancelled: the call
// returns the stop's cause without waiting for the answer.
func TestStop_CancelsTheRequestInFlight(t *testing.T) {
	arrived, release := make(chan struct{}), make(chan struct{})
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		close(arrived)
		select {
		case <-release:
		case <-r.Context().Done():
		}
	})
	defer close(release)
	stop, cancel := context.WithCancelCause(context.Background())
	c, _ := newTestClient(t, ts, nil, WithStop(stop))
	errc := make(chan error, 1)
	go func() {
		_, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
		errc <- err
	}()
	<-arrived
	cancel(errTestStop)
	select {
	case err := <-errc:
		if !errors.Is(err, errTestStop) {
			t.Errorf("err = %v, want the stop's cause", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call did not return after the stop")
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
	c, err := New(ts.Client(), WithBaseURL(ts.URL), WithClock(clock.Real{}), WithStop(stop),
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
