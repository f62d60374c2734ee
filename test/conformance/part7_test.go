package conformance

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// Part 7, L118: "Per-user request limit for the 15-minute window is exceeded
// | 429". With the client's own budget off, the 181st list request in a
// window is answered 429, whose reset is the end of the window; after it the
// user may read again.
func Test429WhenPerUserWindowExceeded(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 5)
	c := e.client(e.sim.IssueToken(alice), noBudget()...)
	ctx := context.Background()
	for i := range 180 {
		if _, _, err := c.ListBookmarks(ctx, alice, client.ListOptions{PageOptions: client.PageOptions{MaxResults: 1}}); err != nil {
			t.Fatalf("request %d: %v", i+1, err)
		}
	}
	_, resp, err := c.ListBookmarks(ctx, alice, client.ListOptions{PageOptions: client.PageOptions{MaxResults: 1}})
	var rl *client.RateLimitError
	if !errors.As(err, &rl) || !errors.Is(err, client.ErrRateLimited) {
		t.Fatalf("request 181: err = %v, want 429", err)
	}
	if rl.Budget || rl.Response == nil || rl.Response.StatusCode != 429 || resp.StatusCode != 429 {
		t.Fatalf("request 181 was not a server 429: %+v", rl)
	}
	if want := t0.Add(15 * time.Minute); rl.Rate.Limit != 180 || rl.Rate.Remaining != 0 || !rl.Rate.Reset.Equal(want) {
		t.Errorf("429 rate = %+v, want limit 180, remaining 0, reset %v", rl.Rate, want)
	}
	if u := e.usage(alice, xsim.OpListBookmarks); u.RateLimited != 1 || u.OK != 180 || u.PostsReturned != 180 {
		t.Errorf("simulator: %+v", u)
	}
	e.clk.Set(rl.Rate.Reset)
	if _, _, err := c.ListBookmarks(ctx, alice, client.ListOptions{PageOptions: client.PageOptions{MaxResults: 1}}); err != nil {
		t.Errorf("after the reset: %v", err)
	}
}

// Facts (Part 7, L123, "Error body shape: not shown"): "429: either
// `{"title":"Too Many Requests",...}` or the legacy
// `{"errors":[{"code":88,"message":"Rate limit exceeded"}]}`". Both are
// understood as a rate limit.
func TestBothRateLimitBodiesAreUnderstood(t *testing.T) {
	for _, legacy := range []bool{false, true} {
		e := newEnv(t, xsim.Options{LegacyRateLimitBody: legacy, Limits: map[string]int{xsim.OpListBookmarks: 2}})
		e.sim.SeedBookmarks(alice, 5)
		c := e.client(e.sim.IssueToken(alice), noBudget()...)
		var err error
		for range 3 {
			_, _, err = c.ListBookmarks(context.Background(), alice, client.ListOptions{})
		}
		var rl *client.RateLimitError
		want := "Too Many Requests"
		if legacy {
			want = "code 88: Rate limit exceeded"
		}
		if !errors.As(err, &rl) || rl.Response == nil || !strings.Contains(rl.Message, want) {
			t.Errorf("legacy=%v: err = %v, want a 429 with %q", legacy, err, want)
		}
	}
}

// Facts (Part 7): "Every response carries `x-rate-limit-limit`,
// `x-rate-limit-remaining`, `x-rate-limit-reset` (Unix epoch seconds). Wait
// until the reset, never a fixed 15 minutes." A 429 whose reset is seconds
// away costs seconds of (virtual) waiting, then the call succeeds.
func TestClientWaitsUntilTheResetNotAFixed15Minutes(t *testing.T) {
	faults := xsim.Faults{RateLimitRate: 0.5, Operations: []string{xsim.OpListBookmarks}}
	for faults.Seed = 1; ; faults.Seed++ {
		if faults.Decide(1).Kind == xsim.FaultRateLimit && faults.Decide(2).Kind == xsim.FaultNone {
			break
		}
	}
	e := newEnv(t, xsim.Options{Faults: faults})
	want := e.sim.SeedBookmarks(alice, 10)
	c := e.client(e.sim.IssueToken(alice))
	p, resp := page(t, c, alice, 10, "")
	if len(p.Data) != len(want) {
		t.Fatalf("got %d posts", len(p.Data))
	}
	reset := t0.Add(faults.Decide(1).ResetIn).Truncate(time.Second)
	if reset.Before(t0.Add(faults.Decide(1).ResetIn)) {
		reset = reset.Add(time.Second)
	}
	wantWait := reset.Add(client.DefaultResetMargin).Sub(t0)
	if resp.Attempts != 2 || resp.Waited != wantWait || e.clk.Now().Sub(t0) != wantWait {
		t.Errorf("attempts %d, waited %v, clock moved %v; want 2 attempts and a wait of %v (reset + 1s margin)",
			resp.Attempts, resp.Waited, e.clk.Now().Sub(t0), wantWait)
	}
	if u := c.Meter().Usage(alice, client.OpListBookmarks); u.RateLimited != 1 || u.RateLimitWaits != 1 {
		t.Errorf("client meter = %+v", u)
	}
}

