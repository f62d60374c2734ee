package walk

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// peekingList is a list whose Fetch passes each page's Peek before it
// returns the page, as the API client does when it finds the meta at the
// end of a body, and which records when requests overlap. It is safe for
// the concurrent requests of a first walk.
type peekingList struct {
	mu       sync.Mutex
	ids      []string
	requests []string                 // "token/size", in the order they started
	started  map[string]chan struct{} // token → closed when a request for it starts
	billed   int
	// ahead counts the pages during whose Fetch the next page's request
	// started (waited for up to wait after the Peek).
	ahead int
	wait  time.Duration
	// lieOnce makes the first Peek name the wrong next token.
	lieOnce bool
}

func newPeekingList(n int, wait time.Duration) *peekingList {
	l := &peekingList{started: map[string]chan struct{}{}, wait: wait}
	for i := range n {
		l.ids = append(l.ids, strconv.Itoa(1_000_000+n-i))
	}
	return l
}

func (l *peekingList) startedChan(token string) chan struct{} {
	c, ok := l.started[token]
	if !ok {
		c = make(chan struct{})
		l.started[token] = c
	}
	return c
}

func (l *peekingList) fetch(_ context.Context, size int, token string, peek func(Peek)) (Page[string], error) {
	l.mu.Lock()
	l.requests = append(l.requests, token+"/"+strconv.Itoa(size))
	c := l.startedChan(token)
	select {
	case <-c:
	default:
		close(c)
	}
	off := 0
	if token != "" {
		off, _ = strconv.Atoi(token)
	}
	end := min(off+size, len(l.ids))
	page := Page[string]{Items: slices.Clone(l.ids[off:end])}
	if end < len(l.ids) {
		page.Next = strconv.Itoa(end)
	}
	l.billed += len(page.Items)
	told := page.Next
	if l.lieOnce && told != "" {
		l.lieOnce = false
		told = strconv.Itoa(end + 7)
	}
	var next chan struct{}
	if told != "" {
		next = l.startedChan(told)
	}
	l.mu.Unlock()

	peek(Peek{Next: told, Count: len(page.Items)})
	if next != nil {
		select {
		case <-next:
			l.mu.Lock()
			l.ahead++
			l.mu.Unlock()
		case <-time.After(l.wait):
		}
	}
	return page, nil
}

func runPeeking(t *testing.T, l *peekingList, prev *Memory) (*Result, []string) {
	t.Helper()
	var emitted []string
	w := &Walker[string]{
		Fetch: l.fetch,
		ID:    func(s string) string { return s },
		Emit: func(_ context.Context, items []string) error {
			emitted = append(emitted, items...)
			return nil
		},
	}
	res, err := w.Run(context.Background(), prev)
	if err != nil {
		t.Fatal(err)
	}
	return res, emitted
}

// A first walk reads the whole list whatever it holds, so it asks for the
// next page as soon as a page's Peek names it, while that page is still
// being decoded: the requests are the ones it would make anyway.
func TestFirstWalkAsksForTheNextPageOnThePeek(t *testing.T) {
	l := newPeekingList(500, 5*time.Second)
	res, emitted := runPeeking(t, l, nil)
	mustClean(t, res, ReachedEnd)
	pages := (500 + DefaultMaxPageSize - 1) / DefaultMaxPageSize
	if l.ahead != pages-1 {
		t.Fatalf("%d of %d pages had the next request start during their Fetch, want all but the last", l.ahead, pages)
	}
	var want []string
	for off := 0; off < 500; off += DefaultMaxPageSize {
		tok := ""
		if off > 0 {
			tok = strconv.Itoa(off)
		}
		want = append(want, tok+"/"+strconv.Itoa(DefaultMaxPageSize))
	}
	if !slices.Equal(l.requests, want) {
		t.Fatalf("requests %v, want %v", l.requests, want)
	}
	if res.Billed != 500 || res.Requests != pages || len(emitted) != 500 || !slices.Equal(emitted, l.ids) {
		t.Fatalf("billed %d, requests %d, emitted %d posts (in list order: %v)", res.Billed, res.Requests, len(emitted), slices.Equal(emitted, l.ids))
	}
}

