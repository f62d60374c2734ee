package walktest

import (
	"context"
	"math/rand/v2"
	"slices"
	"strconv"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/walk"
)

// Kind is a way users change their lists between two syncs (and during
// one): each field is how often a round does one kind of change. New posts
// are saved every round, in counts drawn from newCounts.
type Kind struct {
	Name, About string
	// Remove: chance that a round removes 1-4 posts, each the newest with
	// RemoveNewest, else one anywhere (mostly deep, where no walk goes).
	Remove, RemoveNewest float64
	// RemoveBlock: chance that a round removes 2-4 adjacent posts anywhere.
	RemoveBlock float64
	// SaveRemoved: share of the new saves that save again 1-3 posts removed
	// in earlier rounds, one after the other.
	SaveRemoved float64
	// SaveHeld: chance that a round saves one held post again.
	SaveHeld float64
	// Burst: chance that a round saves again 2-4 held posts chosen anywhere,
	// one after the other, in a random order.
	Burst float64
	// BurstAdjacent: the same with 2-4 held posts that are adjacent in the
	// list (a thread), in a random order.
	BurstAdjacent float64
	// SaveNewestAgain: chance that a round saves again the 2-3 newest held
	// posts, in a random order.
	SaveNewestAgain float64
	// MidWalk: chance, at each page boundary of a walk, that the user saves,
	// removes or saves again a post before the next page is requested.
	MidWalk float64
}

// Kinds are the scenarios of the property test and the sweep, each one way
// of changing a list, and the last all of them together.
var Kinds = []Kind{
	{Name: "new", About: "new saves only"},
	{Name: "removals", About: "new saves; removals of the newest post, anywhere, and of blocks", Remove: 0.5, RemoveNewest: 0.3, RemoveBlock: 0.2},
	{Name: "removed-saved-again", About: "new saves; removals anywhere; removed posts saved again, singly or in runs of 2-3",
		Remove: 0.6, RemoveNewest: 0.1, RemoveBlock: 0.3, SaveRemoved: 0.25},
	{Name: "held-bursts", About: "new saves; held posts saved again, singly and in bursts of 2-4 in random order", SaveHeld: 0.3, Burst: 0.4},
	{Name: "adjacent-bursts", About: "new saves; 2-4 adjacent held posts saved again in random order", BurstAdjacent: 0.5},
	{Name: "newest-saved-again", About: "new saves; the 2-3 newest held posts saved again in random order", SaveNewestAgain: 0.5},
	{Name: "mid-walk", About: "new saves, removals, saves again; and the list moves between pages", Remove: 0.3, RemoveNewest: 0.3, SaveRemoved: 0.1, SaveHeld: 0.2, MidWalk: 0.3},
	{Name: "everything", About: "all of the above together",
		Remove: 0.3, RemoveNewest: 0.2, RemoveBlock: 0.1, SaveRemoved: 0.1, SaveHeld: 0.15, Burst: 0.1, BurstAdjacent: 0.1, SaveNewestAgain: 0.05, MidWalk: 0.05},
}

// KindNamed returns the kind of that name.
func KindNamed(name string) (Kind, bool) {
	i := slices.IndexFunc(Kinds, func(k Kind) bool { return k.Name == name })
	if i < 0 {
		return Kind{}, false
	}
	return Kinds[i], true
}

// newCounts are the new saves of a round: a share of rounds and a range.
var newCounts = []struct {
	share    float64
	min, max int
}{{0.35, 0, 0}, {0.30, 1, 3}, {0.20, 4, 20}, {0.12, 21, 120}, {0.03, 121, 400}}

// initialSizes are the lists' lengths before the first sync.
var initialSizes = []struct {
	share    float64
	min, max int
}{{0.10, 0, 5}, {0.40, 5, 100}, {0.40, 100, 600}, {0.10, 600, 2000}}

// Sync walks l once from prev (nil: a first sync), passing new posts to emit.
type Sync func(ctx context.Context, l *List, prev *walk.Memory, emit func([]string)) (*walk.Result, error)

// Walker is the Sync of walk.Walker with the given confirmations, on a
// virtual clock that moves a day before each sync (so that the planner's
// page sizes do not depend on the machine).
func Walker(confirmations int) Sync {
	clk := clock.NewVirtual(Start)
	return func(ctx context.Context, l *List, prev *walk.Memory, emit func([]string)) (*walk.Result, error) {
		clk.Advance(24 * time.Hour)
		w := &walk.Walker[string]{
			Fetch:    l.Fetch,
			ID:       func(s string) string { return s },
			Clock:    clk,
			Settings: walk.Settings{Confirmations: confirmations},
			Emit: func(_ context.Context, items []string) error {
				emit(items)
				return nil
			},
		}
		return w.Run(ctx, prev)
	}
}

// Start is the virtual time before a scenario's first sync.
var Start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Scenario is one seeded run of a kind: a first sync, then Rounds rounds of
// changes, each followed by a sync.
type Scenario struct {
	Kind          Kind
	Seed          uint64
	Rounds        int
	Confirmations int
	// CheckMemory checks the memory invariants after every sync (for
	// walk.Walker; a model of another rule may remember differently).
	CheckMemory bool
}

// user changes one list as a scenario's kind says, and logs what it did.
type user struct {
	rng  *rand.Rand
	kind Kind
	l    *List
	next int // the next new post id
	// removed are the posts removed and not saved again since, with the
	// round they were removed in.
	removed []removal
	round   int
	ops     []op
}

type removal struct {
	id    string
	round int
}

// opKind is what one change did.
type opKind int