// Facts (Part 7): every response carries the three x-rate-limit headers,
// error responses too; the client reads them into Response.Rate.
func TestEveryResponseCarriesRateLimitHeaders(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 5)
	e.sim.SeedBookmarks(bob, 5)
	ctx := context.Background()
	c := e.client(e.sim.IssueToken(alice))
	cases := map[string]func() (*client.Response, error){
		"200": func() (*client.Response, error) {
			_, r, err := c.ListBookmarks(ctx, alice, client.ListOptions{})
			return r, err
		},
		"400": func() (*client.Response, error) {
			_, r, err := c.ListBookmarks(ctx, alice, client.ListOptions{PageOptions: client.PageOptions{PaginationToken: "00000000000000000000"}})
			return r, err
		},
		"401": func() (*client.Response, error) {
			_, r, err := e.client("not-a-token").ListBookmarks(ctx, alice, client.ListOptions{})
			return r, err
		},
		"403": func() (*client.Response, error) {
			_, r, err := c.ListBookmarks(ctx, bob, client.ListOptions{})
			return r, err
		},
		"404": func() (*client.Response, error) {
			_, r, err := c.GetFolder(ctx, alice, "9", client.PageOptions{})
			return r, err
		},
	}
	for status, call := range cases {
		resp, _ := call()
		if resp == nil || resp.Response == nil || resp.Status[:3] != status {
			t.Errorf("%s: response %+v", status, resp)
			continue
		}
		h := resp.Header
		if h.Get("x-rate-limit-limit") == "" || h.Get("x-rate-limit-remaining") == "" || h.Get("x-rate-limit-reset") == "" {
			t.Errorf("%s: headers %v", status, h)
		}
		if resp.Rate.Limit == 0 || resp.Rate.Reset.IsZero() {
			t.Errorf("%s: Rate = %+v", status, resp.Rate)
		}
	}
}

// Facts (Part 7, L122-123, "Status codes other than 429" and "Error body
// shape: not shown"): "Problem details (RFC 7807):
// `{"title","detail","type","status"}`; match on status and `title`, never on
// the host inside `type`". Each error status the simulator gives is parsed
// into the client's APIError and matched by its sentinel.
func TestErrorBodiesAreProblemDetails(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 5)
	e.sim.SeedBookmarks(bob, 5)
	ctx := context.Background()
	c := e.client(e.sim.IssueToken(alice))
	cases := []struct {
		name     string
		call     func() error
		status   int
		sentinel error
		title    string
	}{
		{"400 bad token", func() error {
			_, _, err := c.ListBookmarks(ctx, alice, client.ListOptions{PageOptions: client.PageOptions{PaginationToken: "00000000000000000000"}})
			return err
		}, 400, client.ErrInvalidRequest, "Invalid Request"},
		{"401 bad token", func() error {
			_, _, err := e.client("nope").ListBookmarks(ctx, alice, client.ListOptions{})
			return err
		}, 401, client.ErrUnauthorized, "Unauthorized"},
		{"403 app-only", func() error {
			_, _, err := e.client(e.sim.IssueAppOnlyToken()).ListBookmarks(ctx, alice, client.ListOptions{})
			return err
		}, 403, client.ErrAppOnlyToken, "Unsupported Authentication"},
		{"403 other user", func() error { _, _, err := c.ListBookmarks(ctx, bob, client.ListOptions{}); return err }, 403, client.ErrForbidden, "Forbidden"},
		{"404 unknown user", func() error {
			_, _, err := e.client(e.sim.IssueToken("1999")).ListBookmarks(ctx, "1998", client.ListOptions{})
			return err
		}, 404, client.ErrNotFound, "Not Found Error"},
		{"404 unknown folder", func() error { _, _, err := c.GetFolder(ctx, alice, "4", client.PageOptions{}); return err }, 404, client.ErrNotFound, "Not Found Error"},
	}
	for _, tc := range cases {
		err := tc.call()
		var apiErr *client.APIError
		if !errors.As(err, &apiErr) || !errors.Is(err, tc.sentinel) {
			t.Errorf("%s: err = %v", tc.name, err)
			continue
		}
		if apiErr.Status != tc.status || apiErr.Title != tc.title || apiErr.Detail == "" || apiErr.Type == "" {
			t.Errorf("%s: status %d title %q detail %q type %q", tc.name, apiErr.Status, apiErr.Title, apiErr.Detail, apiErr.Type)
		}
		if apiErr.Type != "about:blank" && !strings.Contains(apiErr.Type, "/2/problems/") {
			t.Errorf("%s: type %q", tc.name, apiErr.Type)
		}
	}
}

