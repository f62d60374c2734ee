package client

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"
)

// The wait hook is told about every rate-limit wait before it starts, with
// the same duration the meter records once it has ended; backoff sleeps for
// server errors are not rate-limit waits and are not reported.
func TestWaitHook_CalledWhenARateLimitWaitStarts(t *testing.T) {
	type call struct {
		user string
		op   Operation
		d    time.Duration
	}
	var mu sync.Mutex
	var calls []call
	var sleepsAtCall []int
	var clk *recClock
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch n {
		case 1: // a 429: wait for its reset
			setRate(w, 180, 0, clk.Now().Add(3*time.Minute))
			writeJSON(w, 429, bodyTooMany)
		case 2: // a 503: backoff, not a rate-limit wait
			writeJSON(w, 503, `{"title":"Service Unavailable","status":503}`)
		case 3: // the window is used up: the budget waits before the next request
			setRate(w, 180, 0, clk.Now().Add(5*time.Minute))
			writeJSON(w, 200, pageBody(100, 1, ""))
		default:
			setRate(w, 180, 179, clk.Now().Add(15*time.Minute))
			writeJSON(w, 200, pageBody(100, 1, ""))
		}
	})
	c, clk0 := newTestClient(t, ts, nil, WithWaitHook(func(user string, op Operation, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, call{user, op, d})
		sleepsAtCall = append(sleepsAtCall, len(clk.Sleeps()))
	}))
	clk = clk0
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, _, err := c.ListBookmarks(ctx, testUser, ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 {
		t.Fatalf("hook calls %+v, want two", calls)
	}
	for i, c := range calls {
		if c.user != testUser || c.op != OpListBookmarks {
			t.Errorf("call %d: %+v", i, c)
		}
	}
	// The reset header has one-second resolution, so the budget's wait is
	// within a second of 5m plus the margin (the window was set mid-second).
	if calls[0].d != 3*time.Minute+DefaultResetMargin || calls[1].d <= 5*time.Minute-time.Second || calls[1].d > 5*time.Minute+time.Second+DefaultResetMargin {
		t.Errorf("waits %s and %s, want 3m1s and about 5m1s", calls[0].d, calls[1].d)
	}
	// Each call came before its sleep: 0 sleeps before the first wait,
	// 2 (the 429 wait and the 503 backoff) before the second.
	if len(sleepsAtCall) != 2 || sleepsAtCall[0] != 0 || sleepsAtCall[1] != 2 {
		t.Errorf("sleeps already done at each call: %v, want [0 2]", sleepsAtCall)
	}
	u := c.Meter().Usage(testUser, OpListBookmarks)
	if u.RateLimitWaits != 2 || u.Waited != calls[0].d+calls[1].d {
		t.Errorf("meter %+v", u)
	}
}
