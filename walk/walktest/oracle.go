package walktest

import (
	"context"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"

	"github.com/cq-source-x/cq-source-x/walk"
)

// Tally is what scenarios came to. Posts the archive lacks after a sync are
// counted once, in the sync that first lacks them, by cause.
type Tally struct {
	Scenarios, Syncs int
	// Billed and Bound are the posts incremental syncs were billed for, and
	// the fewest any client could have been: for each, 1 + the position of
	// the first post not saved since the previous sync started (the list's
	// length if there is none).
	Billed, Bound int
	// HiddenByResaves: posts below a run of posts saved again, oldest first,
	// that the stop rule took for the tail (the documented exception);
	// FooledSyncs the syncs that stopped on such a run and hid a post, and
	// StoppedOnResaves all syncs that stopped on such a run, whether or not
	// anything new was below it.
	HiddenByResaves, FooledSyncs, StoppedOnResaves int
	// Skipped: posts a page boundary passed over because a post above the
	// walk's position was removed between two requests (and that were new:
	// a held post passed over is not lost); RemovedAbove counts those
	// removals.
	Skipped, RemovedAbove int
	// SavedDuring: posts saved while a walk ran, above its position, which
	// that walk could not see (the next sync must find them: they are not
	// lost).
	SavedDuring int
	// Unexplained: posts lacking for no documented reason. Any is a bug.
	Unexplained int
	// LossSyncs counts the syncs after which some post was newly lost;
	// LostAtEnd the posts the archive still lacks after a scenario's last
	// sync (but those saved during it).
	LossSyncs, LostAtEnd int
	// MemoryChecked counts the syncs whose memory was checked against the
	// list in full (while it must be exact; see checkMemory).
	MemoryChecked int
	// Violations describe the first unexplained losses and broken
	// invariants.
	Violations []string
}

// Lost is the number of posts lost (for a sync or more): all but those
// saved during a walk.
func (t *Tally) Lost() int { return t.HiddenByResaves + t.Skipped + t.Unexplained }

// Add adds o to t.
func (t *Tally) Add(o *Tally) {
	t.Scenarios += o.Scenarios
	t.Syncs += o.Syncs
	t.Billed += o.Billed
	t.Bound += o.Bound
	t.HiddenByResaves += o.HiddenByResaves
	t.FooledSyncs += o.FooledSyncs
	t.StoppedOnResaves += o.StoppedOnResaves
	t.Skipped += o.Skipped
	t.RemovedAbove += o.RemovedAbove
	t.SavedDuring += o.SavedDuring
	t.Unexplained += o.Unexplained
	t.LossSyncs += o.LossSyncs
	t.LostAtEnd += o.LostAtEnd
	t.MemoryChecked += o.MemoryChecked
	t.Violations = append(t.Violations, o.Violations[:min(len(o.Violations), max(0, 10-len(t.Violations)))]...)
}

func (t *Tally) violate(format string, args ...any) {
	if len(t.Violations) < 10 {
		t.Violations = append(t.Violations, fmt.Sprintf(format, args...))
	}
}

// Run plays the scenario with sync, checking every sync against the
// oracle, and returns its tally.
func (sc Scenario) Run(ctx context.Context, sync Sync) *Tally {
	h := fnv.New64a()
	h.Write([]byte(sc.Kind.Name))
	rng := rand.New(rand.NewPCG(sc.Seed, h.Sum64()))
	n := draw(rng, initialSizes)
	u := &user{rng: rng, kind: sc.Kind, l: NewList(n, 1_000_000), next: 1_000_000 + n}
	o := &oracle{sc: sc, u: u, archive: map[string]bool{}, hidden: map[string]bool{}, exact: true}
	t := &Tally{Scenarios: 1}
	var mem *walk.Memory
	prevStart := 0 // u.ops at the previous walk's start
	for round := 0; round <= sc.Rounds; round++ {
		if round > 0 {
			u.change()
		}
		start := len(u.ops)
		before := u.l.IDs()
		u.l.BeginWalk()
		if sc.Kind.MidWalk > 0 {
			u.l.Between = u.moveMidWalk
		}
		res, err := sync(ctx, u.l, mem, func(ids []string) {
			for _, id := range ids {
				o.archive[id] = true
			}
		})
		u.l.EndWalk()
		u.l.Between = nil
		where := fmt.Sprintf("%s seed %d round %d", sc.Kind.Name, sc.Seed, round)
		if err != nil || !res.Outcome.Clean() {
			t.violate("%s: the walk did not end cleanly: %v", where, err)
			return t
		}
		t.Syncs++
		if round > 0 {
			t.Billed += res.Billed
			t.Bound += bound(before, u.ops[prevStart:start])
		}
		o.check(t, where, mem, res, u.ops[prevStart:start], u.ops[start:])
		mem = res.Memory
		prevStart = start
	}
	t.LostAtEnd = len(o.hidden)
	return t
}

