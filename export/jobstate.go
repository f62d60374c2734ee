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
	// committed is the state as the last commit left it (see freeze).
	committed *archive.State

	mu     sync.Mutex
	onDisk map[string]string // the job keys as DIR/.state holds them
}

func newRunState(r *run) *runState {
	s := &runState{Store: memstate.NewWith(r.state.Keys), r: r, onDisk: map[string]string{}}
	for k, v := range r.state.Keys {
		if isJobKey(k) {
			s.onDisk[k] = v
		}
	}
	return s
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
// when a job was created or uploaded.
func (s *runState) Flush(ctx context.Context) error {
	if err := s.Store.Flush(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	jobs, started := map[string]string{}, false
	for k, v := range s.Committed() {
		if isJobKey(k) {
			jobs[k] = v
			started = started || (v != "" && v != s.onDisk[k])
		}
	}
	if !started { // a job is started only with the compliance section, which freezes
		return nil
	}
	keys := maps.Clone(s.committed.Keys)
	for k, v := range jobs {
		if v == "" { // an ended job stays on disk until the run's commit
			v = s.onDisk[k]
		}
		keys[k] = v
	}
	next := *s.committed
	next.Keys = keys
	if err := archive.SaveState(s.r.out, &next, s.r.o.Step, "compliance job"); err != nil {
		return err
	}
	for k := range jobs {
		s.onDisk[k] = keys[k]
	}
	s.r.o.Step("compliance job saved")
	return nil
}
