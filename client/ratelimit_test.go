package client

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
)

func Test429_WaitsUntilTheResetPlusMarginNotAFixed15Minutes(t *testing.T) {
	var clk *recClock
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			setRate(w, 180, 0, clk.Now().Add(7*time.Minute+20*time.Second))
			writeJSON(w, 429, bodyTooMany)
			return
		}
		setRate(w, 180, 179, clk.Now().Add(15*time.Minute))
		writeJSON(w, 200, pageBody(100, 1, ""))
	})
	c, clk0 := newTestClient(t, ts, nil)
	clk = clk0
	_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := 7*time.Minute + 20*time.Second + DefaultResetMargin
	if s := clk.Sleeps(); len(s) != 1 || s[0] != want {
		t.Errorf("sleeps %v, want [%s]", s, want)
	}
	if resp.Attempts != 2 || resp.Waited != want || resp.Rate.Remaining != 179 {
		t.Errorf("resp %+v", resp)
	}
	u := c.Meter().Usage(testUser, OpListBookmarks)
	if u.RateLimited != 1 || u.RateLimitWaits != 1 || u.Waited != want || u.Requests != 2 || u.OK != 1 || u.Errors != 0 {
		t.Errorf("usage %+v", u)
	}
}

func Test429_PastTheWaitCapReturnsRateLimitErrorWithReset(t *testing.T) {
	for _, body := range []string{bodyTooMany, bodyTooManyOld} {
		reset := t0.Add(40 * time.Minute)
		ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			setRate(w, 180, 0, reset)
			writeJSON(w, 429, body)
		})
		c, clk := newTestClient(t, ts, nil)
		_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
		var rle *RateLimitError
		if !errors.As(err, &rle) || !errors.Is(err, ErrRateLimited) {
			t.Fatalf("err %T %v", err, err)
		}
		if !rle.Rate.Reset.Equal(reset) || rle.Rate.Limit != 180 || rle.Waited || rle.Budget || rle.Response == nil || rle.Operation != OpListBookmarks {
			t.Errorf("RateLimitError %+v", rle)
		}
		if len(clk.Sleeps()) != 0 || ts.Count() != 1 || resp.Attempts != 1 {
			t.Errorf("sleeps %v, %d requests", clk.Sleeps(), ts.Count())
		}
		msg := err.Error()
		if !strings.Contains(msg, "list_bookmarks: 429 Too Many Requests") || !strings.Contains(msg, "2026-01-15T10:40:00Z") {
			t.Errorf("message %q", msg)
		}
		if body == bodyTooManyOld && !strings.Contains(msg, "code 88: Rate limit exceeded") {
			t.Errorf("legacy message %q", msg)
		}
		// The budget remembers the 429: a second call is refused without sending.
		_, _, err = c.ListBookmarks(context.Background(), testUser, ListOptions{})
		if !errors.As(err, &rle) || !rle.Budget || ts.Count() != 1 {
			t.Errorf("second call: err %v, %d requests", err, ts.Count())
		}
	}
}

func Test429_WaitCapIsConfigurable(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		setRate(w, 50, 0, t0.Add(2*time.Minute))
		writeJSON(w, 429, bodyTooMany)
	})
	c, clk := newTestClient(t, ts, nil, WithRateLimitWaitCap(time.Minute))
	_, _, err := c.ListFolders(context.Background(), testUser, PageOptions{})
	var rle *RateLimitError
	if !errors.As(err, &rle) || rle.Wait != 2*time.Minute+DefaultResetMargin || len(clk.Sleeps()) != 0 {
		t.Errorf("err %v sleeps %v", err, clk.Sleeps())
	}
}

func Test429_GivesUpAfterMaxRateLimitWaits(t *testing.T) {
	var clk *recClock
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		setRate(w, 180, 0, clk.Now().Add(time.Minute))
		writeJSON(w, 429, bodyTooMany)
	})
	c, clk0 := newTestClient(t, ts, nil)
	clk = clk0
	_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	var rle *RateLimitError
	if !errors.As(err, &rle) || !rle.Waited || rle.Budget {
		t.Fatalf("err %v", err)
	}
	if ts.Count() != 3 || resp.Attempts != 3 || len(clk.Sleeps()) != 2 {
		t.Errorf("%d requests, sleeps %v; want 3 requests and 2 waits (maxRateLimitWaits)", ts.Count(), clk.Sleeps())
	}
	if !strings.Contains(err.Error(), "already waited once") {
		t.Errorf("message %q", err)
	}
}

