package walk

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// CapStop records a walk that stopped before it ended — at the billed-post
// cap (Settings.MaxBilledPosts), or interrupted — and how far it got. Its
// memory did not advance, so the next walk starts from the top again and
// must be allowed to bill more than Billed to get past it: CheckCap refuses
// one that is not, rather than bill the same posts at every sync.
type CapStop struct {
	At     time.Time `json:"at"`     // when the capped walk started
	Cap    int       `json:"cap"`    // the walk's MaxBilledPosts
	Billed int       `json:"billed"` // the posts it was billed for
	New    int       `json:"new"`    // the posts it found that were not held
	// From is the SyncedAt of the memory the walk started from: the record
	// holds while the list's memory is that one. Zero for a first walk.
	From time.Time `json:"from"`
	// Interrupted: the walk was interrupted (Outcome Interrupted), not
	// stopped by the cap.
	Interrupted bool `json:"interrupted,omitempty"`
}

// NewCapStop records res, a walk from prev stopped at the cap of s or
// interrupted.
func NewCapStop(s Settings, prev *Memory, res *Result) *CapStop {
	c := &CapStop{At: res.StartedAt, Cap: s.MaxBilledPosts, Billed: res.Billed, New: res.New, Interrupted: res.Outcome == Interrupted}
	if prev != nil {
		c.From = prev.SyncedAt
	}
	return c
}

// First reports whether the capped walk was a first walk (nothing held).
func (c *CapStop) First() bool { return c.From.IsZero() }

func (c *CapStop) Marshal() (string, error) {
	b, err := json.Marshal(c)
	return string(b), err
}

// UnmarshalCapStop decodes a state value; "" is no record (nil, nil).
func UnmarshalCapStop(value string) (*CapStop, error) {
	if value == "" {
		return nil, nil
	}
	var c CapStop
	if err := json.Unmarshal([]byte(value), &c); err != nil {
		return nil, fmt.Errorf("billed-post cap record is not valid JSON: %w", err)
	}
	return &c, nil
}

// CheckCap reports, before any request, whether a walk from prev with
// settings s would stop where last, the list's last capped walk, stopped:
// it returns a *CapError (matching ErrBudget) when last still describes the
// list (its memory is the one last started from) and s caps the walk at no
// more than last billed. It returns nil otherwise, and for no record.
func CheckCap(s Settings, prev *Memory, last *CapStop) error {
	if last == nil || last.Interrupted || s.MaxBilledPosts == 0 || s.MaxBilledPosts > last.Billed {
		return nil
	}
	var from time.Time
	if prev != nil {
		from = prev.SyncedAt
	}
	if !from.Equal(last.From) {
		return nil // a clean walk has run since: the record is stale
	}
	return &CapError{Stop: *last, Cap: s.MaxBilledPosts, NotStarted: true}
}

// CapError is a walk that stopped at the billed-post cap, or did not start
// because it could not get past where the last one stopped (NotStarted).
// It matches ErrBudget; for an interrupted walk (Stop.Interrupted), it
// matches ErrInterrupted instead.
type CapError struct {
	// Stop is the capped walk: this one, or for NotStarted the last one.
	Stop CapStop
	// Cap is this walk's MaxBilledPosts.
	Cap        int
	NotStarted bool
}

func (e *CapError) Unwrap() error {
	if e.Stop.Interrupted {
		return ErrInterrupted
	}
	return ErrBudget
}

func (e *CapError) Error() string {
	s := e.Stop
	if s.Interrupted {
		return fmt.Sprintf("interrupted (the sync was stopped) after %d billed posts, %d of them new and kept; state not advanced: "+
			"the next sync reads the list from the top again", s.Billed, s.New)
	}
	reach, below := "the end of the list", "the posts below them"
	if !s.First() {
		reach, below = "the posts already archived", "the new posts below them and any saved since"
	}
	fix := fmt.Sprintf("raise planner.max_billed_posts once, to 0 (no cap) or above %d plus %s (the API does not say how many), then set it back", s.Billed, below)
	if e.NotStarted {
		return fmt.Sprintf("not started, nothing billed: the last sync (%s) stopped at the billed-post cap (planner.max_billed_posts: %s) "+
			"after %d billed posts, before reaching %s, and syncs read from the top, so with the cap at %d this one would stop there too. To get past, %s",
			s.At.UTC().Format("2006-01-02 15:04 MST"), capSetting(s.Cap), s.Billed, reach, e.Cap, fix)
	}
	return fmt.Sprintf("stopped at the billed-post cap (planner.max_billed_posts: %s) after %d billed posts, before reaching %s; state not advanced. "+
		"Syncs read from the top, so the next ones will not start until you %s", capSetting(s.Cap), s.Billed, reach, fix)
}

// capSetting shows a cap, saying when it is the default: a user who never
// set it must learn that there is one.
func capSetting(n int) string {
	if n == DefaultMaxBilledPosts {
		return fmt.Sprintf("%d, the default", n)
	}
	return strconv.Itoa(n)
}
