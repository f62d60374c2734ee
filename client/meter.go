package client

import (
	"cmp"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/cq-source-x/cq-source-x/ids"
)

// X's published pay-per-use rates (2026), in USD per resource.
const (
	// DefaultUSDPerPost is a post read.
	DefaultUSDPerPost = 0.005
	// DefaultUSDPerOwnedPost is an "owned read": the owner of the developer
	// app reading their own bookmarks with it (GET /2/users/:id/bookmarks
	// with :id the authenticated user, who owns the app).
	DefaultUSDPerOwnedPost = 0.001
	// DefaultUSDPerUser is a user read (an expanded author, or GET /2/users/me).
	DefaultUSDPerUser = 0.010
)

// Rates are the USD rates a Meter prices billed resources at.
type Rates struct {
	Post      float64 // a post read
	OwnedPost float64 // a post of an owned read (list_bookmarks of the app's owner)
	User      float64 // a user read
}

// DefaultRates are X's published rates.
func DefaultRates() Rates {
	return Rates{Post: DefaultUSDPerPost, OwnedPost: DefaultUSDPerOwnedPost, User: DefaultUSDPerUser}
}

// withDefaults replaces a rate that is not a finite number ≥ 0 by X's.
func (r Rates) withDefaults() Rates {
	d := DefaultRates()
	fix := func(v *float64, def float64) {
		if !(*v >= 0) || math.IsInf(*v, 0) {
			*v = def
		}
	}
	fix(&r.Post, d.Post)
	fix(&r.OwnedPost, d.OwnedPost)
	fix(&r.User, d.User)
	return r
}

// Billed is what one 2xx body held that X bills, by type: the ids of the posts
// (its data, and expanded posts in includes) and of the expanded users, and
// the number of media objects (X does not bill media). X bills each resource
// once per UTC day, so the meter needs the ids, not only the counts.
type Billed struct {
	Posts []string
	Users []string
	// UnknownPosts counts posts billed whose ids could not be read (a page
	// refused for its shape): billed, never de-duplicated.
	UnknownPosts int
	Media        int
	// mismatch says how the page's meta.result_count disagreed with what it
	// held ("" when it did not).
	mismatch string
}

// Usage is what a Meter recorded for one (user, operation), or a total. Its
// billed counts and USD are estimates: X publishes rates, not bills per
// request, and calls its de-duplication a soft guarantee.
type Usage struct {
	UserID    string
	Operation Operation
	// Requests is the number of HTTP requests sent, retries included.
	Requests int
	// OK is the number of 2xx responses decoded successfully.
	OK int
	// PostsReturned is the posts 2xx bodies held (and X bills): the posts
	// of their data and the expanded posts in their includes, also of pages
	// read whole but refused for their shape.
	PostsReturned int
	// PostsBilled is PostsReturned less the posts this meter already saw
	// billed for the same user on the same UTC day (X bills a resource once
	// per UTC day).
	PostsBilled int
	// UsersReturned and UsersBilled are the same for users: expanded
	// authors, and the user of GET /2/users/me.
	UsersReturned int
	UsersBilled   int
	// MediaReturned is the media objects expanded (not billed by X).
	MediaReturned int
	// PostsUnread is what X may have billed on top, in 200 post pages whose
	// body could not be read (cut short, not JSON, over the size cap): how
	// many posts they held is not known, so each counts the page size asked
	// for (10 when omitted), an upper bound. Not priced in USD.
	PostsUnread int
	// CountMismatches counts pages whose meta.result_count disagreed with
	// the posts they held (the posts held are what is billed).
	CountMismatches int
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
	// OwnedReads says the posts were priced at the owned-read rate.
	OwnedReads bool
	// PostsUSD, UsersUSD and USD are the estimated cost: the billed posts
	// and users times their rates, and their sum.
	PostsUSD float64
	UsersUSD float64
	USD      float64
}

// Meter records usage per (user, operation), and which resources it saw
// billed per user on the current UTC day. Safe for concurrent use; one Meter
// may be shared by several clients (WithMeter).
type Meter struct {
	rates Rates
	mu    sync.Mutex
	m     map[budgetKey]*Usage
	owned map[string]bool
	days  map[string]*ledger // by user id

	readersMu sync.Mutex
	readers   map[string]*ledgerReaders // by user id
}

// ledgerReaders are the readers billing a user's reads at the moment, and
// whether the user's ledger of the day is in the meter or put away.
type ledgerReaders struct {
	mu     sync.Mutex
	n      int
	loaded bool
}

// NewMeter returns a meter that prices posts at usdPerPost (a rate that is
// not a finite number > 0 selects DefaultUSDPerPost) and the other resource
// types at X's published rates.
func NewMeter(usdPerPost float64) *Meter {
	r := DefaultRates()
	if usdPerPost > 0 {
		r.Post = usdPerPost
	}
	return NewMeterWithRates(r)
}

// NewMeterWithRates returns a meter that prices at r (a rate that is not a
// finite number ≥ 0 is X's).
func NewMeterWithRates(r Rates) *Meter {
	return &Meter{rates: r.withDefaults(), m: map[budgetKey]*Usage{}, owned: map[string]bool{}, days: map[string]*ledger{}, readers: map[string]*ledgerReaders{}}
}

// USDPerPost is the meter's post rate.
func (m *Meter) USDPerPost() float64 { return m.rates.Post }

// Rates are the meter's rates.
func (m *Meter) Rates() Rates { return m.rates }

// SetOwnedReads says that userID owns the developer app its token was issued
// by: its list_bookmarks posts are priced at the owned-read rate.
func (m *Meter) SetOwnedReads(userID string, owned bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owned[userID] = owned
}

func (m *Meter) add(user string, op Operation, f func(u *Usage)) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m.row(user, op))
}

func (m *Meter) row(user string, op Operation) *Usage {
	k := budgetKey{user, op}
	u := m.m[k]
	if u == nil {
		u = &Usage{UserID: user, Operation: op}
		m.m[k] = u
	}
	return u
}

// bill records the resources of one 2xx body, at now: each is billed unless
// the user's ledger already holds it for now's UTC day.
func (m *Meter) bill(user string, op Operation, now time.Time, res Billed, ok bool) {
	if m == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.row(user, op)
	if ok {
		u.OK++
	}
	day := utcDay(now)
	l := m.days[user]
	if l == nil {
		l = newLedger(day)
		m.days[user] = l
	}
	l.turn(day)
	u.PostsReturned += len(res.Posts) + res.UnknownPosts
	u.PostsBilled += l.add(kindPost, day, res.Posts) + res.UnknownPosts
	u.UsersReturned += len(res.Users)
	u.UsersBilled += l.add(kindUser, day, res.Users)
	u.MediaReturned += res.Media
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

// priced fills in the USD of a row. m.mu held.
func (m *Meter) priced(u Usage) Usage {
	postRate := m.rates.Post
	u.OwnedReads = u.Operation == OpListBookmarks && m.owned[u.UserID]
	if u.OwnedReads {
		postRate = m.rates.OwnedPost
	}
	u.PostsUSD = float64(u.PostsBilled) * postRate
	u.UsersUSD = float64(u.UsersBilled) * m.rates.User
	u.USD = u.PostsUSD + u.UsersUSD
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
		t.Add(u)
	}
	return t
}

// Add adds the counts and USD of o to u (not its user, operation or
// OwnedReads).
func (u *Usage) Add(o Usage) {
	u.Requests += o.Requests
	u.OK += o.OK
	u.PostsReturned += o.PostsReturned
	u.PostsBilled += o.PostsBilled
	u.UsersReturned += o.UsersReturned
	u.UsersBilled += o.UsersBilled
	u.MediaReturned += o.MediaReturned
	u.PostsUnread += o.PostsUnread
	u.CountMismatches += o.CountMismatches
	u.RateLimited += o.RateLimited
	u.RateLimitWaits += o.RateLimitWaits
	u.Waited += o.Waited
	u.Retries += o.Retries
	u.Backoff += o.Backoff
	u.Errors += o.Errors
	u.Refused += o.Refused
	u.PostsUSD += o.PostsUSD
	u.UsersUSD += o.UsersUSD
	u.USD += o.USD
}

