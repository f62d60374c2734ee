package billing

import (
	"sync"
	"time"

	"github.com/cq-source-x/cq-source-x/ids"
)

// The day's ledger: X bills a resource once per UTC day, so the meter keeps
// per user the ids it saw billed that day; the account's state carries it to
// the next sync of the day (account/billed.go).

// BilledToday is what the meter holds as billed for userID on its UTC day
// (YYYY-MM-DD, "" when nothing was), for RestoreBilled.
func (m *Meter) BilledToday(userID string) (day string, posts, users *ids.Set) {
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.ledger(userID, "")
	return l.day, l.posts.Clone(), l.users.Clone()
}

// RestoreBilled adds to userID's ledger what an earlier meter saw billed on
// day; a day older than the ledger's is ignored, a newer one replaces it.
func (m *Meter) RestoreBilled(userID, day string, posts, users []string) {
	if day == "" {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	l := m.ledger(userID, day)
	l.add(&l.posts, day, posts)
	l.add(&l.users, day, users)
}

// EnterBilling is called by a reader before it bills userID's reads: the
// first since the ledger was put away brings it back with load, while the
// others wait; a failed load is tried again by the next. Every EnterBilling
// is followed by one LeaveBilling.
func (m *Meter) EnterBilling(userID string, load func() (day string, posts, users []string, err error)) error {
	m.mu.Lock()
	r := m.ledger(userID, "")
	m.mu.Unlock()
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
// out puts the ledger away with store (kept when store fails).
func (m *Meter) LeaveBilling(userID string, store func() error) error {
	m.mu.Lock()
	r := m.ledger(userID, "")
	m.mu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.n--; r.n > 0 || !r.loaded {
		return nil // a ledger that could not be brought back is not stored over the one put away
	}
	if err := store(); err != nil {
		return err
	}
	m.mu.Lock()
	r.day, r.posts, r.users = "", ids.Set{}, ids.Set{}
	m.mu.Unlock()
	r.loaded = false
	return nil
}

// HoldsBilled reports whether the meter holds userID's ledger (not put away).
func (m *Meter) HoldsBilled(userID string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ledger(userID, "").day != ""
}

// ledger is the resources of one user billed on one UTC day (m.mu guards
// them), and the readers billing the user's reads (mu guards them): between
// readers the ledger is put away (loaded is false), so a sync of many
// accounts holds only the ledgers of the accounts being read.
type ledger struct {
	day          string
	posts, users ids.Set

	mu     sync.Mutex
	n      int
	loaded bool
}

// ledger returns userID's ledger, moved to day unless day is older than
// the day it is on (an older day is forgotten). m.mu held.
func (m *Meter) ledger(userID, day string) *ledger {
	l := m.days[userID]
	switch {
	case l == nil:
		l = &ledger{day: day}
		m.days[userID] = l
	case day > l.day:
		l.day, l.posts, l.users = day, ids.Set{}, ids.Set{}
	}
	return l
}

// add records ids billed on day in seen, one of l's sets, and returns how
// many were new; on an older day (a clock turned back) all, recording none.
func (l *ledger) add(seen *ids.Set, day string, ids []string) int {
	if day != l.day {
		return len(ids)
	}
	n := 0
	for _, id := range ids {
		if seen.Add(id) {
			n++
		}
	}
	return n
}

// utcDay is t's UTC date, YYYY-MM-DD: the window X de-duplicates in.
func utcDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }
