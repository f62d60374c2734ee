// Package walk reads newest-first lists — a user's bookmarks, or one bookmark
// folder — incrementally: it walks from the top, emits what is new, and stops
// as soon as it has reached, as far as order can tell, the posts it already
// holds (stopState), in pages sized by the Planner. docs/walk.md states the
// stop rule and its proof, and what the list moving during a walk does
// (loopCheck); docs/cost.md how pages are sized.
package walk

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
)

// Outcome says how a walk ended.
type Outcome string

const (
	// MetHeld: the walk reached the posts it already held, order confirmed.
	MetHeld Outcome = "met_held"
	// ReachedEnd: the walk read the list to its last page.
	ReachedEnd Outcome = "reached_end"
	// StoppedByBudget: the billed-post cap was reached first; nothing advanced.
	StoppedByBudget Outcome = "stopped_by_budget"
	// Failed: a request failed; nothing advanced.
	Failed Outcome = "failed"
	// Interrupted: the sync was stopped (Ctrl-C) before the walk ended;
	// nothing advanced, and the posts it emitted are kept: the next walk
	// reads the list from the top again, as after StoppedByBudget.
	Interrupted Outcome = "interrupted"
)

// Clean reports whether the walk ended cleanly, so its memory may be stored.
func (o Outcome) Clean() bool { return o == MetHeld || o == ReachedEnd }

// maxEmptyPages bounds how many empty pages with a next_token the walk
// follows in a row. X may return a short or even empty page when posts on
// it were deleted or withheld, and the walk goes on; a server that keeps
// answering with nothing would otherwise make it loop forever.
const maxEmptyPages = 10

// ErrBudget is returned (wrapped) when a walk stops at the billed-post cap.
var ErrBudget = errors.New("stopped at the billed-post cap (max_billed_posts); state not advanced")

// ErrInterrupted is the cause with which a sync that is stopped (Ctrl-C)
// ends its reads: a walk whose Fetch fails with it ends as Interrupted.
var ErrInterrupted = errors.New("the sync was stopped")

// Page is one response of a newest-first list.
type Page[T any] struct {
	Items []T
	Next  string // the token of the next page; "" on the last page
}

// FetchFunc reads one page of at most maxResults items; token "" is the top.
type FetchFunc[T any] func(ctx context.Context, maxResults int, token string) (Page[T], error)

// Walker walks one list.
type Walker[T any] struct {
	Fetch FetchFunc[T]
	ID    func(T) string // an item's post id
	// Emit receives the new items of each page, in list order, before the
	// next page is requested. An error ends the walk as Failed, and no
	// further page is requested.
	Emit     func(ctx context.Context, items []T) error
	Settings Settings
	Clock    clock.Clock
}

// Result describes a walk.
type Result struct {
	Outcome      Outcome
	New          int   // posts emitted: posts not held
	Rebookmarked int   // held posts found above the tail
	Removed      int   // held posts the walk proved gone
	Duplicates   int   // posts read twice (the list shifted down)
	Billed       int   // posts returned, duplicates included
	Requests     int   // pages requested
	PageSizes    []int // the max_results of each request
	// Found is the number of distinct posts above the head of the tail (or all
	// posts read, when the walk reached the end).
	Found int
	// Needed is the number of distinct posts the stop rule needed: up to the
	// one that confirmed the tail (all posts read, when the walk reached the
	// end). Billed - Duplicates - Needed is what the page sizes over-read.
	Needed    int
	Memory    *Memory // what to store for the next walk; set only when Outcome.Clean()
	StartedAt time.Time
}

// Run walks the list whose memory is prev (nil for a first sync). It returns
// the result, and an error when the walk did not end cleanly; even then the
// result tells what was read and billed.
func (w *Walker[T]) Run(ctx context.Context, prev *Memory) (*Result, error) {
	clk := w.Clock
	if clk == nil {
		clk = clock.Real{}
	}
	wk := newProgress(w.Settings, prev, clk.Now(), w.ID)
	token := ""
	for {
		size, err := wk.pageSize()
		if err != nil {
			return wk.end(StoppedByBudget, err)
		}
		if err := wk.loop.send(token, wk.res.Requests+1, wk.res.Billed); err != nil {
			return wk.end(Failed, err)
		}
		page, err := w.Fetch(ctx, size, token)
		if errors.Is(err, ErrInterrupted) {
			return wk.end(Interrupted, err)
		}
		if err != nil {
			return wk.end(Failed, err)
		}
		fresh, err := wk.countPage(page, size)
		if err != nil {
			return wk.end(Failed, err)
		}
		if err := w.emit(ctx, fresh); err != nil {
			return wk.end(Failed, err)
		}
		outcome, err := wk.decide(page)
		if outcome != "" {
			return wk.end(outcome, err)
		}
		token = page.Next
	}
}

