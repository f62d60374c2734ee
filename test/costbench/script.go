package costbench

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// Habits says how the shares of new_bookmarks_per_round are read.
type Habits string

const (
	// PerUser: each user is assigned a bucket once, by share; each round
	// draws a count uniformly in that bucket's [min, max].
	PerUser Habits = "per-user"
	// PerRound: each (user, round) draws a bucket by share, then a count.
	PerRound Habits = "per-round"
)

// ParseHabits checks a -habits value.
func ParseHabits(s string) (Habits, error) {
	switch h := Habits(s); h {
	case PerUser, PerRound:
		return h, nil
	}
	return "", fmt.Errorf("habits must be %q or %q, got %q", PerUser, PerRound, s)
}

// EventKind is what a user does between two syncs.
type EventKind uint8

const (
	// NewBookmark bookmarks a post never bookmarked before.
	NewBookmark EventKind = iota + 1
	// Unbookmark removes a bookmark.
	Unbookmark
	// Rebookmark bookmarks a held post again: it moves to the top.
	Rebookmark
	// ResaveRemoved bookmarks again a post the user removed in an earlier
	// round.
	ResaveRemoved
	// burst stands for a rebookmark_burst while a round's events are
	// shuffled; it becomes Rebookmark events.
	burst
)

// Event is one action of a user, resolved to a post.
type Event struct {
	Kind   EventKind
	PostID string
}

// UserRound is what one user does in one round.
type UserRound struct {
	// Bucket is the index in new_bookmarks_per_round the count was drawn from.
	Bucket int
	// Events in the order they happen.
	Events []Event
	// Counts of the events that happened, and of those skipped because the
	// list was empty or held nothing. Rebookmarked includes the posts
	// re-saved in bursts.
	New, Unbookmarked, Rebookmarked, Skipped int
	// NewestRemoved counts removals that took the newest post.
	NewestRemoved int
	// ResavedRemoved counts posts removed in an earlier round and saved
	// again (not counted in New); Bursts the rebookmark bursts.
	ResavedRemoved, Bursts int
}

// Expect is what the script's own model of a list says at a sync: the list
// length and the lower bound. The simulator must agree.
type Expect struct {
	Len, Bound int
}

// Script is a workload turned into concrete, deterministic events: the same
// seed gives the same script, and every strategy replays it on a fresh
// simulator.
type Script struct {
	Workload *Workload
	Habits   Habits
	UserIDs  []string
	// Initial lists as SeedBookmarks returns them (newest first); every
	// simulator must return the same ids.
	Initial       [][]string
	InitialBucket []int
	// Rounds[r-1][u] is user u's activity before sync r (r = 1..Rounds).
	// When the workload spreads each round of its file over several syncs
	// (WithRoundInterval), each holds its part of the round's events.
	Rounds [][]UserRound
	// Expect[r][u] is user u's list at sync r (r = 0..Rounds).
	Expect [][]Expect
}

// modelEntry is one bookmark of the script's model of a list.
type modelEntry struct {
	id string
	// epoch is the sync before which the post was last bookmarked (0: before
	// the first sync). At sync r, a post with epoch < r was bookmarked before
	// sync r-1 started.
	epoch int
}

// UserID is the X user id of the u-th user of a workload.
func UserID(u int) string { return strconv.Itoa(1_000_001 + u) }

