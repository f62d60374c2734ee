// Package costbench is the cost benchmark: it replays a workload file through
// the real planner, walk and state code (the plugin, in-process) and through
// the page-size schedules of other tools, against the X API simulator on a
// virtual clock, and compares the posts each is billed for with the lower
// bound of what any client must be billed for. test/cmd/costbench is its
// command; the command's documentation describes the method and every
// interpretation of the workload file.
package costbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/rs/zerolog"
)

// Strategy names.
const (
	StrategyPlanner  = "planner"
	StrategyFixed10  = "fixed10"
	StrategyFixed100 = "fixed100"
	StrategyGrowth   = "growth"
)

// Strategies lists every strategy, in report order.
var Strategies = []string{StrategyPlanner, StrategyFixed10, StrategyFixed100, StrategyGrowth}

// StrategyAbout describes each strategy in one line.
var StrategyAbout = map[string]string{
	StrategyPlanner:  "this project's plugin, default planner settings (order-confirming stop rule)",
	StrategyFixed10:  "pages of 10 (the API default), stop at the end of the first page holding a synced post",
	StrategyFixed100: "pages of 100, same stop rule",
	StrategyGrowth:   "the document's schedule: twelve pages of 5, then 10, 20, 40, 80, 100, ...; same stop rule",
}

func newStrategy(name string) (strategy, error) {
	switch name {
	case StrategyPlanner:
		return &plannerStrategy{}, nil
	case StrategyFixed10:
		return &baselineStrategy{name: name, schedule: fixedPages(10)}, nil
	case StrategyFixed100:
		return &baselineStrategy{name: name, schedule: fixedPages(100)}, nil
	case StrategyGrowth:
		return &baselineStrategy{name: name, schedule: growthPages}, nil
	}
	return nil, fmt.Errorf("unknown strategy %q (known: %s)", name, strings.Join(Strategies, ", "))
}

// ParseStrategies checks a comma-separated -strategies value; "" or "all"
// means every strategy. The result is in report order.
func ParseStrategies(s string) ([]string, error) {
	if s == "" || s == "all" {
		return slices.Clone(Strategies), nil
	}
	want := map[string]bool{}
	for _, name := range strings.Split(s, ",") {
		name = strings.TrimSpace(name)
		if _, err := newStrategy(name); err != nil {
			return nil, err
		}
		want[name] = true
	}
	var out []string
	for _, name := range Strategies {
		if want[name] {
			out = append(out, name)
		}
	}
	return out, nil
}

// Config is one benchmark run.
type Config struct {
	Workload   *Workload
	Habits     Habits
	Strategies []string // nil = all
	// Log, when set, receives a line per strategy and round.
	Log io.Writer
	// PluginLog, when set, receives the plugin's warnings and errors.
	PluginLog io.Writer
	// Start is the virtual time the initial lists are seeded at; the first
	// sync starts an hour later. Zero = 2026-01-05 00:00 UTC.
	Start time.Time
	// Workers is how many users a baseline walks at once (default 8).
	Workers int
	// Confirmations, when not 0, is the planner strategy's
	// planner.confirmations (else the default).
	Confirmations int
	// Content, when set, is the planner strategy's content section (kind
	// → on); nil leaves the spec's defaults.
	Content map[string]bool
	// OwnedReads makes every user the owner of the app their token belongs
	// to (each user has an app of their own): X prices their bookmark reads
	// as owned reads, and the planner's spec says so (accounts[].owned_reads).
	OwnedReads bool
}

// Result is a benchmark run.
type Result struct {
	Workload   string            `json:"workload"`
	Seed       uint64            `json:"seed"`
	Habits     Habits            `json:"habits"`
	Users      int               `json:"users"`
	Rounds     int               `json:"rounds"`
	Events     EventCounts       `json:"events"`
	Strategies []*StrategyResult `json:"strategies"`
	Elapsed    time.Duration     `json:"elapsed_ns"`
}

// EventCounts sums the script's events.
type EventCounts struct {
	InitialPosts   int `json:"initial_posts"`
	New            int `json:"new_bookmarks"`
	Unbookmarks    int `json:"unbookmarks"`
	NewestRemoved  int `json:"unbookmarks_of_newest"`
	Rebookmarks    int `json:"rebookmarks"`
	Bursts         int `json:"rebookmark_bursts"`
	ResavedRemoved int `json:"resaved_removed"`
	Skipped        int `json:"skipped"`
}