// Facts (Part 7): "401 [...]: expired or bad token." An expired or revoked
// access token is 401, with the hint to log in again, and never retried.
func TestExpiredOrRevokedTokenIs401NotRetried(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 5)
	expiring := e.sim.IssueTokenWithExpiry(alice, 2*time.Hour)
	revoked := e.sim.IssueToken(alice)
	c := e.client(expiring)
	if _, _, err := c.ListBookmarks(context.Background(), alice, client.ListOptions{}); err != nil {
		t.Fatalf("before expiry: %v", err)
	}
	e.clk.Advance(2 * time.Hour)
	e.sim.RevokeToken(revoked)
	for name, c := range map[string]*client.Client{"expired": c, "revoked": e.client(revoked)} {
		_, resp, err := c.ListBookmarks(context.Background(), alice, client.ListOptions{})
		var apiErr *client.APIError
		if !errors.Is(err, client.ErrUnauthorized) || !errors.As(err, &apiErr) || apiErr.Hint != client.HintUnauthorized {
			t.Errorf("%s: err = %v", name, err)
			continue
		}
		if resp.Attempts != 1 || !strings.Contains(err.Error(), "run `cq-source-x login` again") {
			t.Errorf("%s: %d attempts; message %q", name, resp.Attempts, err)
		}
	}
	if u := e.usage(alice, xsim.OpListBookmarks); u.ByStatus[401] != 2 {
		t.Errorf("simulator saw %d 401s, want 2 (no retries)", u.ByStatus[401])
	}
}

// Facts (Part 7): "402 `"title":"CreditsDepleted"`: out of credits. Terminal;
// never retry." A page that would bill more posts than the credits left is
// refused, once, and bills nothing.
func TestCreditsDepletedIs402TerminalAndNeverRetried(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 50)
	e.sim.SetCredits(12)
	c := e.client(e.sim.IssueToken(alice))
	p, _ := page(t, c, alice, 10, "")
	for range 3 { // a caller that tries again gets one request per call, no loop
		_, resp, err := c.ListBookmarks(context.Background(), alice, client.ListOptions{PageOptions: client.PageOptions{MaxResults: 10, PaginationToken: p.Meta.NextToken}})
		var apiErr *client.APIError
		if !errors.Is(err, client.ErrCreditsDepleted) || !errors.As(err, &apiErr) || apiErr.Status != 402 || apiErr.Title != "CreditsDepleted" {
			t.Fatalf("err = %v, want 402 CreditsDepleted", err)
		}
		if apiErr.Hint != client.HintCreditsDepleted || resp.Attempts != 1 || resp.Waited != 0 {
			t.Errorf("hint %q, %d attempts, waited %v; want the hint, 1 attempt, no wait", apiErr.Hint, resp.Attempts, resp.Waited)
		}
	}
	u := e.usage(alice, xsim.OpListBookmarks)
	if u.ByStatus[402] != 3 || u.Requests != 4 || u.PostsReturned != 10 || e.sim.Credits() != 2 {
		t.Errorf("simulator: %d 402s in %d requests, %d posts billed, %d credits left; want 3, 4, 10, 2",
			u.ByStatus[402], u.Requests, u.PostsReturned, e.sim.Credits())
	}
	if m := c.Meter().Usage(alice, client.OpListBookmarks); m.Retries != 0 || m.PostsReturned != 10 {
		t.Errorf("client meter = %+v", m)
	}
}

