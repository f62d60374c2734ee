package walk

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// A walk stopped by the cap bills its posts and does not advance; the next
// walk starts from the top again, so with the same cap it would bill the same
// posts and stop at the same place. CheckCap refuses it before any request,
// and lets through a walk whose cap is raised above what the last one billed.
func TestAWalkThatCannotGetPastTheLastCappedOneDoesNotStart(t *testing.T) {
	l := newList(1000)
	capped := Settings{MaxBilledPosts: 100}
	w := &Walker[string]{Fetch: l.fetch, ID: func(s string) string { return s }, Settings: capped}
	res, err := w.Run(context.Background(), nil)
	if !errors.Is(err, ErrBudget) || res.Billed != 100 {
		t.Fatalf("first walk: %v, billed %d", err, res.Billed)
	}
	stop := NewCapStop(capped, nil, res)
	if !stop.First() || stop.Billed != 100 || stop.Cap != 100 || stop.New != 100 {
		t.Fatalf("record %+v", stop)
	}
	value, err := stop.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	last, err := UnmarshalCapStop(value)
	if err != nil || !last.At.Equal(stop.At) || last.Billed != 100 || last.Cap != 100 || last.New != 100 || !last.First() {
		t.Fatalf("record round trip: %+v, %v", last, err)
	}

	for _, tc := range []struct {
		name    string
		cap     int
		refused bool
	}{
		{"same cap", 100, true},
		{"lower cap", 50, true},
		{"raised above what it billed", 101, false},
		{"no cap", 0, false},
	} {
		err := CheckCap(Settings{MaxBilledPosts: tc.cap}, nil, last)
		var capErr *CapError
		if refused := errors.As(err, &capErr); refused != tc.refused || (refused && !errors.Is(err, ErrBudget)) {
			t.Errorf("%s: %v", tc.name, err)
		}
	}
	// A clean walk since (the memory is another) makes the record stale.
	if err := CheckCap(capped, &Memory{Held: &IDList{}, SyncedAt: time.Now()}, last); err != nil {
		t.Errorf("stale record refused a walk: %v", err)
	}
	if err := CheckCap(capped, nil, nil); err != nil {
		t.Errorf("no record: %v", err)
	}
}

// The same holds for an incremental walk that found more new posts than the
// cap lets it read: the record is tied to the memory it started from.
func TestAnIncrementalWalkStoppedByTheCapIsRecordedAgainstItsMemory(t *testing.T) {
	prev := &Memory{Held: &IDList{}, SyncedAt: time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)}
	prev.Held.Append("1")
	res := &Result{Outcome: StoppedByBudget, Billed: 120, New: 120, StartedAt: prev.SyncedAt.Add(24 * time.Hour)}
	stop := NewCapStop(Settings{MaxBilledPosts: 120}, prev, res)
	if stop.First() || !stop.From.Equal(prev.SyncedAt) {
		t.Fatalf("record %+v", stop)
	}
	err := CheckCap(Settings{MaxBilledPosts: 120}, prev, stop)
	if err == nil {
		t.Fatal("a walk that would stop at the same place was not refused")
	}
	for _, want := range []string{"not started, nothing billed", "planner.max_billed_posts: 120", "after 120 billed posts",
		"before reaching the posts already archived", "raise planner.max_billed_posts once, to 0 (no cap) or above 120"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

// A user who never set the cap learns that there is one, and that it is
// the default, when a walk reaches it.
func TestTheDefaultCapSaysItIsTheDefault(t *testing.T) {
	stop := CapStop{Cap: DefaultMaxBilledPosts, Billed: DefaultMaxBilledPosts, New: DefaultMaxBilledPosts}
	for _, e := range []*CapError{{Stop: stop, Cap: DefaultMaxBilledPosts}, {Stop: stop, Cap: DefaultMaxBilledPosts, NotStarted: true}} {
		if msg := e.Error(); !strings.Contains(msg, "(planner.max_billed_posts: 100000, the default)") ||
			!strings.Contains(msg, "raise planner.max_billed_posts once, to 0 (no cap) or above 100000") {
			t.Errorf("%q", msg)
		}
	}
	if msg := (&CapError{Stop: CapStop{Cap: 200, Billed: 200}, Cap: 200}).Error(); strings.Contains(msg, "default") {
		t.Errorf("%q", msg)
	}
}

// A walk whose sync is stopped ends Interrupted: nothing advances, the posts
// it emitted stay emitted, and its record is no reason to refuse the next
// walk, whatever its cap: the cap did not stop it.
func TestAnInterruptedWalkIsRecordedButRefusesNoWalk(t *testing.T) {
	l := newList(1000)
	l.fail = map[int]error{4: fmt.Errorf("x api: list_bookmarks: %w", ErrInterrupted)}
	emitted := 0
	w := &Walker[string]{Fetch: l.fetch, ID: func(s string) string { return s }, Settings: Settings{MaxBilledPosts: 300},
		Emit: func(_ context.Context, items []string) error { emitted += len(items); return nil }}
	res, err := w.Run(context.Background(), nil)
	if !errors.Is(err, ErrInterrupted) || res.Outcome != Interrupted || res.Memory != nil || res.Billed != 270 || emitted != 270 {
		t.Fatalf("walk: %v, %+v, emitted %d", err, res, emitted)
	}
	stop := NewCapStop(Settings{MaxBilledPosts: 300}, nil, res)
	if !stop.Interrupted || stop.Billed != 270 || stop.New != 270 {
		t.Fatalf("record %+v", stop)
	}
	value, _ := stop.Marshal()
	last, err := UnmarshalCapStop(value)
	if err != nil || !last.Interrupted {
		t.Fatalf("round trip: %+v, %v", last, err)
	}
	for _, c := range []int{100, 270, 300, 0} {
		if err := CheckCap(Settings{MaxBilledPosts: c}, nil, last); err != nil {
			t.Errorf("cap %d: an interrupted walk's record refused the next walk: %v", c, err)
		}
	}
	e := &CapError{Stop: *last, Cap: 300}
	if !errors.Is(e, ErrInterrupted) || errors.Is(e, ErrBudget) {
		t.Errorf("%v matches ErrBudget, or not ErrInterrupted", e)
	}
	for _, want := range []string{"interrupted", "after 270 billed posts, 270 of them new and kept", "reads the list from the top again"} {
		if !strings.Contains(e.Error(), want) {
			t.Errorf("%q lacks %q", e, want)
		}
	}
}