// A walk that holds posts may stop on any page, so it never asks for a page
// before it has read the one before: no post is billed that the stop rule
// would not read.
func TestAWalkThatHoldsPostsDoesNotAskAhead(t *testing.T) {
	l := newPeekingList(300, 5*time.Second)
	first, _ := runPeeking(t, l, nil)
	l.mu.Lock()
	for i := range 200 {
		l.ids = append([]string{strconv.Itoa(5_000_000 + i)}, l.ids...)
	}
	l.requests, l.billed, l.ahead, l.wait = nil, 0, 0, 5*time.Millisecond
	l.started = map[string]chan struct{}{}
	l.mu.Unlock()
	res, emitted := runPeeking(t, l, first.Memory)
	mustClean(t, res, MetHeld)
	if l.ahead != 0 {
		t.Fatalf("an incremental walk asked ahead on %d pages", l.ahead)
	}
	if len(emitted) != 200 || res.Billed != l.billed {
		t.Fatalf("emitted %d, billed %d (list billed %d)", len(emitted), res.Billed, l.billed)
	}
}

// If a page's Peek names another next token than the decoded page (a
// retried request got a different answer), the request made on the Peek is
// not used: it is counted as read and billed, and the walk asks again.
func TestAPeekThatDisagreesWithItsPageIsNotUsed(t *testing.T) {
	l := newPeekingList(400, 5*time.Second)
	l.lieOnce = true
	res, emitted := runPeeking(t, l, nil)
	mustClean(t, res, ReachedEnd)
	if !slices.Equal(emitted, l.ids) {
		t.Fatalf("emitted %d posts, want the list's %d in order", len(emitted), len(l.ids))
	}
	if res.Billed != l.billed || res.Billed <= 400 {
		t.Fatalf("walk billed %d, list billed %d: the unused page must count", res.Billed, l.billed)
	}
	if res.Requests != len(l.requests) || len(res.PageSizes) != res.Requests {
		t.Fatalf("requests %d, page sizes %d, list saw %d", res.Requests, len(res.PageSizes), len(l.requests))
	}
	if res.Duplicates != 0 {
		t.Fatalf("duplicates %d: the unused page's posts must not be counted as read", res.Duplicates)
	}
}

// Requests started from Peeks run ahead of the walk, but only so far: when
// emitting stalls, pages do not pile up in memory.
func TestAFirstWalkDoesNotRunFarAheadOfEmit(t *testing.T) {
	l := newPeekingList(2000, 0)
	release := make(chan struct{})
	var startedWhileStalled int
	w := &Walker[string]{
		Fetch: l.fetch,
		ID:    func(s string) string { return s },
		Emit: func(_ context.Context, items []string) error {
			if release != nil {
				time.Sleep(200 * time.Millisecond) // let the requests run as far as they may
				l.mu.Lock()
				startedWhileStalled = len(l.requests)
				l.mu.Unlock()
				close(release)
				release = nil
			}
			return nil
		},
	}
	res, err := w.Run(context.Background(), nil)
	if err != nil || res.Billed != 2000 {
		t.Fatalf("walk: %v, billed %d", err, res.Billed)
	}
	// Page 1 is being emitted, page 2 queued, page 3 taken by the walk
	// (waiting to queue), and maxAhead pages requested from Peeks.
	if want := 3 + maxAhead; startedWhileStalled > want {
		t.Fatalf("%d requests started while Emit stalled on the first page, want at most %d", startedWhileStalled, want)
	}
}

// Once Emit has failed the walk has failed, and it asks for no more pages:
// each would be billed for nothing. (Pages already asked for from Peeks
// still come back, and are counted.)
func TestAWalkAsksForNoPageAfterEmitFailed(t *testing.T) {
	for range 20 {
		l := newPeekingList(90*40, 0)
		w := &Walker[string]{
			Fetch: func(ctx context.Context, size int, token string, peek func(Peek)) (Page[string], error) {
				time.Sleep(time.Millisecond) // the API's latency
				return l.fetch(ctx, size, token, peek)
			},
			ID: func(s string) string { return s },
			Emit: func(context.Context, []string) error {
				return errors.New("the destination refused the batch")
			},
		}
		res, err := w.Run(context.Background(), nil)
		if err == nil || res.Outcome != Failed {
			t.Fatalf("outcome %s, error %v", res.Outcome, err)
		}
		l.mu.Lock()
		requests := slices.Clone(l.requests)
		l.mu.Unlock()
		// Page 1, whose Emit fails, and the pages asked for from the Peeks
		// of pages 1 and 2 while it was being emitted.
		if len(requests) > 3 {
			t.Fatalf("Emit failed on page 1, and the walk asked for %d pages: %v", len(requests), requests)
		}
		if res.Billed != l.billed {
			t.Fatalf("result billed %d posts, the API %d", res.Billed, l.billed)
		}
	}
}

