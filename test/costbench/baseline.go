package costbench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/client"
)

// baselineStrategy is what other tools do (the document's rule 6): walk from
// the top with a fixed page-size schedule, hold every post id synced so far,
// and stop at the end of the first page that holds one of them, or at the end
// of the list. It uses the client package directly, with the same budget,
// waits and retries as the plugin.
type baselineStrategy struct {
	name     string
	schedule func(page int) int
	env      *env
	apis     []*client.Client
	meters   []*billing.Meter
	held     []map[string]struct{}
}

func (s *baselineStrategy) Name() string { return s.name }

// Page-size schedules of the baselines.
func fixedPages(n int) func(int) int { return func(int) int { return n } }

// growthPages is the document's schedule (Part 8): twelve pages of 5, then
// doubling from 10 up to 100.
func growthPages(page int) int {
	if page < 12 {
		return 5
	}
	if k := page - 12; k < 4 {
		return 10 << k // 10, 20, 40, 80
	}
	return 100
}

func (s *baselineStrategy) Start(_ context.Context, e *env) error {
	s.env = e
	w := e.script.Workload
	for u := range e.script.UserIDs {
		meter := billing.NewMeter(billing.DefaultRates())
		meter.SetOwnedReads(e.script.UserIDs[u], e.owned)
		api, err := client.New(client.StaticTokenWithTransport(e.tokens[u], e.transport),
			client.WithBaseURL(e.sim.URL()),
			client.WithClock(e.clk),
			client.WithMeter(meter),
			client.WithLimits(map[client.Operation]int{client.OpListBookmarks: w.RateLimit.ListRequestsPerWindow}),
			client.WithWindow(time.Duration(w.RateLimit.Window)),
			client.WithRateLimitWaitCap(time.Duration(w.RateLimit.Window)+time.Minute),
			client.WithRandom(w.Seed+uint64(u)),
		)
		if err != nil {
			return err
		}
		s.apis = append(s.apis, api)
		s.meters = append(s.meters, meter)
		s.held = append(s.held, map[string]struct{}{})
	}
	return nil
}

func (s *baselineStrategy) Sync(ctx context.Context, _ int) ([]userSync, error) {
	users := s.env.script.UserIDs
	outs := make([]userSync, len(users))
	work := make(chan int)
	var wg sync.WaitGroup
	for range s.env.workers {
		wg.Go(func() {
			for u := range work {
				before := s.meters[u].Usage(users[u], client.OpListBookmarks)
				o := &outs[u]
				o.WalkBilled, o.Needed = s.walk(ctx, u, o)
				after := s.meters[u].Usage(users[u], client.OpListBookmarks)
				o.Billed = after.PostsReturned - before.PostsReturned
				o.PostsBilled = after.PostsBilled - before.PostsBilled
				o.UsersBilled = after.UsersBilled - before.UsersBilled
				o.USD = after.USD - before.USD
				o.Requests = after.Requests - before.Requests
				o.RateLimited = after.RateLimited - before.RateLimited
				o.Waits = after.RateLimitWaits - before.RateLimitWaits
			}
		})
	}
	for u := range users {
		work <- u
	}
	close(work)
	wg.Wait()
	return outs, nil
}

// walk reads user u's list; it returns the posts billed and -1 (a baseline
// has no notion of what it needed).
func (s *baselineStrategy) walk(ctx context.Context, u int, o *userSync) (int, int) {
	user := s.env.script.UserIDs[u]
	held := s.held[u]
	billed := 0
	token := ""
	for page := 0; ; page++ {
		size := s.schedule(page)
		p, _, err := s.apis[u].ListBookmarks(ctx, user, client.ListOptions{
			PageOptions: client.PageOptions{MaxResults: size, PaginationToken: token},
		})
		if err != nil {
			o.Err = fmt.Errorf("%s: user %s page %d: %w", s.name, user, page, err)
			o.Outcome = "failed"
			break
		}
		o.PageSizes = append(o.PageSizes, size)
		billed += len(p.Data)
		met := false
		for _, post := range p.Data {
			if _, ok := held[post.ID]; ok {
				met = true
			} else {
				o.Emitted = append(o.Emitted, post.ID)
			}
		}
		if met {
			o.Outcome = "met_held"
			break
		}
		if p.Meta.NextToken == "" {
			o.Outcome = "reached_end"
			break
		}
		token = p.Meta.NextToken
	}
	for _, id := range o.Emitted {
		held[id] = struct{}{}
	}
	return billed, -1
}

func (s *baselineStrategy) Close() {}