// Totals sum a set of syncs. Ratios are of sums: Billed/Bound and
// Billed/CBound.
type Totals struct {
	Syncs int `json:"syncs"`
	// Billed is the posts the syncs read (every post returned; what the
	// bounds are about), PostsBilled those X bills after its same-UTC-day
	// de-duplication, UsersBilled the expanded users it bills, USD what it
	// charges (the simulator's bill), New the posts archived.
	Billed      int     `json:"billed"`
	PostsBilled int     `json:"posts_billed"`
	UsersBilled int     `json:"users_billed"`
	Media       int     `json:"media_returned"`
	USD         float64 `json:"usd"`
	New         int     `json:"new_posts"`
	// SameDay counts the syncs that ran on the UTC day of the user's
	// previous sync; SameDayBilled the posts they were billed for, and
	// SameDayFloor the fewest any planner could be billed for, knowing what
	// X already billed that day: the posts among the first Needed not billed
	// earlier that day.
	SameDay       int     `json:"same_day_syncs"`
	SameDayBilled int     `json:"same_day_posts_billed"`
	SameDayFloor  int     `json:"same_day_floor"`
	Bound         int     `json:"bound"`
	CBound        int     `json:"confirming_bound"`
	Requests      int     `json:"requests"`
	RateLimited   int     `json:"rate_limited"`
	Waits         int     `json:"rate_limit_waits"`
	Windows       int     `json:"rate_limit_windows"`
	Ratio         float64 `json:"ratio"`
	CRatio        float64 `json:"confirming_ratio"`
}

func (t *Totals) add(s *SyncStat) {
	t.Syncs++
	t.Billed += s.Billed
	t.PostsBilled += s.PostsBilled
	t.UsersBilled += s.UsersBilled
	t.Media += s.Media
	t.USD += s.USD
	t.New += s.Emitted
	if s.SameDay {
		t.SameDay++
		t.SameDayBilled += s.PostsBilled
		t.SameDayFloor += s.Floor
	}
	t.Bound += s.Bound
	t.CBound += s.CBound
	t.Requests += s.Requests
	t.RateLimited += s.RateLimited
	t.Waits += s.Waits
	t.Windows += s.Windows
	t.Ratio = ratio(t.Billed, t.Bound)
	t.CRatio = ratio(t.Billed, t.CBound)
}

func ratio(a, b int) float64 {
	if b == 0 {
		if a == 0 {
			return 1
		}
		return 0
	}
	return float64(a) / float64(b)
}

// StrategyResult is one strategy's run.
type StrategyResult struct {
	Name        string `json:"name"`
	First       Totals `json:"first"`
	Incremental Totals `json:"incremental"`
	// Lost counts distinct (user, post) pairs that were in the user's list at
	// some sync and had not been emitted by the end of it; LostAtEnd those
	// still missing after the last sync.
	Lost      int `json:"lost"`
	LostAtEnd int `json:"lost_at_end"`
	// Duplicates counts rows emitted for a (user, post) already emitted.
	Duplicates  int `json:"duplicates"`
	Emitted     int `json:"emitted"`
	FailedWalks int `json:"failed_walks"`
	// StateBytes is the size of the state backend after the last sync (planner).
	StateBytes int           `json:"state_bytes,omitempty"`
	Elapsed    time.Duration `json:"elapsed_ns"`
	// Syncs has one entry per (round, user).
	Syncs []SyncStat `json:"-"`
}

// SyncStat is one user's sync.
type SyncStat struct {
	User, Round                   int
	Len, Bound, CBound            int
	Billed, Requests, RateLimited int
	// Billed is the list's posts read; Included the referenced posts
	// expanded with them. PostsBilled (of both), UsersBilled, Media and USD
	// are the simulator's bill: after its same-UTC-day de-duplication, at
	// its rates.
	Included                        int
	PostsBilled, UsersBilled, Media int
	USD                             float64
	// SameDay: the sync ran on the UTC day of the user's previous one.
	// Floor is then the posts among the first Needed of the list that X had
	// not billed earlier that day (-1 when Needed is unknown).
	SameDay bool
	Floor   int
	// Waits is the rate-limit waits the strategy's meter recorded.
	Waits int
	// Windows is how many rate-limit windows the sync's requests span
	// beyond the first: ceil(requests / limit) - 1, the waits of an account
	// syncing alone from a fresh window. Unlike Waits it does not depend on
	// how concurrent walks share the virtual clock.
	Windows int
	// Needed is what the walk itself had to read before it could stop
	// (planner: walk.Result.Needed, the posts up to the one that completed
	// the stop rule's run, or the whole list); -1 when unknown.
	Needed    int
	PageSizes []int
	Outcome   string
	Emitted   int
	// Bucket is the new_bookmarks_per_round bucket the round's count came
	// from (-1 for the first sync).
	Bucket int
}

