package walk

import (
	"cmp"
	"fmt"
	"math"
	"time"
)

// The API's page-size range (document Part 8).
const (
	MinPageSize = 1
	APIMaxPage  = 100
)

// Settings tune one walk as the spec's planner section does (spec.Planner
// says what each one is); the zero value of a field means its default.
type Settings struct {
	MaxPageSize    int
	RequestBudget  int // this walk's: a folder walk's is its share of folder_request_budget
	MaxBilledPosts int // 0: no cap (the spec's default is DefaultMaxBilledPosts)
	Confirmations  int
}

const (
	DefaultMaxPageSize   = 90
	DefaultRequestBudget = 150
	DefaultConfirmations = 1
)

// DefaultMaxBilledPosts is the spec's default billed-post cap of one walk:
// a bound on what a server that never stops sending new posts can bill
// (docs/cost.md says why this one; CapError how an account gets past it).
const DefaultMaxBilledPosts = 100_000

// Validate reports the first setting out of range, naming it.
func (s Settings) Validate() error {
	switch {
	case s.MaxPageSize < MinPageSize || s.MaxPageSize > APIMaxPage:
		return fmt.Errorf("max_page_size must be between %d and %d, got %d", MinPageSize, APIMaxPage, s.MaxPageSize)
	case s.RequestBudget < 1:
		return fmt.Errorf("request_budget must be at least 1, got %d", s.RequestBudget)
	case s.MaxBilledPosts < 0:
		return fmt.Errorf("max_billed_posts must be 0 (no cap) or positive, got %d", s.MaxBilledPosts)
	case s.Confirmations < 1 || s.Confirmations > 10:
		return fmt.Errorf("confirmations must be between 1 and 10, got %d", s.Confirmations)
	}
	return nil
}

// Planner chooses the size of each page of a walk: requests are free and
// posts are billed, so the cheapest walk reads exactly the posts it needs.
// docs/cost.md#the-planner-walkplannergo has the rule.
type Planner struct {
	s       Settings
	first   bool
	ceiling float64 // from history; 0 = no history
	floor   float64 // posts this walk is all but sure to need; 0 = unknown
}

// NewPlanner plans one walk of a list whose memory is prev (nil = first
// sync), starting at now, with s and the defaults of its zero fields.
func NewPlanner(s Settings, prev *Memory, now time.Time) *Planner {
	s.MaxPageSize = cmp.Or(s.MaxPageSize, DefaultMaxPageSize)
	s.RequestBudget = cmp.Or(s.RequestBudget, DefaultRequestBudget)
	s.Confirmations = cmp.Or(s.Confirmations, DefaultConfirmations)
	p := &Planner{s: s, first: prev.held() == 0}
	if prev == nil {
		return p
	}
	interval := now.Sub(prev.SyncedAt)
	samples := 0
	for _, h := range prev.History {
		if h.Interval <= 0 { // a first walk says nothing about the rate
			continue
		}
		scale := 1.0
		if interval > 0 {
			scale = math.Min(math.Max(float64(interval)/float64(h.Interval), 0.25), 4)
		}
		need := float64(h.Found)*scale + 1 + float64(s.Confirmations)
		p.ceiling = math.Max(p.ceiling, need)
		if samples == 0 || need < p.floor {
			p.floor = need
		}
		samples++
	}
	if samples < minFloorSamples {
		p.floor = 0
	}
	p.floor *= floorShare
	return p
}

// surpriseGrowth: a walk that has read n posts and not reached the held ones
// plans for surpriseGrowth·n in all (docs/cost.md#the-planner-walkplannergo: why 4).
const surpriseGrowth = 4

// The floor: an account that has needed at least F posts in each of its
// last few walks will very likely need F/2 again, and pages that end below
// what a walk needs cannot over-read.
const (
	minFloorSamples = 3
	floorShare      = 0.5
)

// Next returns the page size for the next request. read is the number of
// posts read so far, requests the number of requests made, billed the posts
// billed, and minNeeded the fewest posts the walk can still need (at least 1).
// It returns 0 when the billed-post cap is reached.
func (p *Planner) Next(read, requests, billed, minNeeded int) int {
	size := p.size(read, requests, minNeeded)
	if p.s.MaxBilledPosts > 0 {
		size = min(size, p.s.MaxBilledPosts-billed)
	}
	return max(size, 0)
}

func (p *Planner) size(read, requests, minNeeded int) int {
	minNeeded = min(max(minNeeded, MinPageSize), p.s.MaxPageSize)
	if p.first {
		return p.s.MaxPageSize
	}
	left := p.s.RequestBudget - requests
	if left <= 1 {
		return p.s.MaxPageSize
	}
	if float64(read+minNeeded) < p.floor {
		// Every post up to the floor will be needed: big pages cost nothing.
		return min(max(int(p.floor)-read, minNeeded), p.s.MaxPageSize)
	}
	n := float64(max(read, 1))
	ceiling := math.Max(p.ceiling, surpriseGrowth*n+float64(minNeeded))
	size := int(math.Ceil(n * math.Log(ceiling/n) / float64(left-1)))
	return min(max(size, minNeeded), p.s.MaxPageSize)
}