const (
	saveNew opKind = iota
	saveRemovedAgain
	saveHeldAgain
	remove
)

type op struct {
	kind opKind
	id   string
}

func (u *user) saveNew() {
	u.next++
	id := strconv.Itoa(u.next)
	u.l.Save(id)
	u.ops = append(u.ops, op{saveNew, id})
}

func (u *user) saveAgain(id string) {
	kind := saveHeldAgain
	if i := slices.IndexFunc(u.removed, func(r removal) bool { return r.id == id }); i >= 0 {
		kind = saveRemovedAgain
		u.removed = slices.Delete(u.removed, i, i+1)
	}
	u.l.Save(id)
	u.ops = append(u.ops, op{kind, id})
}

func (u *user) remove(id string) {
	if u.l.Remove(id) {
		u.removed = append(u.removed, removal{id, u.round})
		u.ops = append(u.ops, op{remove, id})
	}
}

// held returns the posts of the list that this round has not touched, in
// list order: the posts the last sync saw (or was saving while it ran).
func (u *user) held(touched map[string]bool) []int {
	var out []int
	for i := range u.l.Len() {
		if !touched[u.l.At(i)] {
			out = append(out, i)
		}
	}
	return out
}

// change makes one round of changes: every change is a step, and the steps
// are shuffled together; a run of saves (a burst) is one step.
func (u *user) change() {
	u.round++
	rng, k := u.rng, u.kind
	touched := map[string]bool{}
	var steps []func()
	track := func(ids ...string) {
		for _, id := range ids {
			touched[id] = true
		}
	}
	for range draw(rng, newCounts) {
		if k.SaveRemoved > 0 && rng.Float64() < k.SaveRemoved {
			n := 1 + rng.IntN(3)
			steps = append(steps, func() {
				for range n {
					var ok []string
					for _, r := range u.removed {
						if r.round < u.round {
							ok = append(ok, r.id)
						}
					}
					if len(ok) == 0 {
						u.saveNew()
						continue
					}
					id := ok[rng.IntN(len(ok))]
					u.saveAgain(id)
					track(id)
				}
			})
			continue
		}
		steps = append(steps, func() { u.saveNew(); track(u.l.At(0)) })
	}
	if rng.Float64() < k.Remove {
		for range 1 + rng.IntN(4) {
			steps = append(steps, func() {
				if u.l.Len() == 0 {
					return
				}
				i := 0
				if rng.Float64() >= k.RemoveNewest {
					i = rng.IntN(u.l.Len())
				}
				u.remove(u.l.At(i))
			})
		}
	}
	if rng.Float64() < k.RemoveBlock {
		steps = append(steps, func() {
			n := 2 + rng.IntN(3)
			if u.l.Len() < n {
				return
			}
			i := rng.IntN(u.l.Len() - n + 1)
			for _, id := range u.l.IDs()[i : i+n] {
				u.remove(id)
			}
		})
	}
	saveAgain := func(idx []int) {
		ids := make([]string, len(idx))
		for j, i := range idx {
			ids[j] = u.l.At(i)
		}
		rng.Shuffle(len(ids), func(a, b int) { ids[a], ids[b] = ids[b], ids[a] })
		for _, id := range ids {
			u.saveAgain(id)
			track(id)
		}
	}
	if rng.Float64() < k.SaveHeld {
		steps = append(steps, func() {
			if h := u.held(touched); len(h) > 0 {
				saveAgain([]int{h[rng.IntN(len(h))]})
			}
		})
	}
	if rng.Float64() < k.Burst {
		steps = append(steps, func() {
			h := u.held(touched)
			rng.Shuffle(len(h), func(a, b int) { h[a], h[b] = h[b], h[a] })
			saveAgain(h[:min(len(h), 2+rng.IntN(3))])
		})
	}
	if rng.Float64() < k.BurstAdjacent {
		steps = append(steps, func() {
			n := 2 + rng.IntN(3)
			h := u.held(touched)
			if len(h) < n {
				return
			}
			// n held posts in a row of the list, none touched this round.
			for try := 0; try < 10; try++ {
				j := rng.IntN(len(h) - n + 1)
				if h[j+n-1]-h[j] == n-1 {
					saveAgain(h[j : j+n])
					return
				}
			}
		})
	}
	if rng.Float64() < k.SaveNewestAgain {
		steps = append(steps, func() {
			h := u.held(touched)
			saveAgain(h[:min(len(h), 2+rng.IntN(2))])
		})
	}
	rng.Shuffle(len(steps), func(i, j int) { steps[i], steps[j] = steps[j], steps[i] })
	for _, step := range steps {
		step()
	}
}

// moveMidWalk is the list moving between two pages of a walk.
func (u *user) moveMidWalk() {
	if u.rng.Float64() >= u.kind.MidWalk {
		return
	}
	switch x := u.rng.Float64(); {
	case x < 0.4 || u.l.Len() == 0:
		u.saveNew()
	case x < 0.8:
		u.remove(u.l.At(u.rng.IntN(u.l.Len())))
	default:
		u.saveAgain(u.l.At(u.rng.IntN(u.l.Len())))
	}
}

// draw picks a bucket by share, then a count in it.
func draw(rng *rand.Rand, buckets []struct {
	share    float64
	min, max int
}) int {
	x := rng.Float64()
	for _, b := range buckets {
		if x < b.share {
			return b.min + rng.IntN(b.max-b.min+1)
		}
		x -= b.share
	}
	b := buckets[len(buckets)-1]
	return b.min + rng.IntN(b.max-b.min+1)
}
