// Package memstate is an in-memory state backend with the semantics of the
// SDK's state client: SetKey is staged, GetKey sees staged values, Flush
// commits them. Tests and benchmarks use it to keep walk state between
// in-process syncs, and the exporter to collect the state it commits with a
// run's files.
package memstate

import (
	"context"
	"maps"
	"sync"

	"github.com/cloudquery/plugin-sdk/v4/state"
)

// Store is a state.Client that keeps values in memory.
type Store struct {
	mu        sync.Mutex
	committed map[string]string
	staged    map[string]string
	flushes   int // for the tests
}

var _ state.Client = (*Store)(nil)

func New() *Store { return NewWith(nil) }

// NewWith returns a store holding a copy of committed.
func NewWith(committed map[string]string) *Store {
	return &Store{committed: maps.Collect(maps.All(committed)), staged: map[string]string{}}
}

func (s *Store) SetKey(_ context.Context, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.staged[key] = value
	return nil
}

// GetKey returns the staged value, else the committed one, else "".
func (s *Store) GetKey(_ context.Context, key string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if v, ok := s.staged[key]; ok {
		return v, nil
	}
	return s.committed[key], nil
}

func (s *Store) Flush(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	maps.Copy(s.committed, s.staged)
	clear(s.staged)
	s.flushes++
	return nil
}

// Close does nothing; the store outlives syncs.
func (*Store) Close() error { return nil }

func (s *Store) Committed() map[string]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return maps.Clone(s.committed)
}
