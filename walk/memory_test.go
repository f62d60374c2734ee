package walk

import (
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/ids"
)

// Memory.Marshal writes the JSON of memoryJSON, the bytes every state
// written before holds, so that each reads the same.
func TestMemoryMarshalIsJSON(t *testing.T) {
	nums := &IDList{}
	for i := range 5000 {
		nums.Append(strconv.Itoa(1_800_000_000_000_000_000 - i*104729))
	}
	cet := time.FixedZone("CET", 3600)
	for name, m := range map[string]*Memory{
		"no held list": {SyncedAt: time.Date(2026, 11, 22, 6, 0, 0, 0, time.UTC)},
		"numbers":      {Held: nums, SyncedAt: time.Date(2026, 11, 22, 7, 0, 0, 999, cet)},
		"strings and history": {Held: NewIDList("a\"b", "<c>", "é"), SyncedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
			History: []SyncRecord{{At: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Interval: time.Hour, Found: 3, Billed: 5}}},
		"outbox": {Held: NewIDList("1", "2"), SyncedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
			Outbox: json.RawMessage(`{"version":1,"entries":[{"sent_at":"2026-01-02T03:04:05Z","sends":1,"rows":"AA=="}]}`)},
	} {
		held := m.Held
		if held == nil {
			held = &IDList{}
		}
		want, err := json.Marshal(memoryJSON{Version: memoryVersion, Held: held, Count: held.Len(), SyncedAt: m.SyncedAt.UTC(), History: m.History, Outbox: m.Outbox})
		if err != nil {
			t.Fatal(err)
		}
		got, err := m.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if got != string(want) {
			t.Errorf("%s:\nMarshal      %.300s\njson.Marshal %.300s", name, got, want)
		}
		back, err := UnmarshalMemory(got)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if back.Held.Len() != held.Len() || !back.SyncedAt.Equal(m.SyncedAt) || len(back.History) != len(m.History) || string(back.Outbox) != string(m.Outbox) {
			t.Errorf("%s: round trip %+v", name, back)
		}
		for i := range held.Len() {
			if back.Held.At(i) != held.At(i) {
				t.Fatalf("%s: id %d is %q, want %q", name, i, back.Held.At(i), held.At(i))
			}
		}
	}
}

// A held list of non-numeric ids cut short says where.
func TestIDListOfStringsCutShortSaysWhere(t *testing.T) {
	text, err := NewIDList("a-1", "b-2", "c-3").MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := ids.Unpack(text, "test")
	cut, _ := ids.Pack(raw[:len(raw)-1])
	var l IDList
	if err := l.UnmarshalText(cut); err == nil || err.Error() != "held post list: truncated at id 2 of 3" {
		t.Fatalf("cut list: %v", err)
	}
}
