// Package walk reads newest-first lists — a user's bookmarks, or one bookmark
// folder — incrementally: it walks from the top, emits what is new, and stops
// as soon as it has provably reached the posts it already holds.
//
// # The stop rule
//
// Between two syncs the user bookmarks new posts (they go to the top),
// removes bookmarks (the rest shifts up) and re-bookmarks held posts (they
// move to the top). So the list now is: the posts bookmarked since the last
// sync, in bookmark order, above the tail — the held posts that were left
// alone, in exactly the order the last walk remembered (document Part 3).
//
// The document's rule — stop at the first held post — loses posts when that
// post is a re-bookmark sitting above new ones. Only the relative order of
// held posts tells the two apart: the tail is in remembered order and holds
// nothing new. So the walk stops when the posts it has read end with a run of
// held posts in strictly increasing remembered position, of length 1 +
// Settings.Confirmations; the run's first post is the head of the tail. A
// held post followed by a new post, or by a held post remembered above it,
// was a re-bookmark and the walk goes on.
//
// This costs one post more than the document's rule (k + 2 instead of k + 1
// for k posts above the tail), and it loses nothing unless the user
// re-bookmarks Confirmations+1 held posts in their old relative order, all
// above posts bookmarked since the last sync. Raising Confirmations narrows
// that further at one post per sync each.
//
// # The list moving during a walk
//
// Tokens encode a position (document Part 2). A post bookmarked while the
// walk runs pushes everything down one place: the next page repeats a post,
// which the walk drops (it is billed twice) — the new post itself is at the
// top and the next sync finds it. A bookmark removed above the walk's read
// position pulls everything up one place: the post at the page boundary is
// skipped. If that post was new, this walk does not see it. See
// docs/walk.md for what follows and what the next sync does about it.
//
// # What is remembered
//
// Memory.Held, the list as last seen (newest first), is updated after a clean
// walk to: the posts read above the tail, in list order, then the remembered
// tail from its head, without the posts that moved above it and without
// remembered posts the walk proved gone (those it should have passed but did
// not see). Posts removed further down are not seen and stay; they cost
// nothing, since the walk never reaches them.
package walk

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
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

// Page is one response of a newest-first list.
type Page[T any] struct {
	Items []T
	// Next is the token of the next page; "" on the last page.
	Next string
}

// Peek is what a page tells of the next one before its items are decoded:
// its next_token and its item count (meta.result_count).
type Peek struct {
	Next  string
	Count int
}

// FetchFunc reads one page of at most maxResults items; token "" is the top.
// When it can tell the page's Peek before decoding the items, it may pass it
// to peek (a hint: at most the first call is used, and the page returned is
// what counts).
type FetchFunc[T any] func(ctx context.Context, maxResults int, token string, peek func(Peek)) (Page[T], error)

// Walker walks one list.
type Walker[T any] struct {
	Fetch FetchFunc[T]
	// ID returns an item's post id.
	ID func(T) string
	// Emit receives the new items of each page, in list order, from a
	// goroutine of its own (one call at a time), so that emitting a page
	// overlaps reading the next: once a page has been read and the walk
	// knows it must read on, the next page is requested at once. Every Emit
	// has returned when Run returns. An error ends the walk as Failed; the
	// next pages may then already have been read.
	//
	// A walk that holds nothing (a first sync) reads the whole list whatever
	// the posts are, so it asks for the next page as soon as a Peek gives the
	// token, while the current page is still being decoded: then two Fetch
	// calls overlap. The pages read are the same; if the decoded page
	// disagrees with its Peek (a retried request got another answer), the
	// early request is discarded (read, billed, counted) and made again.
	Emit     func(ctx context.Context, items []T) error
	Settings Settings
	Clock    clock.Clock
}

