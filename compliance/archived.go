package compliance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/ids"
)

// Archiver records the posts a bookmarks walk emits among the account's
// archived ids: the checks cover every post ever written to x_bookmarks,
// also those whose bookmark was removed since, and the plugin cannot read
// the destination, so it keeps the ids in the state backend. A destination
// that keeps that record itself (account.Session.Archive) needs none.
type Archiver struct {
	s       *account.Session
	mu      sync.Mutex
	emitted []found
}

// NewArchiver returns the archiver of the account's bookmarks walk.
func NewArchiver(s *account.Session) *Archiver { return &Archiver{s: s} }

// Add records a post whose row was emitted, with the row's dates.
func (a *Archiver) Add(postID string, d Dates) {
	if a.s.Archive != nil { // the destination keeps the record
		return
	}
	if n, ok := ids.Parse(postID); ok {
		a.mu.Lock()
		a.emitted = append(a.emitted, found{n, d})
		a.mu.Unlock()
	}
}

// Save stores the posts recorded, once the walk has ended, cleanly or not
// (rows emitted before a failure were written too), and returns walkErr,
// the walk's error, or its own.
func (a *Archiver) Save(ctx context.Context, walkErr error) error {
	if a.s.Archive != nil {
		return walkErr
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := addArchived(ctx, a.s, a.emitted); err != nil {
		return errors.Join(walkErr, fmt.Errorf("%s: %w", a.s.ID(), err))
	}
	a.emitted = nil
	return walkErr
}

// addArchived adds posts to the account's archived posts. The first time,
// the walk's held list seeds them (loadRecord).
func addArchived(ctx context.Context, s *account.Session, emitted []found) error {
	rec, recorded, err := loadRecord(ctx, s)
	if err != nil {
		return err
	}
	if recorded && !slices.ContainsFunc(emitted, func(f found) bool { return !rec.ids.Has(f.id) }) {
		return nil // nothing new (rows sent again are recorded)
	}
	if len(emitted) == 0 && len(rec.ids) == 0 {
		return nil
	}
	rec.add(emitted)
	text, err := rec.marshal()
	if err != nil {
		return err
	}
	if err := account.SetKey(ctx, s.State, account.ArchivedKey(s.UserID), text); err != nil {
		return err
	}
	return nil
}