// BilledToday is what the meter holds as billed for userID on its current
// UTC day: the day (YYYY-MM-DD, "" when nothing was billed) and a copy of
// the posts and users, for a later meter of the same user to continue from
// (RestoreBilled).
func (m *Meter) BilledToday(userID string) (day string, posts, users *ids.Set) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.days[userID]
	if l == nil {
		return "", &ids.Set{}, &ids.Set{}
	}
	return l.day, l.seen[kindPost].Clone(), l.seen[kindUser].Clone()
}

// RestoreBilled adds to userID's ledger what an earlier meter saw billed on
// day: resources read again on that UTC day are not billed again. A day
// older than the one the ledger is on is ignored; a newer one replaces it.
func (m *Meter) RestoreBilled(userID, day string, posts, users []string) {
	if day == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.days[userID]
	if l == nil {
		l = newLedger(day)
		m.days[userID] = l
	}
	if !l.turn(day) {
		return
	}
	l.add(kindPost, day, posts)
	l.add(kindUser, day, users)
}

// A user's ledger of the day holds every post read that day, the most a
// meter holds. Between the readers that bill the user's reads it can be put
// away (stored, and let go) and brought back when another starts: a sync of
// many accounts then holds the ledgers of the accounts being read, not of
// every account it has read.

// EnterBilling is called by a reader before it bills userID's reads: the
// first since the ledger was put away, or ever, brings it back with load
// (RestoreBilled). Readers of the same user wait for it, so no request is
// billed before the ledger is back; a load that fails is tried again by
// the next reader. Every EnterBilling is followed by one LeaveBilling.
func (m *Meter) EnterBilling(userID string, load func() (day string, posts, users []string, err error)) error {
	r := m.ledgerReaders(userID)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.n++
	if r.loaded {
		return nil
	}
	day, posts, users, err := load()
	if err != nil {
		return err
	}
	m.RestoreBilled(userID, day, posts, users)
	r.loaded = true
	return nil
}

// LeaveBilling is called by a reader once it bills no more: the last one
// out puts the ledger away with store and the meter lets go of it. A store
// that fails keeps the ledger in the meter.
func (m *Meter) LeaveBilling(userID string, store func() error) error {
	r := m.ledgerReaders(userID)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n--; r.n > 0 || !r.loaded {
		return nil // a ledger that could not be brought back is not stored over the one put away
	}
	if err := store(); err != nil {
		return err
	}
	m.mu.Lock()
	delete(m.days, userID)
	m.mu.Unlock()
	r.loaded = false
	return nil
}

// HoldsBilled reports whether the meter holds a ledger of userID's that
// is not put away.
func (m *Meter) HoldsBilled(userID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.days[userID] != nil
}

func (m *Meter) ledgerReaders(userID string) *ledgerReaders {
	m.readersMu.Lock()
	defer m.readersMu.Unlock()
	r := m.readers[userID]
	if r == nil {
		r = &ledgerReaders{}
		m.readers[userID] = r
	}
	return r
}

// utcDay is t's UTC date, YYYY-MM-DD: the window X de-duplicates in.
func utcDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

type resourceKind uint8

const (
	kindPost resourceKind = iota
	kindUser
)

// ledger is the resources of one user billed on one UTC day.
type ledger struct {
	day  string
	seen [2]ids.Set
}

func newLedger(day string) *ledger {
	return &ledger{day: day}
}

// turn moves the ledger to day when day is not older, forgetting an older
// day, and reports whether the ledger is now on day.
func (l *ledger) turn(day string) bool {
	switch {
	case day == l.day:
		return true
	case day > l.day:
		*l = *newLedger(day)
		return true
	}
	return false
}

// add records ids of kind billed on day and returns how many were new.
// Billing on a day older than the ledger's (a clock turned back) counts
// every id and records none.
func (l *ledger) add(kind resourceKind, day string, ids []string) int {
	if day != l.day {
		return len(ids)
	}
	n := 0
	for _, id := range ids {
		if l.seen[kind].Add(id) {
			n++
		}
	}
	return n
}