func Test429_WithoutResetHeaderBacksOffExponentially(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n <= 2 {
			writeJSON(w, 429, bodyTooManyOld)
			return
		}
		writeJSON(w, 200, pageBody(5, 1, ""))
	})
	c, clk := newTestClient(t, ts, nil)
	if _, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil {
		t.Fatal(err)
	}
	s := clk.Sleeps()
	if len(s) != 2 || s[0] < 15*time.Second || s[0] > 30*time.Second || s[1] < 30*time.Second || s[1] > 60*time.Second {
		t.Errorf("sleeps %v, want one in [15s,30s] then one in [30s,60s]", s)
	}
}

// A 429 without a reset header but with a Retry-After waits what it asks
// (plus the margin), not the blind backoff.
func Test429_WithoutResetHeaderHonoursRetryAfter(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			w.Header().Set("Retry-After", "3")
			writeJSON(w, 429, bodyTooMany)
			return
		}
		writeJSON(w, 200, pageBody(5, 1, ""))
	})
	c, clk := newTestClient(t, ts, nil)
	if _, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if s := clk.Sleeps(); len(s) != 1 || s[0] != 3*time.Second+DefaultResetMargin {
		t.Errorf("sleeps %v, want 3s and the margin", s)
	}
}

func TestBudget_NeverSendsThe181stRequestInAWindow(t *testing.T) {
	// A server that sends no rate-limit headers, so only the client's own
	// budget (DefaultLimits) stands between it and a 429.
	var clk *recClock
	var mu sync.Mutex
	windowStart, inWindow, maxInWindow := time.Time{}, 0, 0
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		mu.Lock()
		now := clk.Now()
		if windowStart.IsZero() || !now.Before(windowStart.Add(15*time.Minute)) {
			windowStart, inWindow = now, 0
		}
		inWindow++
		maxInWindow = max(maxInWindow, inWindow)
		mu.Unlock()
		writeJSON(w, 200, pageBody(100, 1, ""))
	})

	c, clk0 := newTestClient(t, ts, nil, WithRateLimitWaitCap(0))
	clk = clk0
	ctx := context.Background()
	for i := 0; i < 180; i++ {
		if _, _, err := c.ListBookmarks(ctx, testUser, ListOptions{PageOptions: PageOptions{MaxResults: 1}}); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	if b := c.Budget(testUser, OpListBookmarks); b.Remaining != 0 || b.Limit != 180 || !b.Reset.Equal(t0.Add(15*time.Minute)) {
		t.Errorf("Budget %+v", b)
	}
	_, resp, err := c.ListBookmarks(ctx, testUser, ListOptions{PageOptions: PageOptions{MaxResults: 1}})
	var rle *RateLimitError
	if !errors.As(err, &rle) || !rle.Budget || rle.Response != nil || resp.Attempts != 0 {
		t.Fatalf("181st: err %v", err)
	}
	if !strings.Contains(err.Error(), "request budget for this window used up (180 requests), not sent") {
		t.Errorf("message %q", err)
	}
	if ts.Count() != 180 {
		t.Fatalf("server saw %d requests", ts.Count())
	}
	if u := c.Meter().Usage(testUser, OpListBookmarks); u.Refused != 1 || u.Requests != 180 {
		t.Errorf("usage %+v", u)
	}

	// With the default cap the client waits out the window instead.
	c2, clk2 := newTestClient(t, ts, nil)
	clk = clk2
	mu.Lock()
	windowStart = time.Time{}
	mu.Unlock()
	for i := 0; i < 400; i++ {
		if _, _, err := c2.ListBookmarks(ctx, testUser, ListOptions{}); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	s := clk2.Sleeps()
	if len(s) != 2 || s[0] != 15*time.Minute+DefaultResetMargin {
		t.Errorf("sleeps %v, want two waits of 15m1s", s)
	}
	if maxInWindow > 180 {
		t.Errorf("server saw %d requests in one window", maxInWindow)
	}
}

func TestBudget_FollowsTheServersHeaders(t *testing.T) {
	// Another process has used the token: the server says 3 requests are left.
	var clk *recClock
	reset := t0.Add(5 * time.Minute)
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if clk.Now().Before(reset) {
			if n > 3 {
				setRate(w, 180, 0, reset)
				writeJSON(w, 429, bodyTooMany)
				return
			}
			setRate(w, 180, 3-n, reset)
		} else {
			setRate(w, 180, 179, clk.Now().Add(15*time.Minute))
		}
		writeJSON(w, 200, pageBody(100, 1, ""))
	})
	c, clk0 := newTestClient(t, ts, nil)
	clk = clk0
	for i := 0; i < 4; i++ {
		if _, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil {
			t.Fatal(err)
		}
		if i == 2 {
			if b := c.Budget(testUser, OpListBookmarks); b.Remaining != 0 || !b.Reset.Equal(reset) {
				t.Errorf("after 3: Budget %+v", b)
			}
		}
	}
	if s := clk.Sleeps(); len(s) != 1 || s[0] != 5*time.Minute+DefaultResetMargin {
		t.Errorf("sleeps %v, want one wait to the server's reset", s)
	}
	if u := c.Meter().Usage(testUser, OpListBookmarks); u.RateLimited != 0 || u.Requests != 4 || u.RateLimitWaits != 1 {
		t.Errorf("usage %+v", u)
	}
	if b := c.Budget(testUser, OpListBookmarks); b.Remaining != 179 {
		t.Errorf("new window: Budget %+v", b)
	}
}