// Facts (Part 7): "500/502/503/504: transient; retry with capped exponential
// backoff and jitter." ("Failed requests are not billed.") A walk through
// injected server errors collects every post once; only the 200s are billed;
// a call that fails every time gives up after the policy's attempts.
func Test5xxIsRetriedWithBackoffAndNotBilled(t *testing.T) {
	faults := xsim.Faults{ServerErrorRate: 0.25, Operations: []string{xsim.OpListBookmarks}}
	for faults.Seed = 1; ; faults.Seed++ { // a seed with some errors, never 4 in a row
		errs, run, worst := 0, 0, 0
		for n := 1; n <= 40; n++ {
			if faults.Decide(n).Kind == xsim.FaultServerError {
				errs++
				run++
				worst = max(worst, run)
			} else {
				run = 0
			}
		}
		if errs >= 4 && worst < 4 {
			break
		}
	}
	e := newEnv(t, xsim.Options{Faults: faults})
	want := e.sim.SeedBookmarks(alice, 200)
	c := e.client(e.sim.IssueToken(alice))
	got, _ := walkAll(t, c, alice, 10)
	if len(got) != 200 || len(set(got)) != 200 || got[0] != want[0] || got[199] != want[199] {
		t.Fatalf("walked %d posts (%d distinct)", len(got), len(set(got)))
	}
	u := e.usage(alice, xsim.OpListBookmarks)
	var fivexx int
	for status, n := range u.ByStatus {
		if status >= 500 {
			fivexx += n
		}
	}
	m := c.Meter().Usage(alice, client.OpListBookmarks)
	if fivexx == 0 || u.OK != 20 || u.PostsReturned != 200 {
		t.Errorf("simulator: %d 5xx, %d OK, %d posts billed; want some 5xx, 20 OK, 200 posts", fivexx, u.OK, u.PostsReturned)
	}
	if m.Retries != fivexx || m.Requests != 20+fivexx || m.PostsReturned != 200 {
		t.Errorf("client meter: %d retries, %d requests, %d posts; want %d, %d, 200", m.Retries, m.Requests, m.PostsReturned, fivexx, 20+fivexx)
	}
	if m.Backoff <= 0 || e.clk.Now().Sub(t0) != m.Backoff {
		t.Errorf("backoff %v, clock moved %v", m.Backoff, e.clk.Now().Sub(t0))
	}

	// Always failing: ErrServer once the retry budget is spent.
	e.sim.SetFaults(xsim.Faults{ServerErrorRate: 1, Operations: []string{xsim.OpListBookmarks}})
	start := e.clk.Now()
	_, resp, err := c.ListBookmarks(context.Background(), alice, client.ListOptions{})
	if !errors.Is(err, client.ErrServer) || e.clk.Now().Sub(start) != client.DefaultRetryBudget {
		t.Errorf("err = %v after %d attempts in %s; want ErrServer after the retry budget, %s", err, resp.Attempts, e.clk.Now().Sub(start), client.DefaultRetryBudget)
	}
	if resp.StatusCode < 500 || resp.StatusCode == http.StatusOK {
		t.Errorf("final status %d", resp.StatusCode)
	}
}

// Issue 13.4: with 15% of requests failing — server errors, dropped
// connections, bodies cut short — no call gives up while its retry budget
// lasts, so walk after walk completes with every post, even through a run
// of faults longer than the four attempts a request used to get.
func TestTransientFaultsAt15PercentNeverFailAWalk(t *testing.T) {
	faults := xsim.Faults{ServerErrorRate: 0.06, ConnResetRate: 0.05, TruncateRate: 0.04, Operations: []string{xsim.OpListBookmarks}}
	for faults.Seed = 1; longestFaultRun(faults, 150) < 5; faults.Seed++ {
	}
	e := newEnv(t, xsim.Options{Faults: faults})
	want := e.sim.SeedBookmarks(alice, 1200)
	c := e.client(e.sim.IssueToken(alice))
	for walk := range 10 {
		got, _ := walkAll(t, c, alice, 90)
		if !slices.Equal(got, want) {
			t.Fatalf("walk %d: %d posts, want %d", walk, len(got), len(want))
		}
	}
	if m := c.Meter().Usage(alice, client.OpListBookmarks); m.Retries < 5 || m.OK != 10*14 {
		t.Errorf("%d retries, %d pages read; want at least 5 and 140", m.Retries, m.OK)
	}
}

// longestFaultRun is the longest run of consecutive faulty requests among
// the first n.
func longestFaultRun(f xsim.Faults, n int) int {
	run, longest := 0, 0
	for i := 1; i <= n; i++ {
		if f.Decide(i).Kind == xsim.FaultNone {
			run = 0
			continue
		}
		run++
		longest = max(longest, run)
	}
	return longest
}