// NewScript draws the script of a workload. Post ids come from a private
// simulator (never started) seeded in the same order as the benchmark's
// simulators, so the initial ids match theirs; ids of new posts continue its
// counter and cannot collide with them.
func NewScript(w *Workload, habits Habits) (*Script, error) {
	if _, err := ParseHabits(string(habits)); err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(w.Seed, w.Seed^0x636f737462656e63)) // "costbenc"
	ids := xsim.New(xsim.Options{Clock: clock.NewVirtual(time.Unix(0, 0))})
	s := &Script{Workload: w, Habits: habits}
	lists := make([][]modelEntry, w.Users) // oldest first, like the simulator

	// Initial lists: a bucket by share per user, a size uniform in it.
	for u := range w.Users {
		s.UserIDs = append(s.UserIDs, UserID(u))
		b := pick(rng, w.InitialBookmarks)
		s.InitialBucket = append(s.InitialBucket, b)
		n := uniform(rng, w.InitialBookmarks[b].Min, w.InitialBookmarks[b].Max)
		seeded := ids.SeedBookmarks(UserID(u), n)
		s.Initial = append(s.Initial, seeded)
		l := make([]modelEntry, n)
		for i, id := range seeded {
			l[n-1-i] = modelEntry{id: id}
		}
		lists[u] = l
	}
	habit := make([]int, w.Users)
	if habits == PerUser {
		for u := range habit {
			habit[u] = pick(rng, w.NewBookmarksPerRound)
		}
	}
	s.Expect = append(s.Expect, expectAll(lists, 0))
	removed := make([][]removal, w.Users)
	ev := w.PerRoundEvents
	d := &drawer{rng: rng, ids: ids, ev: ev, order: eventOrders[w.EventOrder]}
	// Each round of the file is drawn whole, then spread over its syncs in
	// order: the events do not depend on how often the lists are synced.
	k := w.SyncsPerRound()
	for r := 1; r <= w.Rounds/k; r++ {
		first := (r-1)*k + 1 // the round's first sync; posts bookmarked before it are held
		parts := make([][]UserRound, k)
		expect := make([][]Expect, k)
		for i := range k {
			parts[i], expect[i] = make([]UserRound, w.Users), make([]Expect, w.Users)
		}
		for u := range w.Users {
			bucket := habit[u]
			if habits == PerRound {
				bucket = pick(rng, w.NewBookmarksPerRound)
			}
			b := w.NewBookmarksPerRound[bucket]
			var kinds []EventKind
			for range uniform(rng, b.Min, b.Max) {
				kinds = append(kinds, NewBookmark)
			}
			if rng.Float64() < ev.UnbookmarkProbability {
				for range uniform(rng, ev.UnbookmarkCount.Min, ev.UnbookmarkCount.Max) {
					kinds = append(kinds, Unbookmark)
				}
			}
			if rng.Float64() < ev.RebookmarkHeldProbability {
				kinds = append(kinds, Rebookmark)
			}
			if b := ev.RebookmarkBurst; b != nil && rng.Float64() < b.Probability {
				kinds = append(kinds, burst)
			}
			rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })

			l := lists[u]
			for i := range k {
				ur := &parts[i][u]
				ur.Bucket = bucket
				sync := first + i
				l = d.draw(ur, l, kinds[i*len(kinds)/k:(i+1)*len(kinds)/k], &removed[u], moment{round: r, firstSync: first, sync: sync})
				expect[i][u] = expectOne(l, sync)
			}
			lists[u] = l
		}
		s.Rounds = append(s.Rounds, parts...)
		s.Expect = append(s.Expect, expect...)
	}
	return s, nil
}

// drawer makes the events of a script happen to its model of the lists.
type drawer struct {
	rng   *rand.Rand
	ids   *xsim.Server // gives new post ids
	ev    Events
	order eventOrder
}

// moment is when events happen: in which round of the file, before which
// sync, and the round's first sync (posts bookmarked before it are held).
type moment struct{ round, firstSync, sync int }

// draw makes the events of kinds happen, in order, to a user's list l
// (oldest first) at m, records them in ur and returns the list after them.
// removed is the user's removals, for posts saved again.
func (d *drawer) draw(ur *UserRound, l []modelEntry, kinds []EventKind, removed *[]removal, m moment) []modelEntry {
	rng, ev := d.rng, d.ev
	for _, k := range kinds {
		switch k {
		case NewBookmark:
			if ev.ResaveRemovedShareOfNew > 0 && rng.Float64() < ev.ResaveRemovedShareOfNew {
				if id, ok := resaveRemoved(rng, removed, m.round); ok {
					l = append(l, modelEntry{id: id, epoch: m.sync})
					ur.Events = append(ur.Events, Event{ResaveRemoved, id})
					ur.ResavedRemoved++
					continue
				}
			}
			id := d.ids.NewPostID()
			l = append(l, modelEntry{id: id, epoch: m.sync})
			ur.Events = append(ur.Events, Event{NewBookmark, id})
			ur.New++
		case Unbookmark:
			i := len(l) - 1 // the newest
			if len(l) > 0 && rng.Float64() < ev.UnbookmarkNewestShare {
				ur.NewestRemoved++
			} else if d.order.removeHeldOnly {
				i = nthHeld(l, m.firstSync, rng)
			} else if len(l) > 0 {
				i = rng.IntN(len(l))
			}
			if i < 0 {
				ur.Skipped++
				continue
			}
			ur.Events = append(ur.Events, Event{Unbookmark, l[i].id})
			*removed = append(*removed, removal{id: l[i].id, round: m.round})
			l = slices.Delete(l, i, i+1)
			ur.Unbookmarked++
		case Rebookmark:
			i := nthHeld(l, m.firstSync, rng)
			if i < 0 {
				ur.Skipped++
				continue
			}
			l = rebookmark(l, i, m.sync)
			ur.Events = append(ur.Events, Event{Rebookmark, l[len(l)-1].id})
			ur.Rebookmarked++
		case burst:
			// Distinct held posts, chosen uniformly, re-saved one
			// after the other in a random order.
			var held []string
			for _, e := range l {
				if e.epoch < m.firstSync {
					held = append(held, e.id)
				}
			}
			n := min(uniform(rng, ev.RebookmarkBurst.Min, ev.RebookmarkBurst.Max), len(held))
			if n == 0 {
				ur.Skipped++
				continue
			}
			rng.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
			for _, id := range held[:n] {
				l = rebookmark(l, slices.IndexFunc(l, func(e modelEntry) bool { return e.id == id }), m.sync)
				ur.Events = append(ur.Events, Event{Rebookmark, id})
				ur.Rebookmarked++
			}
			ur.Bursts++
		}
	}
	return l
}

