package compliance

import (
	"context"
	"errors"
	"fmt"
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
	emitted []uint64
}

// NewArchiver returns the archiver of the account's bookmarks walk.
func NewArchiver(s *account.Session) *Archiver { return &Archiver{s: s} }

// Add records a post whose row was emitted.
func (a *Archiver) Add(postID string) {
	if a.s.Archive != nil { // the destination keeps the record
		return
	}
	if n, ok := ids.Parse(postID); ok {
		a.mu.Lock()
		a.emitted = append(a.emitted, n)
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
	if err := addArchived(ctx, a.s, ids.NewSorted(a.emitted)); err != nil {
		return errors.Join(walkErr, fmt.Errorf("%s: %w", a.s.ID(), err))
	}
	a.emitted = nil
	return walkErr
}

// addArchived adds ids to the account's archived ids. The first time, the
// walk's held list seeds them (loadArchived).
func addArchived(ctx context.Context, s *account.Session, emitted ids.Sorted) error {
	archived, recorded, err := loadArchived(ctx, s)
	if err != nil {
		return err
	}
	all := archived.Union(emitted)
	if len(all) == 0 || (recorded && len(all) == len(archived)) {
		return nil
	}
	text, err := all.Marshal()
	if err != nil {
		return err
	}
	if err := s.State.SetKey(ctx, account.ArchivedKey(s.UserID), text); err != nil {
		return fmt.Errorf("writing state %q: %w", account.ArchivedKey(s.UserID), err)
	}
	return nil
}