// bound is the fewest posts any client must read of list to have every
// post: 1 + the position of the first post the changes since the previous
// walk did not save, or the whole list.
func bound(list []string, changes []op) int {
	saved := map[string]bool{}
	for _, c := range changes {
		if c.kind != remove {
			saved[c.id] = true
		}
	}
	for i, id := range list {
		if !saved[id] {
			return i + 1
		}
	}
	return len(list)
}

// oracle follows one scenario's archive.
type oracle struct {
	sc      Scenario
	u       *user
	archive map[string]bool
	// hidden are posts lacking for a documented reason, which later syncs
	// may go on lacking (until they are saved again).
	hidden map[string]bool
	// exact is set while the memory must be the list as it is: no walk has
	// been fooled and the list never moved during one.
	exact bool
}

// check compares the archive with the list after a walk. before are the
// changes since the previous walk started and before this one; during the
// changes made while it ran.
func (o *oracle) check(t *Tally, where string, prev *walk.Memory, res *walk.Result, before, during []op) {
	l := o.u.l
	list := l.IDs()
	// A hidden post saved again is at the top: it is no longer hidden.
	for _, c := range slices.Concat(before, during) {
		if c.kind != remove {
			delete(o.hidden, c.id)
		}
	}
	fooledAt := -1 // the list position of the last post of the run that fooled the walk
	if run := o.fooledBy(prev, res, before); run != nil {
		fooledAt = l.Index(run[len(run)-1])
		t.StoppedOnResaves++
		// The walk forgets the remembered posts above the run that it did
		// not read: if the run was saved again above posts left alone,
		// those are still in the list.
		o.exact = false
	}
	skipped, savedDuring := set(l.Skipped()), set(l.SavedDuring())
	t.RemovedAbove += l.RemovedAbove()
	fooled, lost := false, t.Lost()
	for i, id := range list {
		switch {
		case o.archive[id] || o.hidden[id]:
		case savedDuring[id]:
			t.SavedDuring++
		case skipped[id]:
			o.hidden[id] = true
			t.Skipped++
		case fooledAt >= 0 && i > fooledAt:
			o.hidden[id] = true
			t.HiddenByResaves++
			fooled = true
		default:
			o.hidden[id] = true // counted once
			t.Unexplained++
			t.violate("%s: post %s (position %d of %d) is in the list and not archived, for no documented reason (outcome %s, billed %d)",
				where, id, i, len(list), res.Outcome, res.Billed)
		}
	}
	for id := range o.hidden {
		if o.archive[id] || l.Index(id) < 0 {
			delete(o.hidden, id)
		}
	}
	if fooled {
		t.FooledSyncs++
	}
	if t.Lost() > lost {
		t.LossSyncs++
	}
	if len(during) > 0 || len(l.Skipped()) > 0 {
		o.exact = false
	}
	if o.sc.CheckMemory {
		o.checkMemory(t, where, prev, res, list)
	}
}

