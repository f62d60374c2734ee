package resources

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/ids"
)

// recordArchived wraps the bookmarks walk's emit: the ids of the rows it
// emits join the account's archived ids, which save stores. The compliance
// job checks every post ever written to x_bookmarks, including those whose
// bookmark was removed since; the plugin cannot read the destination, so
// the ids are kept in the state backend. save is called once the walk has
// ended, cleanly or not (rows emitted before a failure were written too),
// with the walk's error; it returns that error, or its own.
func recordArchived(s *account.Session, emit func(context.Context, []*bookmark) error) (
	recording func(context.Context, []*bookmark) error, save func(context.Context, error) error) {
	if s.Archived != nil { // the destination keeps the record
		return emit, func(_ context.Context, walkErr error) error { return walkErr }
	}
	var mu sync.Mutex
	var emitted []uint64
	recording = func(ctx context.Context, rows []*bookmark) error {
		if err := emit(ctx, rows); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, b := range rows {
			if n, ok := ids.Parse(b.post.ID); ok {
				emitted = append(emitted, n)
			}
		}
		return nil
	}
	save = func(ctx context.Context, walkErr error) error {
		mu.Lock()
		defer mu.Unlock()
		if err := addArchived(ctx, s, ids.NewSorted(emitted)); err != nil {
			return errors.Join(walkErr, fmt.Errorf("%s: %w", s.ID(), err))
		}
		emitted = nil
		return walkErr
	}
	return recording, save
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