// Result describes a walk.
type Result struct {
	Outcome Outcome
	// New is the number of posts emitted: posts not held.
	New int
	// Rebookmarked is the number of held posts found above the tail.
	Rebookmarked int
	// Removed is the number of held posts the walk proved gone.
	Removed int
	// Duplicates is the number of posts read twice (the list shifted down).
	Duplicates int
	// Billed is the number of posts returned, duplicates included.
	Billed int
	// Requests is the number of pages requested.
	Requests int
	// PageSizes lists the max_results of each request.
	PageSizes []int
	// Found is the number of distinct posts above the head of the tail (or all
	// posts read, when the walk reached the end).
	Found int
	// Memory is what to store for the next walk; set only when Outcome.Clean().
	Memory *Memory
	// StartedAt is when the walk started.
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
	settings := w.Settings.WithDefaults()
	if err := settings.Validate(); err != nil {
		return nil, err
	}
	res := &Result{StartedAt: clk.Now()}
	planner := NewPlanner(settings, prev, res.StartedAt)
	st := newStopState(prev, settings.Confirmations)

	emptyPages := 0
	size := planner.Next(st.read, res.Requests, res.Billed, st.minNeeded())
	if size == 0 {
		res.Outcome = StoppedByBudget
		return res, fmt.Errorf("after %d billed posts: %w", res.Billed, ErrBudget)
	}
	// A first walk reads the whole list whatever the posts are: each request
	// starts the next one from its Peek, in its own goroutine, before its page
	// is decoded (the Planner is read-only, so it may plan from there). The
	// walk checks each such request against the decoded page before using it.
	//
	// At most maxAhead such requests are outstanding (started, and not yet
	// taken by the walk): if emitting falls behind, the next request waits,
	// and pages do not pile up.
	em := w.emitter(ctx)
	defer em.finish()
	var ahead func(r *request[T], pk Peek) *request[T]
	if planner.First() {
		slots := make(chan struct{}, maxAhead)
		ahead = func(r *request[T], pk Peek) *request[T] {
			if pk.Next == "" || pk.Count <= 0 || em.failure() != nil {
				return nil
			}
			billed := r.billedBefore + pk.Count
			size := planner.Next(billed, r.requestsBefore+1, billed, 1)
			if size == 0 {
				return nil
			}
			// Wait for a place: the walk frees one as it comes to each page,
			// unless it stops, and then it cancels this request (first:
			// see discard) — a place and the cancel can come together.
			select {
			case slots <- struct{}{}:
				if r.ctx.Err() != nil || em.failure() != nil {
					<-slots
					return nil
				}
			case <-r.ctx.Done():
				return nil
			}
			next := w.request(ctx, size, pk.Next, billed, r.requestsBefore+1, ahead)
			next.slots = slots
			return next
		}
	}
	cur := w.request(ctx, size, "", 0, 0, ahead)
	for {
		cur.release() // the walk is ready for this page
		f := <-cur.done
		early := cur.early
		if f.err != nil {
			w.discard(early, res)
			res.Outcome = Failed
			return res, f.err
		}
		page := f.page
		res.Requests++
		res.PageSizes = append(res.PageSizes, cur.size)
		res.Billed += len(page.Items)

		fresh := page.Items[:0:0]
		for _, item := range page.Items {
			switch st.add(w.ID(item)) {
			case seenNew:
				fresh = append(fresh, item)
			case seenDuplicate:
				res.Duplicates++
			}
		}

		// Once Emit has failed the walk has failed: it asks for no more
		// pages, each of which would be billed for nothing.
		if err := em.failure(); err != nil {
			w.discard(early, res)
			res.Outcome = Failed
			return res, err
		}

		// Decide whether to read on, and if so ask for the next page now.
		var next *request[T]
		var stopErr error
		switch {
		case st.confirmed():
			res.Outcome = MetHeld
		case page.Next == "":
			res.Outcome = ReachedEnd
		case len(page.Items) == 0 && emptyPages >= maxEmptyPages:
			res.Outcome = Failed
			stopErr = fmt.Errorf("the API returned %d empty pages in a row, each with a next_token", emptyPages+1)
		default:
			if len(page.Items) == 0 {
				emptyPages++
			} else {
				emptyPages = 0
			}
			size := planner.Next(st.read, res.Requests, res.Billed, st.minNeeded())
			if early != nil && (early.token != page.Next || early.size != size) {
				// Not the request the walk asks for. Its page, if the API
				// answered, was billed all the same: count it before
				// sizing the request that replaces it.
				w.discard(early, res)
				early = nil
				size = planner.Next(st.read, res.Requests, res.Billed, st.minNeeded())
			}
			switch {
			case size == 0:
				res.Outcome = StoppedByBudget
				stopErr = fmt.Errorf("after %d billed posts: %w", res.Billed, ErrBudget)
			case early != nil: // the request the walk asks for, already on its way
				next, early = early, nil
			default:
				next = w.request(ctx, size, page.Next, res.Billed, res.Requests, ahead)
			}
		}
		w.discard(early, res)

		if len(fresh) > 0 {
			if err := em.send(fresh); err != nil {
				w.discard(next, res)
				res.Outcome = Failed
				return res, err
			}
		}
		res.New += len(fresh)
		if stopErr != nil {
			return res, stopErr
		}
		if next == nil {
			break
		}
		cur = next
	}
	if err := em.finish(); err != nil {
		res.Outcome = Failed
		return res, err
	}

	mem := st.memory(res.Outcome)
	res.Found, res.Rebookmarked, res.Removed = st.found(res.Outcome), st.rebookmarked(res.Outcome), st.removed
	mem.SyncedAt = res.StartedAt
	var interval time.Duration
	if prev != nil && !prev.SyncedAt.IsZero() {
		interval = res.StartedAt.Sub(prev.SyncedAt)
		mem.History = append(mem.History, prev.History...)
	}
	mem.History = append(mem.History, SyncRecord{At: res.StartedAt, Interval: interval, Found: res.Found, Billed: res.Billed})
	if len(mem.History) > historyLength {
		mem.History = mem.History[len(mem.History)-historyLength:]
	}
	res.Memory = mem
	return res, nil
}