func TestBudget_IsPerUserAndPerOperation(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if strings.HasSuffix(r.URL.Path, "/folders") {
			writeJSON(w, 200, `{"meta":{"result_count":0}}`)
			return
		}
		writeJSON(w, 200, pageBody(100, 1, ""))
	})
	c, _ := newTestClient(t, ts, nil, WithLimits(map[Operation]int{OpListBookmarks: 2}), WithRateLimitWaitCap(0))
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if _, _, err := c.ListBookmarks(ctx, "1", ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := c.ListBookmarks(ctx, "1", ListOptions{}); !errors.Is(err, ErrRateLimited) {
		t.Fatalf("user 1's third request: %v", err)
	}
	if _, _, err := c.ListBookmarks(ctx, "2", ListOptions{}); err != nil {
		t.Errorf("user 2 blocked by user 1: %v", err)
	}
	if _, _, err := c.ListFolders(ctx, "1", PageOptions{}); err != nil {
		t.Errorf("list_folders blocked by list_bookmarks: %v", err)
	}
	if b := c.Budget("1", OpListFolders); b.Limit != 50 || b.Remaining != 49 {
		t.Errorf("list_folders budget %+v", b)
	}
	if b := c.Budget("3", OpGetFolder); b.Limit != 50 || b.Remaining != 50 || !b.Reset.IsZero() {
		t.Errorf("unused budget %+v", b)
	}
}

func TestDefaultLimits_AreTheDocumentsPerUserLimits(t *testing.T) {
	want := map[Operation]int{OpListBookmarks: 180, OpListFolders: 50, OpGetFolder: 50, OpAddBookmark: 50, OpRemoveBookmark: 50, OpUsersMe: 75,
		OpCreateComplianceJob: 150, OpGetComplianceJob: 150, OpListComplianceJobs: 150} // the compliance ones per app
	got := DefaultLimits()
	if len(got) != len(want) {
		t.Fatalf("%v", got)
	}
	for op, n := range want {
		if got[op] != n {
			t.Errorf("%s: %d, want %d", op, got[op], n)
		}
	}
	got[OpListBookmarks] = 1
	if DefaultLimits()[OpListBookmarks] != 180 {
		t.Error("DefaultLimits shares its map")
	}
}

// fakeX enforces a per-user, per-path window with the virtual clock, as the
// real API does, and counts the 429s it had to send.
type fakeX struct {
	clk     clock.Clock
	limit   int
	headers bool
	mu      sync.Mutex
	wins    map[string]*fakeWindow
	got429  int
	served  int
}

type fakeWindow struct {
	start time.Time
	count int
}

func (f *fakeX) handle(w http.ResponseWriter, r *http.Request, n int) {
	f.mu.Lock()
	now := f.clk.Now()
	win := f.wins[r.URL.Path]
	if win == nil || !now.Before(win.start.Add(15*time.Minute)) {
		win = &fakeWindow{start: now}
		f.wins[r.URL.Path] = win
	}
	reset := win.start.Add(15 * time.Minute)
	if win.count >= f.limit {
		f.got429++
		f.mu.Unlock()
		if f.headers {
			setRate(w, f.limit, 0, reset)
		}
		writeJSON(w, 429, bodyTooMany)
		return
	}
	win.count++
	f.served++
	rem := f.limit - win.count
	f.mu.Unlock()
	if f.headers {
		setRate(w, f.limit, rem, reset)
	}
	writeJSON(w, 200, pageBody(100, 1, ""))
}