func (w *Walker[T]) emit(ctx context.Context, items []T) error {
	if len(items) == 0 || w.Emit == nil {
		return nil
	}
	return w.Emit(ctx, items)
}

// progress is one Run's state from page to page.
type progress[T any] struct {
	id      func(T) string
	res     *Result
	prev    *Memory
	planner *Planner
	stop    *stopState
	loop    *loopCheck
	// empty counts the pages in a row that had no items and a next_token.
	empty int
}

// newProgress starts a walk with settings s, which the spec has checked
// (Settings.Validate); the planner gives them their defaults.
func newProgress[T any](s Settings, prev *Memory, now time.Time, id func(T) string) *progress[T] {
	planner := NewPlanner(s, prev, now)
	return &progress[T]{
		id:      id,
		res:     &Result{StartedAt: now},
		prev:    prev,
		planner: planner,
		stop:    newStopState(prev, planner.s.Confirmations),
		loop:    &loopCheck{sent: map[string]int{}},
	}
}

// pageSize is the size of the next request, or ErrBudget when the
// billed-post cap leaves none.
func (wk *progress[T]) pageSize() (int, error) {
	size := wk.planner.Next(wk.stop.read, wk.res.Requests, wk.res.Billed, wk.stop.minNeeded())
	if size == 0 {
		return 0, fmt.Errorf("after %d billed posts: %w", wk.res.Billed, ErrBudget)
	}
	return size, nil
}

// countPage counts a page read and passes the posts it reads for the first
// time to the stop rule; it returns the items that are new, in list order,
// or an ErrLoop when the page leads the walk back to posts it has read.
func (wk *progress[T]) countPage(page Page[T], size int) ([]T, error) {
	wk.res.Requests++
	wk.res.PageSizes = append(wk.res.PageSizes, size)
	wk.res.Billed += len(page.Items)
	fresh, repeats := page.Items[:0:0], 0
	for _, item := range page.Items {
		switch id := wk.id(item); {
		case !wk.loop.posts.Add(id):
			repeats++ // the list moved down between two requests, or a loop
		case wk.stop.add(id):
			fresh = append(fresh, item)
		}
	}
	if err := wk.loop.read(len(page.Items), repeats, wk.res.Requests, wk.res.Billed); err != nil {
		return nil, err
	}
	wk.res.Duplicates += repeats
	wk.res.New += len(fresh)
	return fresh, nil
}

// decide says how the walk ends after this page, or "" to read on.
func (wk *progress[T]) decide(page Page[T]) (Outcome, error) {
	switch {
	case wk.stop.confirmed():
		return MetHeld, nil
	case page.Next == "":
		return ReachedEnd, nil
	case len(page.Items) > 0:
		wk.empty = 0
	case wk.empty >= maxEmptyPages:
		return Failed, fmt.Errorf("the API returned %d empty pages in a row, each with a next_token", wk.empty+1)
	default:
		wk.empty++
	}
	return "", nil
}

// end finishes the walk: a clean one gets its memory.
func (wk *progress[T]) end(o Outcome, err error) (*Result, error) {
	wk.res.Outcome = o
	if !o.Clean() {
		return wk.res, err
	}
	st, res := wk.stop, wk.res
	mem := st.memory(o)
	res.Found, res.Needed, res.Rebookmarked, res.Removed = st.found(), st.needed(o), st.above, st.removed
	mem.SyncedAt = res.StartedAt
	var interval time.Duration
	if wk.prev != nil && !wk.prev.SyncedAt.IsZero() {
		interval = res.StartedAt.Sub(wk.prev.SyncedAt)
		mem.History = append(mem.History, wk.prev.History...)
	}
	mem.History = append(mem.History, SyncRecord{At: res.StartedAt, Interval: interval, Found: res.Found, Billed: res.Billed})
	if len(mem.History) > historyLength {
		mem.History = mem.History[len(mem.History)-historyLength:]
	}
	res.Memory = mem
	return res, nil
}
