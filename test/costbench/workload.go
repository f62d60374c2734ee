package costbench

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"time"
)

// Workload is a workload file (test/costbench/workloads/*.json). Unknown fields are
// an error, so a field added to the file is never silently ignored.
type Workload struct {
	Name  string `json:"name"`
	About string `json:"about"`
	Seed  uint64 `json:"seed"`
	Users int    `json:"users"`
	// Rounds is the number of incremental syncs after the first.
	Rounds        int       `json:"rounds"`
	RoundInterval Duration  `json:"round_interval"`
	RateLimit     RateLimit `json:"rate_limit"`
	// InitialBookmarks: each user's list length before the first sync.
	InitialBookmarks []Bucket `json:"initial_bookmarks"`
	// NewBookmarksPerRound: how many posts a user bookmarks between two syncs.
	NewBookmarksPerRound []Bucket `json:"new_bookmarks_per_round"`
	PerRoundEvents       Events   `json:"per_round_events"`
	// EventOrder says, in words, how a round's events happen. Only the
	// texts in eventOrders are implemented; any other is refused.
	EventOrder string `json:"event_order"`

	// syncsPerRound is how many syncs each round of the file is spread
	// over (WithRoundInterval); 0 means one.
	syncsPerRound int
}

// SyncsPerRound is how many syncs each round of the file is spread over.
func (w *Workload) SyncsPerRound() int { return max(1, w.syncsPerRound) }

// eventOrder is how the benchmark reads one event_order text.
type eventOrder struct {
	// removeHeldOnly: a removal that does not take the newest post takes a
	// held post (bookmarked before the previous sync), not any post.
	removeHeldOnly bool
}

// eventOrders are the event_order texts of the workload files in
// test/costbench/workloads, and how each is read. A text not listed is
// refused: it says something about the events that no code here does.
var eventOrders = map[string]eventOrder{
	"new bookmarks, unbookmarks and re-bookmarks of held posts are interleaved in random order within a round": {},
	"new bookmarks, unbookmarks and re-bookmarks of held posts are interleaved in random order within a round; " +
		"a share of each round's new bookmarks (resave_removed_share_of_new) are posts this account removed in an earlier round, saved again; " +
		"a re-bookmark burst re-saves 2-3 held posts one after the other, in random order; " +
		"unbookmarks other than the newest pick a held post uniformly at random anywhere in the list": {removeHeldOnly: true},
}

// RateLimit is the per-user limit of the list operation.
type RateLimit struct {
	ListRequestsPerWindow int      `json:"list_requests_per_window"`
	Window                Duration `json:"window"`
}

// Bucket is a share of users (or of rounds) and a uniform range of counts.
type Bucket struct {
	Share float64 `json:"share"`
	Min   int     `json:"min"`
	Max   int     `json:"max"`
}

// Range is a uniform integer range [Min, Max].
type Range struct {
	Min int `json:"min"`
	Max int `json:"max"`
}

// Events are the per-round removals and re-bookmarks of each user.
type Events struct {
	// UnbookmarkProbability: chance that a user removes bookmarks in a round.
	UnbookmarkProbability float64 `json:"unbookmark_probability"`
	// UnbookmarkCount: how many, when they do.
	UnbookmarkCount Range `json:"unbookmark_count"`
	// UnbookmarkNewestShare: chance that a removal takes the newest post
	// (else a uniformly random one).
	UnbookmarkNewestShare float64 `json:"unbookmark_newest_share"`
	// RebookmarkHeldProbability: chance that a user re-bookmarks one held
	// post (bookmarked before the previous sync) in a round.
	RebookmarkHeldProbability float64 `json:"rebookmark_held_probability"`
	// RebookmarkBurst, when set: a user re-saves several held posts one
	// after the other.
	RebookmarkBurst *Burst `json:"rebookmark_burst,omitempty"`
	// ResaveRemovedShareOfNew: chance that a new bookmark is a post the user
	// removed in an earlier round, saved again (when there is one).
	ResaveRemovedShareOfNew float64 `json:"resave_removed_share_of_new"`
}

// Burst is a run of re-saves of held posts, one after the other.
type Burst struct {
	// Probability that a user makes a burst in a round.
	Probability float64 `json:"probability"`
	// Min and Max bound the number of posts re-saved (uniform).
	Min int `json:"min"`
	Max int `json:"max"`
	// Order of the re-saves: "random" (a random permutation of the posts
	// chosen) is the only one implemented.
	Order string `json:"order"`
}

