package client

import (
	"sync"
	"time"
)

// budgets keeps the client's own view of each (user, operation) rate-limit
// window, so that it never sends a request the server would refuse with 429:
// the configured limit, then what the headers say less the requests in
// flight. In one server window the count only goes down.
type budgets struct {
	mu     sync.Mutex
	limits map[Operation]int
	window time.Duration
	margin time.Duration
	m      map[budgetKey]*bucket
}

type budgetKey struct {
	user string
	op   Operation
}

type bucket struct {
	limit      int
	remaining  int
	reset      time.Time // end of the window; zero before the first send
	fromServer bool      // remaining/reset came from response headers
	anchored   bool      // an estimated window's reset was moved to its first response
	inflight   int
}

// locked runs f with the key's bucket under b.mu; without a limit there is
// no bucket, and f is not run.
func (b *budgets) locked(k budgetKey, f func(bk *bucket)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	bk := b.m[k]
	if limit := b.limits[k.op]; bk == nil && limit > 0 {
		bk = &bucket{limit: limit, remaining: limit}
		b.m[k] = bk
	}
	if bk != nil {
		f(bk)
	}
}

// rollLocked starts a new window when the current one is over.
func (b *budgets) rollLocked(bk *bucket, now time.Time) {
	if bk.reset.IsZero() || !now.Before(bk.reset.Add(b.margin)) {
		bk.remaining = bk.limit
		bk.reset = now.Add(b.window)
		bk.fromServer, bk.anchored = false, false
	}
}

// reserve takes one request from the window. When none is left it returns
// ok=false and how long until the window resets (reset plus margin).
func (b *budgets) reserve(k budgetKey, now time.Time) (ok bool, wait time.Duration, r Rate) {
	ok = true
	b.locked(k, func(bk *bucket) {
		b.rollLocked(bk, now)
		r = Rate{Limit: bk.limit, Remaining: bk.remaining, Reset: bk.reset}
		if bk.remaining > 0 {
			bk.remaining--
			bk.inflight++
			return
		}
		ok, wait = false, bk.reset.Add(b.margin).Sub(now)
	})
	return ok, wait, r
}

// settle ends a reserved request. hdr is the response's rate (ok when all
// three headers were present); limited marks a 429.
func (b *budgets) settle(k budgetKey, hdr Rate, ok, limited bool, now time.Time) {
	b.locked(k, func(bk *bucket) { b.settleLocked(bk, hdr, ok, limited, now) })
}

func (b *budgets) settleLocked(bk *bucket, hdr Rate, ok, limited bool, now time.Time) {
	bk.inflight = max(bk.inflight-1, 0)
	if !ok && !bk.fromServer && !bk.anchored {
		// Without headers the server's window started somewhere between
		// the first send and its response: count it from the response, so
		// the estimate never ends before the server's window does.
		if end := now.Add(b.window); end.After(bk.reset) {
			bk.reset = end
		}
		bk.anchored = true
	}
	if ok {
		rem := max(hdr.Remaining-bk.inflight, 0)
		switch {
		case bk.fromServer && hdr.Reset.Equal(bk.reset):
			bk.remaining = min(bk.remaining, rem)
			bk.limit = hdr.Limit
		case bk.fromServer && hdr.Reset.Before(bk.reset):
			// A response from an earlier window, overtaken: ignore.
		default:
			bk.limit, bk.remaining, bk.reset, bk.fromServer = hdr.Limit, rem, hdr.Reset, true
		}
	}
	if limited {
		bk.remaining = 0
		if !hdr.Reset.IsZero() && (ok || hdr.Reset.After(bk.reset) || !bk.fromServer) {
			bk.reset, bk.fromServer = hdr.Reset, true
		}
		if !bk.reset.After(now) {
			// The server refused, yet its reset (or ours) is past: hold off for
			// one margin rather than send again at once.
			bk.reset = now
		}
	}
}

// block empties the window until `until` (a 429 without a reset header),
// stored one margin early: a window is over a margin after its reset.
func (b *budgets) block(k budgetKey, until time.Time) {
	b.locked(k, func(bk *bucket) {
		bk.remaining, bk.reset = 0, until.Add(-b.margin)
		bk.fromServer, bk.anchored = false, true
	})
}

// get returns the key's window as the client sees it now.
func (b *budgets) get(k budgetKey, now time.Time) (r Rate) {
	b.locked(k, func(bk *bucket) {
		r = Rate{Limit: bk.limit, Remaining: bk.remaining, Reset: bk.reset}
		if !bk.reset.IsZero() && !now.Before(bk.reset.Add(b.margin)) {
			r = Rate{Limit: bk.limit, Remaining: bk.limit}
		}
	})
	return r
}
