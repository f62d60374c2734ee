package conformance

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// opCaller returns a function that makes one call of op for user (setting up
// what the call needs: bookmarks to remove, a folder to read).
func opCaller(e *env, op client.Operation, user string, calls int) func(c *client.Client) (*client.Response, error) {
	ctx := context.Background()
	switch op {
	case client.OpListBookmarks:
		e.sim.SeedBookmarks(user, 3)
		return func(c *client.Client) (*client.Response, error) {
			_, r, err := c.ListBookmarks(ctx, user, client.ListOptions{PageOptions: client.PageOptions{MaxResults: 1}})
			return r, err
		}
	case client.OpListFolders:
		e.sim.CreateFolder(user, "77", "Reading")
		return func(c *client.Client) (*client.Response, error) {
			_, r, err := c.ListFolders(ctx, user, client.PageOptions{})
			return r, err
		}
	case client.OpGetFolder:
		e.sim.AddToFolder(user, "77", e.sim.NewPostID())
		return func(c *client.Client) (*client.Response, error) {
			_, r, err := c.GetFolder(ctx, user, "77", client.PageOptions{})
			return r, err
		}
	case client.OpAddBookmark:
		return func(c *client.Client) (*client.Response, error) {
			_, r, err := c.AddBookmark(ctx, user, e.sim.NewPostID())
			return r, err
		}
	case client.OpRemoveBookmark:
		ids := e.sim.SeedBookmarks(user, calls)
		var mu sync.Mutex
		return func(c *client.Client) (*client.Response, error) {
			mu.Lock()
			id := ids[0]
			ids = ids[1:]
			mu.Unlock()
			_, r, err := c.RemoveBookmark(ctx, user, id)
			return r, err
		}
	}
	panic("unknown operation " + op)
}

// The rate-limit table of Part 8, L129-135, per user.
var documentedLimits = []struct {
	op      client.Operation
	simOp   string
	perUser int
	perApp  int // 0: no per-app limit
}{
	{client.OpListBookmarks, xsim.OpListBookmarks, 180, 0},
	{client.OpListFolders, xsim.OpListFolders, 50, 50},
	{client.OpGetFolder, xsim.OpGetFolder, 50, 50},
	{client.OpAddBookmark, xsim.OpAddBookmark, 50, 0},
	{client.OpRemoveBookmark, xsim.OpRemoveBookmark, 50, 0},
}

// Part 8, L129-135: "Rate limits (window 15 minutes)": per user, GET
// bookmarks 180, GET folders 50, GET folder 50, POST 50, DELETE 50. The
// limit'th request in a window succeeds and the next is 429 (the client's own
// budget off); the headers announce the limit; the client's budget starts
// from the same numbers.
func TestPerUserLimitsPerOperation(t *testing.T) {
	defaults := client.DefaultLimits()
	for _, l := range documentedLimits {
		t.Run(string(l.op), func(t *testing.T) {
			if defaults[l.op] != l.perUser {
				t.Errorf("client.DefaultLimits()[%s] = %d, want %d", l.op, defaults[l.op], l.perUser)
			}
			e := newEnv(t, xsim.Options{})
			call := opCaller(e, l.op, alice, l.perUser+2)
			c := e.client(e.sim.IssueToken(alice), noBudget()...)
			for i := 1; i <= l.perUser; i++ {
				resp, err := call(c)
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if resp.Rate.Limit != l.perUser || resp.Rate.Remaining != l.perUser-i || !resp.Rate.Reset.Equal(t0.Add(15*time.Minute)) {
					t.Fatalf("request %d: rate %+v", i, resp.Rate)
				}
			}
			_, err := call(c)
			var rl *client.RateLimitError
			if !errors.As(err, &rl) || rl.Response == nil {
				t.Fatalf("request %d: err = %v, want 429", l.perUser+1, err)
			}
			if u := e.usage(alice, l.simOp); u.OK != l.perUser || u.RateLimited != 1 {
				t.Errorf("simulator: %d OK, %d 429s", u.OK, u.RateLimited)
			}
			// The window is 15 minutes.
			e.clk.Advance(15 * time.Minute)
			if _, err := call(c); err != nil {
				t.Errorf("after 15 minutes: %v", err)
			}
		})
	}
}

