package export

import (
	"context"
	"maps"
	"sync"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
)

// runState is the plugin's state backend during a run: its keys are
// committed with the run's files, but the compliance jobs in progress,
// which a Flush writes at once (docs/design/exporter.md).
type runState struct {
	*memstate.Store
	r *run

	mu sync.Mutex
	// committed is the state as DIR/.state holds it: the last commit's,
	// with the jobs saved since (see freeze).
	committed *archive.State
}

func isJobKey(key string) bool {
	k, _ := account.ParseKey(key)
	return k.Kind == account.ComplianceJob
}

// freeze keeps the committed state as it is now (a job's save writes back
// the committed state, not the run's). Only runs that check compliance
// need it.
func (s *runState) freeze() {
	old := s.r.state
	s.committed = &archive.State{Keys: maps.Clone(old.Keys), Written: old.Written, Stray: old.Stray, LastRun: old.LastRun}
}

// Flush commits the staged keys in memory, and writes the job keys to disk
// when a job was created or uploaded; an ended job stays on disk until the
// run's commit.
func (s *runState) Flush(ctx context.Context) error {
	if err := s.Store.Flush(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.committed == nil { // no compliance section: no job
		return nil
	}
	started := map[string]string{}
	for k, v := range s.Committed() {
		if isJobKey(k) && v != "" && v != s.committed.Keys[k] {
			started[k] = v
		}
	}
	if len(started) == 0 {
		return nil
	}
	next := *s.committed
	next.Keys = maps.Clone(next.Keys)
	maps.Copy(next.Keys, started)
	if err := archive.SaveState(s.r.out, &next, s.r.o.Step, "compliance job"); err != nil {
		return err
	}
	s.committed = &next
	s.r.o.Step("compliance job saved")
	return nil
}
