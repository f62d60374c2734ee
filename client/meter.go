package client

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"
)

// DefaultUSDPerPost is the post-read rate of the interface document (Part 8):
// about half a cent per post returned. Owned reads (a user reading their own
// bookmarks with their own app) are billed at USD 0.001 on the real API.
const DefaultUSDPerPost = 0.005

// Usage is what a Meter recorded for one (user, operation), or a total.
type Usage struct {
	UserID    string
	Operation Operation
	// Requests is the number of HTTP requests sent, retries included.
	Requests int
	// OK is the number of 2xx responses decoded successfully.
	OK int
	// PostsReturned is the posts billed: meta.result_count summed over 200
	// post pages (list_bookmarks, get_folder), and the posts in pages read
	// whole but refused for their shape (X billed them all the same).
	PostsReturned int
	// PostsUnread is what X may have billed on top, in 200 post pages whose
	// body could not be read (cut short, not JSON, over the size cap): how
	// many posts they held is not known, so each counts the page size asked
	// for (10 when omitted), an upper bound. Not priced in USD.
	PostsUnread int
	// RateLimited is the number of 429 responses received.
	RateLimited int
	// RateLimitWaits and Waited are the waits for a window to reset (after a
	// 429, or because the client's budget was used up) and their total time.
	RateLimitWaits int
	Waited         time.Duration
	// Retries and Backoff are the backoff sleeps before retrying a 5xx, a
	// connection error or an unreadable body, and their total time.
	Retries int
	Backoff time.Duration
	// Errors counts failed requests other than 429s: error statuses,
	// connection errors and unreadable bodies (each attempt counts).
	Errors int
	// Refused counts calls the client's budget refused without sending.
	Refused int
	// USD is the estimated cost: PostsReturned × the meter's rate.
	USD float64
}

// Meter records usage per (user, operation). Safe for concurrent use; one
// Meter may be shared by several clients (WithMeter).
type Meter struct {
	rate float64
	mu   sync.Mutex
	m    map[budgetKey]*Usage
}

// NewMeter returns a meter that estimates cost at usdPerPost per post
// returned; a rate ≤ 0 (or NaN) selects DefaultUSDPerPost.
func NewMeter(usdPerPost float64) *Meter {
	if !(usdPerPost > 0) || math.IsInf(usdPerPost, 0) {
		usdPerPost = DefaultUSDPerPost
	}
	return &Meter{rate: usdPerPost, m: map[budgetKey]*Usage{}}
}

// USDPerPost is the meter's rate.
func (m *Meter) USDPerPost() float64 { return m.rate }

func (m *Meter) add(user string, op Operation, f func(u *Usage)) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := budgetKey{user, op}
	u := m.m[k]
	if u == nil {
		u = &Usage{UserID: user, Operation: op}
		m.m[k] = u
	}
	f(u)
}

// Usage returns one (user, operation) row (zero when nothing was recorded).
func (m *Meter) Usage(userID string, op Operation) Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	if u := m.m[budgetKey{userID, op}]; u != nil {
		return m.priced(*u)
	}
	return Usage{UserID: userID, Operation: op}
}

func (m *Meter) priced(u Usage) Usage {
	u.USD = float64(u.PostsReturned) * m.rate
	return u
}

// Snapshot returns every row, sorted by user ID, then operation.
func (m *Meter) Snapshot() []Usage {
	m.mu.Lock()
	out := make([]Usage, 0, len(m.m))
	for _, u := range m.m {
		out = append(out, m.priced(*u))
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b Usage) int {
		if c := cmp.Compare(a.UserID, b.UserID); c != 0 {
			return c
		}
		return cmp.Compare(a.Operation, b.Operation)
	})
	return out
}

// Total sums every row; UserID and Operation are empty.
func (m *Meter) Total() Usage {
	var t Usage
	for _, u := range m.Snapshot() {
		t.Requests += u.Requests
		t.OK += u.OK
		t.PostsReturned += u.PostsReturned
		t.PostsUnread += u.PostsUnread
		t.RateLimited += u.RateLimited
		t.RateLimitWaits += u.RateLimitWaits
		t.Waited += u.Waited
		t.Retries += u.Retries
		t.Backoff += u.Backoff
		t.Errors += u.Errors
		t.Refused += u.Refused
	}
	return m.priced(t)
}