// removal is a post a user removed, and the round it was removed in.
type removal struct {
	id    string
	round int
}

// resaveRemoved picks, uniformly, a post removed before round r and not
// saved again since, and takes it out of the pool.
func resaveRemoved(rng *rand.Rand, pool *[]removal, r int) (string, bool) {
	n := 0
	for _, x := range *pool {
		if x.round < r {
			n++
		}
	}
	if n == 0 {
		return "", false
	}
	nth := rng.IntN(n)
	for i, x := range *pool {
		if x.round < r {
			if nth == 0 {
				*pool = slices.Delete(*pool, i, i+1)
				return x.id, true
			}
			nth--
		}
	}
	panic("unreachable")
}

// nthHeld picks, uniformly, a post of l (oldest first) bookmarked before
// sync r; -1 if there is none.
func nthHeld(l []modelEntry, r int, rng *rand.Rand) int {
	held := 0
	for _, e := range l {
		if e.epoch < r {
			held++
		}
	}
	if held == 0 {
		return -1
	}
	nth := rng.IntN(held)
	for i, e := range l {
		if e.epoch < r {
			if nth == 0 {
				return i
			}
			nth--
		}
	}
	return -1
}

// rebookmark moves l[i] to the top, bookmarked before sync r.
func rebookmark(l []modelEntry, i, r int) []modelEntry {
	e := l[i]
	return append(slices.Delete(l, i, i+1), modelEntry{id: e.id, epoch: r})
}

// expectAll gives the model's list length and bound of every user at sync r.
func expectAll(lists [][]modelEntry, r int) []Expect {
	out := make([]Expect, len(lists))
	for u, l := range lists {
		out[u] = expectOne(l, r)
	}
	return out
}

// expectOne gives the length and bound of list l (oldest first) at sync r.
func expectOne(l []modelEntry, r int) Expect {
	e := Expect{Len: len(l), Bound: len(l)}
	if r == 0 {
		return e
	}
	for i := len(l) - 1; i >= 0; i-- {
		if l[i].epoch < r {
			e.Bound = len(l) - i
			break
		}
	}
	return e
}

// pick draws a bucket index by share.
func pick(rng *rand.Rand, buckets []Bucket) int {
	x := rng.Float64()
	for i, b := range buckets {
		if x < b.Share {
			return i
		}
		x -= b.Share
	}
	// Rounding left x just above the last share.
	for i := len(buckets) - 1; i >= 0; i-- {
		if buckets[i].Share > 0 {
			return i
		}
	}
	return len(buckets) - 1
}

// uniform draws an integer in [lo, hi].
func uniform(rng *rand.Rand, lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + rng.IntN(hi-lo+1)
}

// LowerBound is the fewest posts any client must be billed for in one sync
// of a list (newest first) to have every post in it: for a first sync the
// list length; afterwards, the 0-based position of the first post whose
// current bookmark time is at or before prevStart (the start of the previous
// sync: the post was bookmarked then and still is — a re-bookmarked post has a
// new time, so it counts as above), plus one; the list length if there is no
// such post.
func LowerBound(list []string, bookmarkedAt func(id string) (time.Time, bool), prevStart time.Time, first bool) (int, error) {
	if first {
		return len(list), nil
	}
	for i, id := range list {
		t, ok := bookmarkedAt(id)
		if !ok {
			return 0, fmt.Errorf("post %s is in the list but has no bookmark time", id)
		}
		if !t.After(prevStart) {
			return i + 1, nil
		}
	}
	return len(list), nil
}

// ConfirmingBound is the bound of a client that must confirm the list's
// order to be safe against re-bookmarks: one post more than LowerBound,
// capped at the list length.
func ConfirmingBound(bound, listLen int) int { return min(bound+1, listLen) }