// A destination that stalls, then fails: the walk gives up the requests it
// started ahead without starting others in their place.
func TestEmitFailingAfterAStallStartsNoMoreRequests(t *testing.T) {
	for range 5 {
		l := newPeekingList(90*40, 0)
		first := true
		w := &Walker[string]{Fetch: l.fetch, ID: func(s string) string { return s },
			Emit: func(context.Context, []string) error {
				if first {
					first = false
					time.Sleep(30 * time.Millisecond) // every request that may start, starts
				}
				return errors.New("the destination is down")
			}}
		if _, err := w.Run(context.Background(), nil); err == nil {
			t.Fatal("the walk ended without Emit's error")
		}
		l.mu.Lock()
		requests := slices.Clone(l.requests)
		l.mu.Unlock()
		// Page 1 is being emitted, page 2 queued, page 3 taken by the walk,
		// and maxAhead pages asked for from Peeks.
		if want := 3 + maxAhead; len(requests) > want {
			t.Fatalf("%d requests, want at most %d: %v", len(requests), want, requests)
		}
	}
}

// Discarding a chain of requests started from Peeks (here: a Peek that
// disagrees with its page) starts none in their place: each request's
// place is given back only once the request it started is cancelled.
func TestDiscardingRequestsAheadStartsNoOther(t *testing.T) {
	for range 20 {
		var mu sync.Mutex
		var tokens []string
		thirdPeeked := make(chan struct{})
		var once sync.Once
		fetch := func(_ context.Context, size int, token string, peek func(Peek)) (Page[string], error) {
			mu.Lock()
			tokens = append(tokens, token)
			mu.Unlock()
			items := make([]string, size)
			for i := range items {
				items[i] = token + "-" + strconv.Itoa(i)
			}
			switch token {
			case "": // its Peek names x1, its page names 90
				peek(Peek{Next: "x1", Count: size})
				<-thirdPeeked
				time.Sleep(2 * time.Millisecond) // x2's Peek is waiting for a place
				return Page[string]{Items: items, Next: "90"}, nil
			case "x1":
				peek(Peek{Next: "x2", Count: size})
				return Page[string]{Items: items, Next: "x2"}, nil
			case "x2":
				once.Do(func() { close(thirdPeeked) })
				peek(Peek{Next: "x3", Count: size})
				return Page[string]{Items: items, Next: "x3"}, nil
			default:
				return Page[string]{Items: items}, nil
			}
		}
		w := &Walker[string]{Fetch: fetch, ID: func(s string) string { return s }}
		if _, err := w.Run(context.Background(), nil); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(tokens, "x3") {
			t.Fatalf("discarding x1 and x2 started x3: %v", tokens)
		}
	}
}

// The pages of a discarded request were billed all the same: they count
// against max_billed_posts before the request that replaces it is sized.
func TestDiscardedPagesCountAgainstTheBudget(t *testing.T) {
	l := newPeekingList(400, 0)
	l.lieOnce = true
	w := &Walker[string]{Fetch: l.fetch, ID: func(s string) string { return s }, Settings: Settings{MaxBilledPosts: 200}}
	res, err := w.Run(context.Background(), nil)
	if !errors.Is(err, ErrBudget) {
		t.Fatalf("error %v, want the budget reached", err)
	}
	if res.Billed > 200 || l.billed != res.Billed {
		t.Fatalf("billed %d posts (the API %d) with max_billed_posts 200: requests %v", res.Billed, l.billed, l.requests)
	}
}