// env is what a strategy runs against.
type env struct {
	script    *Script
	sim       *xsim.Server
	clk       *clock.Virtual
	tokens    []string
	transport *http.Transport
	workers   int
	logger    *zerolog.Logger
	// confirmations is the planner's setting; 0 = the default.
	confirmations int
	content       map[string]bool
	owned         bool
}

// appOf is the app (OAuth client) of user id's token: each user has an app
// of their own, as a person archiving their own bookmarks has.
func appOf(id string) string { return "app-" + id }

// userSync is what a strategy reports of one user's sync. Billed, Requests,
// RateLimited, PostsBilled, UsersBilled, USD and Waits are the strategy's
// own meter; the simulator's must agree.
type userSync struct {
	Emitted                       []string
	Billed, Requests, RateLimited int // Billed: every post returned, expanded ones included
	PostsBilled, UsersBilled      int
	USD                           float64 // the meter's estimate, at its rates (owned reads priced as such)
	Waits                         int
	WalkBilled                    int // billed as the walk counted it (-1 = unknown)
	Needed                        int
	PageSizes                     []int
	Outcome                       string
	Err                           error
}

type strategy interface {
	Name() string
	Start(ctx context.Context, e *env) error
	Sync(ctx context.Context, round int) ([]userSync, error)
	Close()
}

// DefaultStart is the default virtual start time.
var DefaultStart = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// Run runs the benchmark.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	began := time.Now()
	names := cfg.Strategies
	if names == nil {
		names = Strategies
	}
	script, err := NewScript(cfg.Workload, cfg.Habits)
	if err != nil {
		return nil, err
	}
	res := &Result{Workload: cfg.Workload.Name, Seed: cfg.Workload.Seed, Habits: cfg.Habits,
		Users: cfg.Workload.Users, Rounds: cfg.Workload.Rounds, Events: script.counts()}
	for _, name := range names {
		st, err := newStrategy(name)
		if err != nil {
			return nil, err
		}
		sr, err := runStrategy(ctx, cfg, script, st)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		res.Strategies = append(res.Strategies, sr)
	}
	res.Elapsed = time.Since(began)
	return res, nil
}

func (s *Script) counts() EventCounts {
	var c EventCounts
	for _, l := range s.Initial {
		c.InitialPosts += len(l)
	}
	for _, round := range s.Rounds {
		for _, ur := range round {
			c.New += ur.New
			c.Unbookmarks += ur.Unbookmarked
			c.NewestRemoved += ur.NewestRemoved
			c.Rebookmarks += ur.Rebookmarked
			c.Bursts += ur.Bursts
			c.ResavedRemoved += ur.ResavedRemoved
			c.Skipped += ur.Skipped
		}
	}
	return c
}