// Duration is a time.Duration written as a Go duration string ("24h").
type Duration time.Duration

// UnmarshalJSON implements json.Unmarshaler.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("duration must be a string such as \"24h\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// MarshalJSON implements json.Marshaler.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// LoadWorkload reads and validates a workload file.
func LoadWorkload(path string) (*Workload, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	w, err := ParseWorkload(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return w, nil
}

// ParseWorkload decodes and validates a workload.
func ParseWorkload(b []byte) (*Workload, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var w Workload
	if err := dec.Decode(&w); err != nil {
		return nil, err
	}
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return &w, nil
}

// Validate reports every problem of the workload.
func (w *Workload) Validate() error {
	var errs []error
	check := func(ok bool, format string, args ...any) {
		if !ok {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(w.Users >= 1, "users must be at least 1, got %d", w.Users)
	check(w.Rounds >= 0, "rounds must not be negative, got %d", w.Rounds)
	check(w.RoundInterval > 0, "round_interval must be positive")
	check(w.RateLimit.ListRequestsPerWindow >= 1, "rate_limit.list_requests_per_window must be at least 1")
	check(w.RateLimit.Window > 0, "rate_limit.window must be positive")
	checkBuckets := func(name string, bs []Bucket) {
		check(len(bs) > 0, "%s must have at least one bucket", name)
		sum := 0.0
		for i, b := range bs {
			check(b.Share >= 0, "%s[%d].share must not be negative", name, i)
			check(b.Min >= 0 && b.Min <= b.Max, "%s[%d]: need 0 <= min <= max, got %d..%d", name, i, b.Min, b.Max)
			sum += b.Share
		}
		check(len(bs) == 0 || math.Abs(sum-1) < 1e-6, "%s: shares sum to %g, not 1", name, sum)
	}
	checkBuckets("initial_bookmarks", w.InitialBookmarks)
	checkBuckets("new_bookmarks_per_round", w.NewBookmarksPerRound)
	e := w.PerRoundEvents
	prob := func(name string, p float64) {
		check(p >= 0 && p <= 1, "per_round_events.%s must be in [0,1], got %g", name, p)
	}
	prob("unbookmark_probability", e.UnbookmarkProbability)
	prob("unbookmark_newest_share", e.UnbookmarkNewestShare)
	prob("rebookmark_held_probability", e.RebookmarkHeldProbability)
	prob("resave_removed_share_of_new", e.ResaveRemovedShareOfNew)
	check(e.UnbookmarkCount.Min >= 0 && e.UnbookmarkCount.Min <= e.UnbookmarkCount.Max,
		"per_round_events.unbookmark_count: need 0 <= min <= max, got %d..%d", e.UnbookmarkCount.Min, e.UnbookmarkCount.Max)
	if b := e.RebookmarkBurst; b != nil {
		prob("rebookmark_burst.probability", b.Probability)
		check(b.Min >= 1 && b.Min <= b.Max, "per_round_events.rebookmark_burst: need 1 <= min <= max, got %d..%d", b.Min, b.Max)
		check(b.Order == "random", "per_round_events.rebookmark_burst.order must be \"random\" (the only order implemented), got %q", b.Order)
	}
	_, known := eventOrders[w.EventOrder]
	check(known, "event_order %q is not a reading this benchmark implements (known: the texts of reference.json and churn.json)", w.EventOrder)
	return errors.Join(errs...)
}

// WithRoundInterval is the same workload synced every d instead: the same
// events, each round's spread in their order over the syncs of its interval
// (the first half of a day's events before the noon sync, the rest before
// the next midnight one, for 12h), so that only how often it syncs differs.
// Rounds counts the syncs.
func (w *Workload) WithRoundInterval(d time.Duration) (*Workload, error) {
	orig := time.Duration(w.RoundInterval)
	if d <= 0 || orig%d != 0 {
		return nil, fmt.Errorf("round interval %s must divide the workload's %s", d, orig)
	}
	k := int(orig / d)
	c := *w
	c.Rounds = w.Rounds * k
	c.RoundInterval = Duration(d)
	c.syncsPerRound = w.SyncsPerRound() * k
	return &c, nil
}
