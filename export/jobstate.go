package export

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strings"
	"sync"

	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/resources"
)

// runState is the plugin's state backend during a run. Its keys are
// committed with the run's files (memstate), except the compliance jobs in
// progress, which a Flush also writes to DIR/.state at once: a job
// describes no data of the files (it is X's, with the ids it was given),
// and a run killed while it runs must find it again, not start another (X
// runs one job at a time). Everything else on disk stays as the last
// commit left it.
type runState struct {
	*memstate.Store
	r *run

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

func isJobKey(key string) bool { return strings.HasPrefix(key, resources.ComplianceJobKeyPrefix) }

// freeze encodes the committed state as it is on disk, before the run
// changes the written-id sets it shares (saveJobs writes them back as they
// were). Only runs that check compliance need it.
func (s *runState) freeze() error { return s.r.state.encodeBulk() }

// Flush commits the staged keys in memory and writes the job keys to disk
// when a job was created or uploaded.
func (s *runState) Flush(ctx context.Context) error {
	if err := s.Store.Flush(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	jobs := map[string]string{}
	for k, v := range s.Committed() {
		if isJobKey(k) {
			jobs[k] = v
		}
	}
	// A job that ended is cleared with the run's commit, with what it
	// reported: a run killed before then reads its results again.
	started := false
	for k, v := range jobs {
		started = started || (v != "" && v != s.onDisk[k])
	}
	if !started {
		return nil
	}
	old := s.r.state
	keys := maps.Clone(old.Keys)
	maps.Copy(keys, jobs)
	encoded, err := json.Marshal(keys)
	if err != nil {
		return err
	}
	if old.bulk == nil {
		// Encoding the written-id sets now would record this run's ids.
		return errors.New("export: a compliance job cannot be saved: the committed state was not frozen at the start of the run")
	}
	next := &diskState{Format: stateFormat, Keys: keys, LastRun: old.LastRun,
		bulk: &stateBulk{keys: encoded, written: old.bulk.written}}
	if err := saveState(s.r.out, next, s.r.o.Step, "compliance job"); err != nil {
		return err
	}
	s.onDisk = jobs
	s.r.o.Step("compliance job saved")
	return nil
}