// emitter calls Emit in a goroutine of its own, page after page, so that
// the walk goes on reading while a page is being emitted.
type emitter[T any] struct {
	q      chan []T
	failed chan struct{} // closed when Emit has failed; err is then set
	done   chan struct{} // closed when the goroutine has ended
	err    error
	once   sync.Once
}

func (w *Walker[T]) emitter(ctx context.Context) *emitter[T] {
	e := &emitter[T]{q: make(chan []T, 1), failed: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(e.done)
		for items := range e.q {
			if e.err != nil || w.Emit == nil {
				continue
			}
			if err := w.Emit(ctx, items); err != nil {
				e.err = err
				close(e.failed)
			}
		}
	}()
	return e
}

// send queues items; it fails once an earlier Emit has failed.
func (e *emitter[T]) send(items []T) error {
	if err := e.failure(); err != nil {
		return err // not queued: select would choose at random
	}
	select {
	case e.q <- items:
		return nil
	case <-e.failed:
		return e.err
	}
}

// failure is the error of an Emit that has failed, nil while none has.
func (e *emitter[T]) failure() error {
	select {
	case <-e.failed:
		return e.err
	default:
		return nil
	}
}

// finish waits for every queued page to be emitted and returns the first
// Emit error.
func (e *emitter[T]) finish() error {
	e.once.Do(func() { close(e.q) })
	<-e.done
	return e.err
}

// request is one Fetch call in flight.
type request[T any] struct {
	size  int
	token string
	// billedBefore and requestsBefore are the walk's counts before this
	// request, as the walk will have them if earlier pages matched their Peeks.
	billedBefore, requestsBefore int
	ctx                          context.Context
	cancel                       context.CancelFunc
	// early is the request this one started from its Peek; set before done
	// delivers.
	early *request[T]
	done  chan fetched[T]
	// slots, for a request started from a Peek, holds its place among the
	// requests outstanding ahead of the walk, until the walk waits for its
	// page (so a request the walk waits for never waits for a place).
	slots chan struct{}
}

// maxAhead is how many requests a first walk may have started from Peeks
// and not yet taken.
const maxAhead = 2

// release gives back the request's place among those started ahead.
func (r *request[T]) release() {
	if r.slots != nil {
		<-r.slots
		r.slots = nil
	}
}

type fetched[T any] struct {
	page Page[T]
	err  error
}

// request starts a Fetch of size items from token. ahead, when set, may
// start the next request from the first Peek.
func (w *Walker[T]) request(ctx context.Context, size int, token string, billedBefore, requestsBefore int, ahead func(*request[T], Peek) *request[T]) *request[T] {
	ctx, cancel := context.WithCancel(ctx)
	r := &request[T]{size: size, token: token, billedBefore: billedBefore, requestsBefore: requestsBefore, ctx: ctx, cancel: cancel, done: make(chan fetched[T], 1)}
	go func() {
		defer cancel()
		peeked := false
		page, err := w.Fetch(ctx, size, token, func(p Peek) {
			if ahead != nil && !peeked {
				if r.early = ahead(r, p); r.early != nil {
					// Let the new request go out before this goroutine
					// decodes its page: it would otherwise wait in this
					// P's run queue for the whole decode (about 0.2 ms a
					// page, a third of the API's own time per page).
					runtime.Gosched()
				}
			}
			peeked = true
		})
		r.done <- fetched[T]{page, err}
	}()
	return r
}

// discard ends a request whose page the walk will not use. If the API
// answered, the page was read and billed: it counts in the result.
func (w *Walker[T]) discard(r *request[T], res *Result) {
	if r == nil {
		return
	}
	r.cancel()
	f := <-r.done
	// Cancel what r started before giving back r's place: the request it
	// started may be waiting for a place to start one more.
	if r.early != nil {
		r.early.cancel()
	}
	r.release()
	if f.err == nil {
		res.Requests++
		res.PageSizes = append(res.PageSizes, r.size)
		res.Billed += len(f.page.Items)
	}
	w.discard(r.early, res)
}