func TestBudget_ConcurrentCallersNeverCauseA429(t *testing.T) {
	for _, headers := range []bool{true, false} {
		f := &fakeX{limit: 180, headers: headers, wins: map[string]*fakeWindow{}}
		ts := newTestServer(t, f.handle)
		c, clk := newTestClient(t, ts, nil)
		f.clk = clk
		var wg sync.WaitGroup
		errs := make(chan error, 1000)
		for g := 0; g < 8; g++ {
			user := []string{"1", "2"}[g%2]
			wg.Go(func() {
				for i := 0; i < 60; i++ {
					if _, _, err := c.ListBookmarks(context.Background(), user, ListOptions{}); err != nil {
						errs <- err
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Errorf("headers=%v: %v", headers, err)
		}
		if f.got429 != 0 || f.served != 480 {
			t.Errorf("headers=%v: server sent %d 429s, served %d", headers, f.got429, f.served)
		}
		if u := c.Meter().Total(); u.RateLimited != 0 || u.Requests != 480 || u.RateLimitWaits == 0 {
			t.Errorf("headers=%v: usage %+v", headers, u)
		}
	}
}

func TestBudget_WaitHonoursTheContext(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, pageBody(100, 1, "")) })
	c, _ := newTestClient(t, ts, nil, WithLimits(map[Operation]int{OpListBookmarks: 1}))
	ctx, cancel := context.WithCancel(context.Background())
	if _, _, err := c.ListBookmarks(ctx, testUser, ListOptions{}); err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, _, err := c.ListBookmarks(ctx, testUser, ListOptions{}); !errors.Is(err, context.Canceled) || ts.Count() != 1 {
		t.Errorf("err %v, %d requests", err, ts.Count())
	}
}

// slowFirstTransport advances the virtual clock before the first request
// reaches the server, as network latency would.
type slowFirstTransport struct {
	clk     *recClock
	latency time.Duration
	once    sync.Once
}

func (s *slowFirstTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	s.once.Do(func() { s.clk.Advance(s.latency) })
	return http.DefaultTransport.RoundTrip(r)
}

func TestBudget_EstimatedWindowCountsFromTheFirstResponse(t *testing.T) {
	// Without headers the server's window starts when the first request
	// arrives, after the client sent it; the client must not reopen its
	// window before the server does.
	f := &fakeX{limit: 180, wins: map[string]*fakeWindow{}}
	ts := newTestServer(t, f.handle)
	clk := newRecClock()
	f.clk = clk
	c, err := New(&http.Client{Transport: &slowFirstTransport{clk: clk, latency: 10 * time.Second}}, WithBaseURL(ts.URL), WithClock(clk), WithRandom(1))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 400; i++ {
		if _, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	if f.got429 != 0 {
		t.Errorf("server sent %d 429s", f.got429)
	}
}

// x-rate-limit-reset is X's clock. With ours ahead of it, a window's reset
// looks past while X still refuses: the client backs off, longer each time,
// instead of sending again a second later and giving up after two 429s.
func Test429_WithTheLocalClockAheadOfXsWaitsTheWindowOut(t *testing.T) {
	const skew = -10 * time.Second // X's clock is ours minus 10 s
	var clk *recClock
	var mu sync.Mutex
	var reset time.Time
	used := 0
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		mu.Lock()
		now := clk.Now().Add(skew)
		if reset.IsZero() || !now.Before(reset) {
			reset, used = now.Truncate(time.Second).Add(15*time.Minute), 0
		}
		used++
		over := used > 3
		setRate(w, 3, max(3-used, 0), reset)
		mu.Unlock()
		if over {
			writeJSON(w, 429, bodyTooMany)
			return
		}
		writeJSON(w, 200, pageBody(100, 1, "ABC"))
	})
	c, clk0 := newTestClient(t, ts, nil, WithLimits(map[Operation]int{OpListBookmarks: 3}))
	clk = clk0
	for page := 1; page <= 5; page++ { // two windows of 3 requests
		if _, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{PageOptions: PageOptions{MaxResults: 1}}); err != nil {
			t.Fatalf("page %d, sleeps %v: %v", page, clk.Sleeps(), err)
		}
	}
}

// A wait cap of 0 means no wait: a 429 is reported at once, not sent again.
func Test429_WithAWaitCapOfZeroIsNotSentAgain(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 429, bodyTooMany) })
	c, clk := newTestClient(t, ts, nil, WithRateLimitWaitCap(0))
	_, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	if !errors.Is(err, ErrRateLimited) || ts.Count() != 1 || len(clk.Sleeps()) != 0 {
		t.Fatalf("%d requests, sleeps %v, err %v", ts.Count(), clk.Sleeps(), err)
	}
}