// fooledBy returns the run of posts the walk stopped on if it is the
// documented exception: held posts in strictly increasing remembered
// position, all saved again since the last walk (by changes), which the stop
// rule accepts (see accepted).
func (o *oracle) fooledBy(prev *walk.Memory, res *walk.Result, changes []op) []string {
	if res.Outcome != walk.MetHeld || prev == nil {
		return nil
	}
	pos := map[string]int{}
	for i, id := range prev.Held.IDs() {
		pos[id] = i
	}
	var read []string // what the walk read, without repeats
	seen := map[string]bool{}
	for _, id := range o.u.l.Served() {
		if !seen[id] {
			seen[id] = true
			read = append(read, id)
		}
	}
	j := len(read)
	for j > 0 {
		p, held := pos[read[j-1]]
		if !held || (j < len(read) && p >= pos[read[j]]) {
			break
		}
		j--
	}
	run := read[j:]
	if len(run) == 0 {
		return nil
	}
	if !o.accepted(run, read, pos) {
		return nil
	}
	savedAgain := map[string]bool{}
	for _, c := range changes {
		if c.kind == saveHeldAgain || c.kind == saveRemovedAgain {
			savedAgain[c.id] = true
		}
	}
	for _, id := range run {
		if !savedAgain[id] {
			return nil
		}
	}
	return run
}

// accepted reports whether the stop rule accepts run, the trailing run of
// read (the posts a walk read): whether, at some post of it, the run up to
// there held confirmations+1 posts at consecutive remembered positions, read
// one after the other, and was at least confirmations+1 longer than the
// remembered posts up to that post that the walk had not read.
func (o *oracle) accepted(run, read []string, pos map[string]int) bool {
	c := o.sc.Confirmations
	block, streak := false, 1
	for i := range run {
		if i > 0 && pos[run[i]] == pos[run[i-1]]+1 {
			streak++
		} else {
			streak = 1
		}
		block = block || streak >= c+1
		last := pos[run[i]]
		notRead := last + 1
		for _, id := range read {
			if p, held := pos[id]; held && p <= last {
				notRead--
			}
		}
		if block && i+1 >= 1+c+notRead {
			return true
		}
	}
	return false
}

// checkMemory checks the invariants the stop rule relies on. Whatever
// happened: the memory holds no post twice, and only archived posts. While
// the list never moved during a walk and no walk was fooled: the list's
// posts are all remembered (but those it lacks), in the list's order; the
// walk remembers what it read exactly as it read it; and it forgets only
// posts that are gone, as many as it says it proved gone.
func (o *oracle) checkMemory(t *Tally, where string, prev *walk.Memory, res *walk.Result, list []string) {
	held := res.Memory.Held.IDs()
	in := set(held)
	if len(in) != len(held) {
		t.violate("%s: the memory holds a post twice", where)
	}
	for _, id := range held {
		if !o.archive[id] {
			t.violate("%s: the memory holds %s, which was never archived", where, id)
			break
		}
	}
	if !o.exact {
		return
	}
	t.MemoryChecked++
	inList := set(list)
	var listOrder, heldOrder []string
	for _, id := range list {
		if in[id] {
			listOrder = append(listOrder, id)
		} else if o.archive[id] {
			t.violate("%s: %s is in the list and archived, but not remembered", where, id)
		}
	}
	for _, id := range held {
		if inList[id] {
			heldOrder = append(heldOrder, id)
		}
	}
	if !slices.Equal(listOrder, heldOrder) {
		t.violate("%s: the memory's order is not the list's", where)
	}
	read := res.Billed - res.Duplicates
	if read > len(held) || !slices.Equal(held[:read], list[:read]) {
		t.violate("%s: the memory does not begin with the %d posts the walk read", where, read)
	}
	if prev == nil {
		return
	}
	forgotten := 0
	for _, id := range prev.Held.IDs() {
		if !in[id] {
			forgotten++
			if inList[id] {
				t.violate("%s: the memory forgot %s, which is still in the list", where, id)
			}
		}
	}
	if forgotten != res.Removed {
		t.violate("%s: the walk says it proved %d posts gone; the memory forgot %d", where, res.Removed, forgotten)
	}
}

func set(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}
