package resources

import (
	"context"
	"errors"
	"fmt"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/walk"
)

// capGuard keeps a list's walks from billing posts they cannot get past
// (docs/design/plugin.md#resolvers).
type capGuard struct {
	s    *account.Session
	key  string // the record's state key
	last *walk.CapStop
}

// startCapGuard reads the cap record of the list whose memory is under
// listKey, and returns a *walk.CapError (matching walk.ErrBudget) when a walk
// from prev with settings would stop where the last capped one did.
func startCapGuard(ctx context.Context, s *account.Session, listKey string, settings walk.Settings, prev *walk.Memory) (*capGuard, error) {
	g := &capGuard{s: s, key: account.CapKey(listKey)}
	value, err := account.GetKey(ctx, s.State, g.key)
	if err != nil {
		return nil, err
	}
	if g.last, err = walk.UnmarshalCapStop(value); err != nil {
		return nil, fmt.Errorf("state %q: %w", g.key, err)
	}
	return g, walk.CheckCap(settings, prev, g.last)
}

// notStarted is the result to report for a walk that could not start with
// err: for one the cap refused, a walk stopped by it that billed nothing.
func notStarted(s *account.Session, err error) *walk.Result {
	if !errors.Is(err, walk.ErrBudget) {
		return nil
	}
	return &walk.Result{Outcome: walk.StoppedByBudget, StartedAt: s.Clock.Now()}
}

// done records how the walk from prev ended, and returns its error or the
// record's (docs/design/plugin.md#resolvers).
func (g *capGuard) done(ctx context.Context, settings walk.Settings, prev *walk.Memory, res *walk.Result, err error) error {
	switch {
	case err == nil && g.last != nil:
		return account.SetKey(ctx, g.s.State, g.key, "")
	case errors.Is(err, walk.ErrBudget) && res != nil && res.Outcome == walk.StoppedByBudget:
		return g.record(ctx, settings, walk.NewCapStop(settings, prev, res), err)
	case errors.Is(err, walk.ErrInterrupted) && res != nil && res.Outcome == walk.Interrupted:
		stop := walk.NewCapStop(settings, prev, res)
		if res.Billed == 0 || (g.last != nil && !g.last.Interrupted && g.last.From.Equal(stop.From)) {
			return &walk.CapError{Stop: *stop, Cap: settings.MaxBilledPosts}
		}
		return g.record(ctx, settings, stop, err)
	}
	return err
}

// record stores stop as the list's cap record, and returns the error that
// says what the next sync needs (or err with the record's).
func (g *capGuard) record(ctx context.Context, settings walk.Settings, stop *walk.CapStop, err error) error {
	value, serr := stop.Marshal()
	if serr == nil {
		serr = account.SetKey(ctx, g.s.State, g.key, value)
	}
	if serr != nil {
		return errors.Join(err, serr)
	}
	return &walk.CapError{Stop: *stop, Cap: settings.MaxBilledPosts}
}
