package billing

import (
	"cmp"
	"reflect"
	"slices"
	"sync"
	"time"
)

// Operation names one endpoint of the API client (client.Operation).
type Operation string

// Billed is what one 2xx body held that X bills: the ids of the posts (data
// and includes) and users (X bills each once per UTC day), the media objects
// (not billed), and the write requests (each billed).
type Billed struct {
	Posts         []string
	Users         []string
	UnknownPosts  int // posts whose ids could not be read (a page refused for its shape): never de-duplicated
	Media         int
	Writes        int
	Owned         bool   // the posts are an owned read when the user owns the app (SetOwnedReads)
	CountMismatch string // how the page's meta.result_count disagreed with what it held (what is billed)
}

// Usage is what a Meter recorded for one (user, operation), or a total. Its
// billed counts and USD are estimates: X calls its de-duplication a soft guarantee.
type Usage struct {
	UserID    string
	Operation Operation
	Requests  int // HTTP requests sent, retries included
	OK        int // 2xx responses decoded
	// PostsReturned is the posts 2xx bodies held (and X bills), data and
	// includes, also of pages refused for their shape; PostsBilled is less
	// those this meter saw billed for the same user on the same UTC day.
	PostsReturned int
	PostsBilled   int
	// UsersReturned and UsersBilled are the same for users (expanded, or GET /2/users/me).
	UsersReturned int
	UsersBilled   int
	MediaReturned int // not billed by X
	WritesBilled  int // write requests X answered with its data
	// PostsUnread is what X may have billed on top, in 200 post pages whose
	// body could not be read: the page size asked for each. Not priced.
	PostsUnread     int
	CountMismatches int // pages whose meta.result_count disagreed with the posts they held
	RateLimited     int // 429 responses
	// RateLimitWaits and Waited are the waits for a window to reset (after a
	// 429, or because the client's budget was used up) and their total time.
	RateLimitWaits int
	Waited         time.Duration
	// Retries and Backoff are the sleeps before retrying a transient fault, and their total time.
	Retries    int
	Backoff    time.Duration
	Errors     int  // failed attempts other than 429s: error statuses, connection errors, unreadable bodies
	Refused    int  // calls the client's budget refused without sending
	OwnedReads bool // the posts were priced at the owned-read rate
	// PostsUSD, UsersUSD, WritesUSD and USD are the billed counts times their rates, and their sum.
	PostsUSD  float64
	UsersUSD  float64
	WritesUSD float64
	USD       float64
}

// Meter records usage per (user, operation), and the day's ledger of what
// each user was billed (ledger.go). Safe for concurrent use.
type Meter struct {
	rates  Rates
	mu     sync.Mutex
	m      map[rowKey]*Usage
	owned  map[string]bool    // users who own their app
	owning map[rowKey]bool    // rows whose posts are owned reads of an owner
	days   map[string]*ledger // by user id
}

type rowKey struct {
	user string
	op   Operation
}

// NewMeter returns a meter that prices at r (an invalid rate is X's).
func NewMeter(r Rates) *Meter {
	return &Meter{rates: r.withDefaults(), m: map[rowKey]*Usage{}, owned: map[string]bool{}, owning: map[rowKey]bool{},
		days: map[string]*ledger{}}
}

func (m *Meter) Rates() Rates { return m.rates }

// SetOwnedReads says that userID owns the developer app its token was issued
// by: the posts of its owned reads are priced at the owned-read rate.
func (m *Meter) SetOwnedReads(userID string, owned bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.owned[userID] = owned
}

// Record changes the row of (user, op) with f.
func (m *Meter) Record(user string, op Operation, f func(u *Usage)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	f(m.row(user, op))
}

func (m *Meter) row(user string, op Operation) *Usage {
	k := rowKey{user, op}
	u := m.m[k]
	if u == nil {
		u = &Usage{UserID: user, Operation: op}
		m.m[k] = u
	}
	return u
}

// Bill records what one 2xx body of (user, op) billed at now (ok: it was
// decoded): each resource not yet in the user's ledger of now's UTC day.
func (m *Meter) Bill(user string, op Operation, now time.Time, res Billed, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.row(user, op)
	if ok {
		u.OK++
	}
	if res.Owned {
		m.owning[rowKey{user, op}] = true
	}
	if res.CountMismatch != "" {
		u.CountMismatches++
	}
	day := utcDay(now)
	l := m.ledger(user, day)
	u.PostsReturned += len(res.Posts) + res.UnknownPosts
	u.PostsBilled += l.add(&l.posts, day, res.Posts) + res.UnknownPosts
	u.UsersReturned += len(res.Users)
	u.UsersBilled += l.add(&l.users, day, res.Users)
	u.MediaReturned += res.Media
	u.WritesBilled += res.Writes
}

// Usage returns one (user, operation) row (zero when nothing was recorded).
func (m *Meter) Usage(userID string, op Operation) Usage { return m.usage(userID, op, false) }

// Take returns one (user, operation) row and starts it again from zero.
func (m *Meter) Take(userID string, op Operation) Usage { return m.usage(userID, op, true) }

func (m *Meter) usage(userID string, op Operation, take bool) Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := Usage{UserID: userID, Operation: op}
	if row := m.m[rowKey{userID, op}]; row != nil {
		u = m.priced(*row)
	}
	if take {
		delete(m.m, rowKey{userID, op})
	}
	return u
}

// priced fills in the USD of a row. m.mu held.
func (m *Meter) priced(u Usage) Usage {
	u.OwnedReads = m.owning[rowKey{u.UserID, u.Operation}] && m.owned[u.UserID]
	u.PostsUSD = float64(u.PostsBilled) * m.rates.PostRate(u.OwnedReads)
	u.UsersUSD = float64(u.UsersBilled) * m.rates.User
	u.WritesUSD = float64(u.WritesBilled) * m.rates.Write
	u.USD = u.PostsUSD + u.UsersUSD + u.WritesUSD
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
		return cmp.Or(cmp.Compare(a.UserID, b.UserID), cmp.Compare(a.Operation, b.Operation))
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

// Add adds every number of o to u, a field added to Usage too.
func (u *Usage) Add(o Usage) {
	to, from := reflect.ValueOf(u).Elem(), reflect.ValueOf(o)
	for i := range to.NumField() {
		switch f := to.Field(i); f.Kind() {
		case reflect.Int, reflect.Int64: // Int64: the time.Durations
			f.SetInt(f.Int() + from.Field(i).Int())
		case reflect.Float64:
			f.SetFloat(f.Float() + from.Field(i).Float())
		}
	}
}
