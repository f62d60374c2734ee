package costbench

import (
	"context"
	"sync"

	"github.com/cloudquery/plugin-sdk/v4/state"
)

// memState is an in-memory state backend that behaves like a real one across
// syncs: SetKey is staged and becomes visible to GetKey only after Flush, so
// a sync that does not flush keeps nothing.
type memState struct {
	mu        sync.Mutex
	committed map[string]string
	staged    map[string]string
	flushes   int
}

var _ state.Client = (*memState)(nil)

func newMemState() *memState {
	return &memState{committed: map[string]string{}, staged: map[string]string{}}
}

func (m *memState) SetKey(_ context.Context, key, value string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.staged[key] = value
	return nil
}

func (m *memState) GetKey(_ context.Context, key string) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.committed[key], nil
}

func (m *memState) Flush(context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range m.staged {
		m.committed[k] = v
	}
	clear(m.staged)
	m.flushes++
	return nil
}

func (m *memState) Close() error { return nil }

// bytes is the size of the committed values.
func (m *memState) bytes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for k, v := range m.committed {
		n += len(k) + len(v)
	}
	return n
}
