package compliance

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/ids"
)

// Archiver records what a bookmarks walk emits among the account's
// archived posts: the checks cover every post ever written to x_bookmarks,
// also those whose bookmark was removed since, and every post written to
// x_bookmark_referenced_posts (a post a bookmark quotes, answers or
// reposts, whose content the archive holds too). The plugin cannot read the
// destination, so it keeps their ids in the state backend. A destination
// that keeps the record of x_bookmarks itself (account.Session.Archive)
// needs the record of the referenced posts only.
type Archiver struct {
	s          *account.Session
	mu         sync.Mutex
	emitted    []found
	referenced []uint64
	authored   []Authored
}

// NewArchiver returns the archiver of the account's bookmarks walk.
func NewArchiver(s *account.Session) *Archiver { return &Archiver{s: s} }

// Add records a post whose row was emitted, with the row's dates, and the
// posts its rows of x_bookmark_referenced_posts hold (refs), each with its
// author.
func (a *Archiver) Add(post Authored, d Dates, refs []Authored) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if n, ok := ids.Parse(post.PostID); ok && a.s.Archive == nil {
		a.emitted = append(a.emitted, found{n, d})
	}
	for _, r := range refs {
		if n, ok := ids.Parse(r.PostID); ok {
			a.referenced = append(a.referenced, n)
		}
	}
	a.authored = append(append(a.authored, post), refs...)
}

// Save stores the posts recorded, once the walk has ended, cleanly or not
// (rows emitted before a failure were written too), and returns walkErr,
// the walk's error, or its own.
func (a *Archiver) Save(ctx context.Context, walkErr error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	err := errors.Join(addReferenced(ctx, a.s, ids.NewSorted(a.referenced)), addAuthors(ctx, a.s, a.authored))
	if err == nil && a.s.Archive == nil {
		err = addArchived(ctx, a.s, a.emitted)
	}
	if err != nil {
		return errors.Join(walkErr, fmt.Errorf("%s: %w", a.s.ID(), err))
	}
	a.emitted, a.referenced, a.authored = nil, nil, nil
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
	return account.SetKey(ctx, s.State, account.ArchivedKey(s.UserID), text)
}

// addReferenced adds posts to the account's referenced posts.
func addReferenced(ctx context.Context, s *account.Session, referenced ids.Sorted) error {
	if len(referenced) == 0 {
		return nil
	}
	had, err := loadReferenced(ctx, s)
	if err != nil {
		return err
	}
	all := had.Union(referenced)
	if len(all) == len(had) {
		return nil
	}
	text, err := all.Marshal()
	if err != nil {
		return err
	}
	return account.SetKey(ctx, s.State, account.ReferencedKey(s.UserID), text)
}

// loadReferenced reads the account's referenced posts.
func loadReferenced(ctx context.Context, s *account.Session) (ids.Sorted, error) {
	key := account.ReferencedKey(s.UserID)
	value, err := account.GetKey(ctx, s.State, key)
	if err != nil {
		return nil, err
	}
	return ids.UnmarshalSorted(value, "state "+strconv.Quote(key))
}
