package walk

import (
	"encoding/json"
	"fmt"
	"time"
)

// Memory is what one list's walk keeps between syncs, in the state backend.
// It is never a pagination token: tokens are valid for one walk only.
type Memory struct {
	// Held is the list as the last clean walk left it, newest first: every post
	// the archive holds that is believed to be still in the list. The stop rule
	// needs the order, not only the newest id (docs/walk.md).
	Held *IDList `json:"held"`
	// SyncedAt is when the last clean walk started. Posts found by the next walk
	// were bookmarked after it.
	SyncedAt time.Time `json:"synced_at"`
	// History records recent clean walks, oldest first, for the planner.
	History []SyncRecord `json:"history,omitempty"`
	// Outbox is the caller's rows the destination may not hold yet (package
	// outbox), in the same state value so that both are written at once.
	Outbox json.RawMessage `json:"outbox,omitempty"`
}

// SyncRecord is what the planner remembers of one clean walk.
type SyncRecord struct {
	At       time.Time     `json:"at"`
	Interval time.Duration `json:"interval"` // since the previous clean walk (0 for a first walk)
	// Found is the number of distinct posts above the first held one: new posts
	// and re-bookmarked ones. A walk must read Found + 1 + confirmations posts.
	Found  int `json:"found"`
	Billed int `json:"billed"` // the posts the walk was billed for
}

// historyLength bounds History: enough to see an account's habit, small
// enough that the state value stays a few hundred bytes plus the held list.
const historyLength = 16

// memoryVersion is written with every memory; a newer version is refused
// rather than misread.
const memoryVersion = 1

type memoryJSON struct {
	Version  int             `json:"version"`
	Held     *IDList         `json:"held"`
	Count    int             `json:"count"`
	SyncedAt time.Time       `json:"synced_at"`
	History  []SyncRecord    `json:"history,omitempty"`
	Outbox   json.RawMessage `json:"outbox,omitempty"`
}

// Marshal encodes m for the state backend.
func (m *Memory) Marshal() (string, error) {
	held := m.Held
	if held == nil {
		held = &IDList{}
	}
	b, err := json.Marshal(memoryJSON{Version: memoryVersion, Held: held, Count: held.Len(), SyncedAt: m.SyncedAt.UTC(), History: m.History, Outbox: m.Outbox})
	return string(b), err
}

// UnmarshalMemory decodes a state value. The empty string is no memory (a
// first sync) and gives nil, nil.
func UnmarshalMemory(value string) (*Memory, error) {
	if value == "" {
		return nil, nil
	}
	var j memoryJSON
	if err := json.Unmarshal([]byte(value), &j); err != nil {
		return nil, fmt.Errorf("walk memory is not valid JSON: %w", err)
	}
	if j.Version != memoryVersion {
		return nil, fmt.Errorf("walk memory has version %d; this build reads version %d", j.Version, memoryVersion)
	}
	if j.Held == nil {
		j.Held = &IDList{}
	}
	if j.Held.Len() != j.Count {
		return nil, fmt.Errorf("walk memory is damaged: %d held ids, header says %d", j.Held.Len(), j.Count)
	}
	return &Memory{Held: j.Held, SyncedAt: j.SyncedAt, History: j.History, Outbox: j.Outbox}, nil
}

// held returns the number of held posts (0 for no memory).
func (m *Memory) held() int {
	if m == nil {
		return 0
	}
	return m.Held.Len()
}