// Part 8, L132-133: the folder operations have "50 requests" per app as well
// as per user: two users of one app share 50 folder reads per window, while
// a user of another app is unaffected. The client learns the shared
// remainder from the headers and waits instead of causing a 429.
func TestFolderOperationsAlsoHaveA50PerAppLimit(t *testing.T) {
	for _, op := range []client.Operation{client.OpListFolders, client.OpGetFolder} {
		t.Run(string(op), func(t *testing.T) {
			e := newEnv(t, xsim.Options{})
			aliceCall := opCaller(e, op, alice, 0)
			bobCall := opCaller(e, op, bob, 0)
			carolCall := opCaller(e, op, "1003", 0)
			aliceTok, _, _ := e.sim.IssueTokenPair("app-1", alice)
			bobTok, _, _ := e.sim.IssueTokenPair("app-1", bob)
			carolTok, _, _ := e.sim.IssueTokenPair("app-2", "1003")

			ac := e.client(aliceTok, noBudget()...)
			for i := range 30 {
				if _, err := aliceCall(ac); err != nil {
					t.Fatalf("alice %d: %v", i+1, err)
				}
			}
			bc := e.client(bobTok, noBudget()...)
			for i := range 20 {
				if _, err := bobCall(bc); err != nil {
					t.Fatalf("bob %d: %v", i+1, err)
				}
			}
			if _, err := bobCall(bc); !errors.Is(err, client.ErrRateLimited) {
				t.Fatalf("bob's 21st (the app's 51st): err = %v, want 429", err)
			}
			cc := e.client(carolTok, noBudget()...)
			if _, err := carolCall(cc); err != nil {
				t.Errorf("a user of another app: %v", err)
			}

			// Next window: bob's client with its budget on, after alice's 30.
			e.clk.Advance(15*time.Minute + time.Second)
			for range 30 {
				if _, err := aliceCall(ac); err != nil {
					t.Fatal(err)
				}
			}
			before := e.usage(bob, string(op)).RateLimited
			bc2 := e.client(bobTok)
			for i := range 25 {
				if _, err := bobCall(bc2); err != nil {
					t.Fatalf("bob (budget on) %d: %v", i+1, err)
				}
			}
			if n := e.usage(bob, string(op)).RateLimited - before; n != 0 {
				t.Errorf("bob's budgeted client caused %d 429s", n)
			}
			if u := bc2.Meter().Usage(bob, op); u.RateLimitWaits != 1 {
				t.Errorf("bob's client waited %d times, want 1 (for the app window)", u.RateLimitWaits)
			}
		})
	}
}