// runStrategy replays the script on a fresh simulator and virtual clock.
func runStrategy(ctx context.Context, cfg Config, script *Script, st strategy) (*StrategyResult, error) {
	began := time.Now()
	w := script.Workload
	start := cfg.Start
	if start.IsZero() {
		start = DefaultStart
	}
	clk := clock.NewVirtual(start)
	sim := xsim.New(xsim.Options{
		Clock:  clk,
		Window: time.Duration(w.RateLimit.Window),
		Limits: map[string]int{xsim.OpListBookmarks: w.RateLimit.ListRequestsPerWindow},
	})
	if err := sim.Start(); err != nil {
		return nil, err
	}
	defer sim.Close()
	transport := &http.Transport{
		MaxIdleConns:        1024,
		MaxIdleConnsPerHost: 1024,
		IdleConnTimeout:     time.Minute,
	}
	defer transport.CloseIdleConnections()

	users := script.UserIDs
	e := &env{script: script, sim: sim, clk: clk, transport: transport, workers: cfg.Workers, confirmations: cfg.Confirmations,
		content: cfg.Content, owned: cfg.OwnedReads}
	if e.workers <= 0 {
		e.workers = 8
	}
	if cfg.PluginLog != nil {
		l := zerolog.New(zerolog.ConsoleWriter{Out: cfg.PluginLog, NoColor: true}).Level(zerolog.WarnLevel).With().Timestamp().Logger()
		e.logger = &l
	}
	for u, id := range users {
		e.tokens = append(e.tokens, sim.IssueAppToken(appOf(id), id))
		if cfg.OwnedReads {
			sim.SetAppOwner(appOf(id), id)
		}
		got := sim.SeedBookmarks(id, len(script.Initial[u]))
		if !slices.Equal(got, script.Initial[u]) {
			return nil, fmt.Errorf("the simulator seeded user %s with other ids than the script's; the runs would not be comparable", id)
		}
	}
	clk.Advance(time.Hour)
	t0 := clk.Now()
	interval := time.Duration(w.RoundInterval)

	if err := st.Start(ctx, e); err != nil {
		return nil, err
	}
	defer st.Close()

	sr := &StrategyResult{Name: st.Name()}
	emitted := make([]map[string]struct{}, len(users))
	lost := make([]map[string]struct{}, len(users))
	for u := range users {
		emitted[u] = map[string]struct{}{}
		lost[u] = map[string]struct{}{}
	}
	prevUsage := make([]xsim.OpUsage, len(users))
	var prevStart time.Time
	billedToday := make([]map[string]struct{}, len(users))
	var mismatches []string
	for r := 0; r <= w.Rounds; r++ {
		planned := t0.Add(time.Duration(r) * interval)
		if r > 0 {
			// The round's events happen between the two syncs: at the middle
			// of the interval, or a second after the previous sync ended if
			// its rate-limit waits took it past that; the next sync starts on
			// the round boundary, or a second after the events. Bookmark times
			// are the clock's now plus a nanosecond per event when the clock
			// stands still, so the second keeps every event strictly between
			// the two sync starts, as the bound's definition needs.
			clk.Advance(time.Second)
			clk.Set(planned.Add(-interval / 2))
			if err := applyRound(sim, users, script.Rounds[r-1]); err != nil {
				return nil, fmt.Errorf("round %d: %w", r, err)
			}
			clk.Advance(time.Second)
			clk.Set(planned)
		}
		syncStart := clk.Now()

		lists := make([][]string, len(users))
		bounds := make([]int, len(users))
		for u, id := range users {
			lists[u] = sim.Bookmarks(id)
			b, err := LowerBound(lists[u], func(p string) (time.Time, bool) { return sim.BookmarkedAt(id, p) }, prevStart, r == 0)
			if err != nil {
				return nil, fmt.Errorf("round %d, user %s: %w", r, id, err)
			}
			if want := script.Expect[r][u]; want.Len != len(lists[u]) || want.Bound != b {
				return nil, fmt.Errorf("round %d, user %s: the simulator's list has length %d and bound %d, the script's model %d and %d",
					r, id, len(lists[u]), b, want.Len, want.Bound)
			}
			bounds[u] = b
			billedToday[u] = nil
			if r > 0 && utcDay(syncStart) == utcDay(prevStart) {
				billedToday[u] = map[string]struct{}{}
				for _, p := range sim.BilledToday(appOf(id)) {
					billedToday[u][p] = struct{}{}
				}
			}
		}

		outs, err := st.Sync(ctx, r)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", r, err)
		}

		var round Totals
		roundLost := 0
		for u, id := range users {
			o := &outs[u]
			now := sim.Usage(id)[xsim.OpListBookmarks]
			was := prevUsage[u]
			prevUsage[u] = now
			s := SyncStat{
				User: u, Round: r, Len: len(lists[u]), Bound: bounds[u], CBound: ConfirmingBound(bounds[u], len(lists[u])),
				Billed:      (now.PostsReturned - now.IncludedPosts) - (was.PostsReturned - was.IncludedPosts),
				Included:    now.IncludedPosts - was.IncludedPosts,
				PostsBilled: now.PostsBilled - was.PostsBilled,
				UsersBilled: now.UsersBilled - was.UsersBilled,
				Media:       now.MediaReturned - was.MediaReturned,
				USD:         now.USD - was.USD,
				Requests:    now.Requests - was.Requests,
				RateLimited: now.RateLimited - was.RateLimited,
				Waits:       o.Waits, Needed: o.Needed, PageSizes: o.PageSizes, Outcome: o.Outcome, Emitted: len(o.Emitted),
			}
			s.Bucket = -1
			if today := billedToday[u]; today != nil {
				s.SameDay, s.Floor = true, floorToday(lists[u], o.Needed, today)
			}
			if lim := w.RateLimit.ListRequestsPerWindow; s.Requests > lim {
				s.Windows = (s.Requests+lim-1)/lim - 1
			}
			if r == 0 {
				s.CBound = s.Bound
			} else {
				s.Bucket = script.Rounds[r-1][u].Bucket
			}
			if o.Billed != s.Billed+s.Included || o.Requests != s.Requests || o.RateLimited != s.RateLimited || (o.WalkBilled >= 0 && o.WalkBilled != s.Billed) ||
				o.PostsBilled != s.PostsBilled || o.UsersBilled != s.UsersBilled || !sameUSD(o.USD, s.USD) {
				mismatches = append(mismatches, fmt.Sprintf("round %d user %s: simulator read %d posts, billed %d posts and %d users for USD %.4f (owned reads %v), requests %d, 429s %d; strategy's meter %d, %d, %d, USD %.4f, %d, %d; walk %d",
					r, id, s.Billed, s.PostsBilled, s.UsersBilled, s.USD, now.OwnedReads, s.Requests, s.RateLimited, o.Billed, o.PostsBilled, o.UsersBilled, o.USD, o.Requests, o.RateLimited, o.WalkBilled))
			}
			if o.Err != nil {
				sr.FailedWalks++
				if cfg.Log != nil {
					fmt.Fprintf(cfg.Log, "%s round %d user %s: walk failed: %v\n", st.Name(), r, id, o.Err)
				}
			}
			for _, p := range o.Emitted {
				if _, dup := emitted[u][p]; dup {
					sr.Duplicates++
				}
				emitted[u][p] = struct{}{}
			}
			sr.Emitted += len(o.Emitted)
			for _, p := range lists[u] {
				if _, ok := emitted[u][p]; !ok {
					lost[u][p] = struct{}{}
					roundLost++
				}
			}
			if r == 0 {
				sr.First.add(&s)
			} else {
				sr.Incremental.add(&s)
			}
			round.add(&s)
			sr.Syncs = append(sr.Syncs, s)
		}
		sr.LostAtEnd = roundLost
		if cfg.Log != nil {
			fmt.Fprintf(cfg.Log, "%-8s round %2d  start %s  billed %7d  bound %7d  c.bound %7d  requests %5d  429s %d  waits %d  missing %d\n",
				st.Name(), r, syncStart.Format("01-02 15:04"), round.Billed, round.Bound, round.CBound, round.Requests, round.RateLimited, round.Waits, roundLost)
		}
		prevStart = syncStart
	}
	for u := range users {
		sr.Lost += len(lost[u])
	}
	if ps, ok := st.(*plannerStrategy); ok {
		for k, v := range ps.st.Committed() {
			sr.StateBytes += len(k) + len(v)
		}
	}
	sr.Elapsed = time.Since(began)
	if len(mismatches) > 0 {
		return sr, fmt.Errorf("%d syncs where the simulator's meter and the strategy's disagree, e.g. %s", len(mismatches), mismatches[0])
	}
	return sr, nil
}

// sameUSD says two estimates of one sync agree, but for float rounding.
func sameUSD(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// utcDay is t's UTC date: the window X de-duplicates billing in.
func utcDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// floorToday is what a sync that had to read the first needed posts of list
// is billed at the least, X billing each post once per UTC day: those of
// them not in today (billed earlier that day). -1 when needed is unknown.
func floorToday(list []string, needed int, today map[string]struct{}) int {
	if needed < 0 {
		return -1
	}
	n := 0
	for _, p := range list[:min(needed, len(list))] {
		if _, ok := today[p]; !ok {
			n++
		}
	}
	return n
}

// applyRound makes the round's events happen on the simulator, user by user,
// each user's events in script order.
func applyRound(sim *xsim.Server, users []string, round []UserRound) error {
	var errs []error
	for u, ur := range round {
		for _, ev := range ur.Events {
			var err error
			switch ev.Kind {
			case NewBookmark, Rebookmark, ResaveRemoved:
				err = sim.Bookmark(users[u], ev.PostID)
			case Unbookmark:
				err = sim.Unbookmark(users[u], ev.PostID)
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("user %s: %w", users[u], err))
			}
		}
	}
	return errors.Join(errs...)
}