// Part 8, L137: "The per-user limit is counted against that user's own
// token, so one user's activity does not consume another's allowance."
// (And L131, L134-135: no per-app limit for list, add and remove.) Two users
// of the same app: one uses up her window; the other still has all of his.
func TestOneUsersActivityDoesNotConsumeAnothersAllowance(t *testing.T) {
	for _, l := range documentedLimits {
		if l.perApp != 0 {
			continue // the folder operations also have a per-app limit (above)
		}
		t.Run(string(l.op), func(t *testing.T) {
			e := newEnv(t, xsim.Options{})
			aliceCall := opCaller(e, l.op, alice, l.perUser+1)
			bobCall := opCaller(e, l.op, bob, l.perUser)
			aliceTok, _, _ := e.sim.IssueTokenPair("app-1", alice)
			bobTok, _, _ := e.sim.IssueTokenPair("app-1", bob)
			ac := e.client(aliceTok, noBudget()...)
			for range l.perUser {
				if _, err := aliceCall(ac); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := aliceCall(ac); !errors.Is(err, client.ErrRateLimited) {
				t.Fatalf("alice's %d+1st: err = %v, want 429", l.perUser, err)
			}
			bc := e.client(bobTok, noBudget()...)
			for i := 1; i <= l.perUser; i++ {
				resp, err := bobCall(bc)
				if err != nil {
					t.Fatalf("bob's request %d: %v", i, err)
				}
				if i == 1 && resp.Rate.Remaining != l.perUser-1 {
					t.Errorf("bob's first response: remaining %d, want %d", resp.Rate.Remaining, l.perUser-1)
				}
			}
			if u := e.usage(bob, l.simOp); u.RateLimited != 0 || u.OK != l.perUser {
				t.Errorf("bob: %+v", u)
			}
		})
	}
}

// Part 8 (L129-137) with Part 4.1 rule 5 (L80, "Per-user limit applies"):
// the client's own budget keeps every operation within its per-user window
// without ever causing a 429 itself: it waits (in virtual time) for the reset.
// Also with several goroutines sharing one client.
func TestClientNeverCausesA429Itself(t *testing.T) {
	for _, l := range documentedLimits {
		t.Run(string(l.op), func(t *testing.T) {
			e := newEnv(t, xsim.Options{})
			calls := 2*l.perUser + 7 // three windows
			call := opCaller(e, l.op, alice, calls)
			c := e.client(e.sim.IssueToken(alice))
			for i := range calls {
				if _, err := call(c); err != nil {
					t.Fatalf("call %d: %v", i+1, err)
				}
			}
			if u := e.usage(alice, l.simOp); u.RateLimited != 0 || u.OK != calls || u.Requests != calls {
				t.Errorf("simulator: %d requests, %d OK, %d 429s; want %d, %d, 0", u.Requests, u.OK, u.RateLimited, calls, calls)
			}
			m := c.Meter().Usage(alice, l.op)
			if m.RateLimitWaits != 2 || m.RateLimited != 0 || m.Refused != 0 {
				t.Errorf("client meter: %d waits, %d 429s, %d refused; want 2, 0, 0", m.RateLimitWaits, m.RateLimited, m.Refused)
			}
			if elapsed := e.clk.Now().Sub(t0); elapsed < 30*time.Minute || elapsed > 31*time.Minute {
				t.Errorf("virtual time %v, want two windows", elapsed)
			}
		})
	}
	t.Run("concurrent list", func(t *testing.T) {
		e := newEnv(t, xsim.Options{})
		call := opCaller(e, client.OpListBookmarks, alice, 0)
		c := e.client(e.sim.IssueToken(alice))
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				for range 100 {
					if _, err := call(c); err != nil {
						errs <- err
						return
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if u := e.usage(alice, xsim.OpListBookmarks); u.RateLimited != 0 || u.OK != 400 {
			t.Errorf("simulator: %d OK, %d 429s; want 400, 0", u.OK, u.RateLimited)
		}
	})
}

// Part 8, L138: "At the maximum page size, the list limit allows up to 18,000
// posts per user per window."
func TestMaxPageSizeAllows18000PostsPerWindow(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	all := e.sim.SeedBookmarks(alice, 20000)
	token := e.sim.IssueToken(alice)
	c := e.client(token, client.WithRateLimitWaitCap(0)) // budget on, never waits
	var got []string
	next := ""
	var err error
	for range maxPages {
		var p *client.PostPage
		p, _, err = c.ListBookmarks(context.Background(), alice, client.ListOptions{PageOptions: client.PageOptions{MaxResults: client.MaxPageSize, PaginationToken: next}})
		if err != nil {
			break
		}
		got = append(got, postIDs(p)...)
		next = p.Meta.NextToken
	}
	var rl *client.RateLimitError
	if !errors.As(err, &rl) || !rl.Budget {
		t.Fatalf("walk ended with %v, want the client's budget refusing", err)
	}
	if len(got) != 18000 || !slices.Equal(got, all[:18000]) {
		t.Fatalf("read %d posts in one window, want the first 18000", len(got))
	}
	if !e.clk.Now().Equal(t0) {
		t.Errorf("time moved: %v", e.clk.Now().Sub(t0))
	}
	if u := e.usage(alice, xsim.OpListBookmarks); u.Requests != 180 || u.PostsReturned != 18000 || u.RateLimited != 0 {
		t.Errorf("simulator: %d requests, %d posts, %d 429s; want 180, 18000, 0", u.Requests, u.PostsReturned, u.RateLimited)
	}
	// The server agrees: one more request in this window is a 429.
	_, _, err = e.client(token, noBudget()...).ListBookmarks(context.Background(), alice, client.ListOptions{PageOptions: client.PageOptions{MaxResults: 100, PaginationToken: next}})
	if !errors.As(err, &rl) || rl.Response == nil {
		t.Errorf("request 181: err = %v, want a server 429", err)
	}
}

// Part 8, L151 (and Part 7, L118: 429 "when a fixed small page size needs
// more requests than the window allows"): "A page of 5 against a backlog of
// about 2,400 posts needs nearly 500 requests, more than the window allows."
func TestPageOf5AgainstBacklogOf2400NeedsMoreRequestsThanTheWindow(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	all := e.sim.SeedBookmarks(alice, 2400)
	token := e.sim.IssueToken(alice)

	// Without the client's budget: the window runs out with a 429.
	c := e.client(token, noBudget()...)
	next := ""
	posts, requests := 0, 0
	var err error
	for range maxPages {
		var p *client.PostPage
		p, _, err = c.ListBookmarks(context.Background(), alice, client.ListOptions{PageOptions: client.PageOptions{MaxResults: 5, PaginationToken: next}})
		if err != nil {
			break
		}
		requests++
		posts += len(p.Data)
		next = p.Meta.NextToken
	}
	if !errors.Is(err, client.ErrRateLimited) || requests != 180 || posts != 900 {
		t.Fatalf("one window: %d requests, %d posts, then %v; want 180, 900, then 429", requests, posts, err)
	}

	// With the budget: the walk completes, spread over windows, without a 429.
	e.sim.ResetRateLimits()
	e.sim.ResetUsage()
	c = e.client(token)
	got, requests := walkAll(t, c, alice, 5)
	if !slices.Equal(got, all) || requests != 480 {
		t.Fatalf("walk: %d posts in %d requests; want 2400 in 480", len(got), requests)
	}
	if u := e.usage(alice, xsim.OpListBookmarks); u.RateLimited != 0 || u.Requests != 480 {
		t.Errorf("simulator: %+v", u)
	}
	if m := c.Meter().Usage(alice, client.OpListBookmarks); m.RateLimitWaits != 2 {
		t.Errorf("client waited %d times for a window, want 2 (480 requests = 3 windows)", m.RateLimitWaits)
	}
	if elapsed := e.clk.Now().Sub(t0); elapsed < 30*time.Minute {
		t.Errorf("virtual time %v, want more than two windows", elapsed)
	}
}

// Part 8, L152: "A schedule that grows the page size (twelve pages of 5, then
// doubling up to 100) reaches 410 posts in 18 requests."
func TestGrowingScheduleReaches410PostsIn18Requests(t *testing.T) {
	sizes := slices.Repeat([]int{5}, 12)
	for s := 5; len(sizes) < 18; {
		s = min(2*s, client.MaxPageSize)
		sizes = append(sizes, s)
	}
	if want := []int{5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 10, 20, 40, 80, 100, 100}; !slices.Equal(sizes, want) {
		t.Fatalf("schedule = %v", sizes)
	}
	e := newEnv(t, xsim.Options{})
	all := e.sim.SeedBookmarks(alice, 2400)
	c := e.client(e.sim.IssueToken(alice))
	var got []string
	next := ""
	for _, size := range sizes {
		p, _ := page(t, c, alice, size, next)
		if len(p.Data) != size {
			t.Fatalf("page of %d returned %d", size, len(p.Data))
		}
		got = append(got, postIDs(p)...)
		next = p.Meta.NextToken
	}
	if !slices.Equal(got, all[:410]) {
		t.Fatalf("read %d posts, want the first 410 in order", len(got))
	}
	if u := e.usage(alice, xsim.OpListBookmarks); u.Requests != 18 || u.PostsReturned != 410 || u.RateLimited != 0 {
		t.Errorf("simulator: %d requests, %d posts; want 18, 410", u.Requests, u.PostsReturned)
	}
}

// Part 8, L148-149: "Unit: one post resource returned." "Rate: the service's
// post-read rate, about half a cent (USD 0.005) per post." The simulator's
// and the client's meters both price posts at 0.005.
func TestBillingRateIsHalfACentPerPost(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.SeedBookmarks(alice, 321)
	c := e.client(e.sim.IssueToken(alice))
	walkAll(t, c, alice, 100)
	if c.Meter().Rates().Post != 0.005 {
		t.Errorf("client rate %v, want 0.005", c.Meter().Rates().Post)
	}
	if u := e.usage(alice, xsim.OpListBookmarks); u.PostsReturned != 321 || !approx(u.USD, 1.605) {
		t.Errorf("simulator: %d posts, USD %v; want 321, 1.605", u.PostsReturned, u.USD)
	}
	if tot := c.Meter().Total(); tot.PostsReturned != 321 || tot.Requests != 4 || !approx(tot.USD, 1.605) {
		t.Errorf("client: %d posts in %d requests, USD %v; want 321 in 4, 1.605", tot.PostsReturned, tot.Requests, tot.USD)
	}
}
