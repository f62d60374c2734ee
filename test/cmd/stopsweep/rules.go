package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/walk"
	"github.com/cq-source-x/cq-source-x/walk/walktest"
)

// A rule is a stop rule the sweep compares. "new" is walk.Walker itself;
// the others are models: the walk's loop with the same planner and memory,
// and another stop decision (TestTheModelOfTheNewRuleIsTheWalker holds the
// model to the walker).
type rule struct {
	name, about string
	// accepts reports whether the trailing run lets the walk stop.
	accepts func(t *trail, c int) bool
	// minNeeded is the fewest posts the walk can still need while the run
	// has not been accepted.
	minNeeded func(t *trail, c int) int
}

// trail is the trailing run of held posts, as the walk follows it.
type trail struct {
	run     []int // remembered positions, strictly increasing
	streak  int   // the run's last posts at consecutive positions
	block   int   // the longest streak so far
	skipped int   // remembered posts up to the run's last that were not read
}

var rules = []rule{
	{
		name:      "old",
		about:     "the rule before issue 13: 1+c held posts in increasing remembered order",
		accepts:   func(t *trail, c int) bool { return len(t.run) >= 1+c },
		minNeeded: func(t *trail, c int) int { return max(1+c-len(t.run), 1) },
	},
	{
		name:      "consecutive",
		about:     "1+c held posts at consecutive remembered positions",
		accepts:   func(t *trail, c int) bool { return t.block >= 1+c },
		minNeeded: func(t *trail, c int) int { return max(1+c-t.streak, 1) },
	},
	{
		name:  "new",
		about: "walk.Walker: 1+c at consecutive positions, and 1+c longer than the remembered posts it skipped",
		accepts: func(t *trail, c int) bool {
			return t.block >= 1+c && len(t.run) >= 1+c+t.skipped
		},
		minNeeded: func(t *trail, c int) int {
			if len(t.run) == 0 {
				return 1 + c
			}
			need := 1 + c + t.skipped - len(t.run)
			if t.block < 1+c {
				need = max(need, 1+c-t.streak)
			}
			return max(min(need, 1+c), 1)
		},
	},
}

func ruleNamed(name string) (rule, error) {
	for _, r := range rules {
		if r.name == name {
			return r, nil
		}
	}
	var names []string
	for _, r := range rules {
		names = append(names, r.name)
	}
	return rule{}, fmt.Errorf("unknown rule %q (known: %s)", name, strings.Join(names, ", "))
}

// sync returns the Sync of the rule at c confirmations: walk.Walker for
// "new" (unless model is set), the model otherwise.
func (r rule) sync(c int, model bool) walktest.Sync {
	if r.name == "new" && !model {
		return walktest.Walker(c)
	}
	clk := clock.NewVirtual(walktest.Start)
	return func(ctx context.Context, l *walktest.List, prev *walk.Memory, emit func([]string)) (*walk.Result, error) {
		clk.Advance(24 * time.Hour)
		return r.walk(ctx, c, clk.Now(), l, prev, emit)
	}
}

// walk is walk.Walker.Run with the rule's stop decision.
func (r rule) walk(ctx context.Context, c int, now time.Time, l *walktest.List, prev *walk.Memory, emit func([]string)) (*walk.Result, error) {
	res := &walk.Result{StartedAt: now}
	planner := walk.NewPlanner(walk.Settings{Confirmations: c}, prev, now)
	pos := map[string]int{}
	var remembered []string
	if prev != nil {
		remembered = prev.Held.IDs()
		for i, id := range remembered {
			if _, dup := pos[id]; !dup {
				pos[id] = i
			}
		}
	}
	var order, fresh []string
	seen := map[string]bool{}
	var t trail
	var above []int
	runStart, accepted := 0, false
	token := ""
	for {
		need := 1
		if len(remembered) > 0 {
			need = r.minNeeded(&t, c)
		}
		size := planner.Next(len(order), res.Requests, res.Billed, need)
		page, err := l.Fetch(ctx, size, token)
		if err != nil {
			res.Outcome = walk.Failed
			return res, err
		}
		res.Requests++
		res.PageSizes = append(res.PageSizes, size)
		res.Billed += len(page.Items)
		fresh = fresh[:0]
		for _, id := range page.Items {
			if seen[id] {
				res.Duplicates++
				continue
			}
			seen[id] = true
			order = append(order, id)
			p, held := pos[id]
			if len(remembered) == 0 || !held {
				fresh = append(fresh, id)
				above, t, accepted = append(above, t.run...), trail{}, false
				continue
			}
			if n := len(t.run); n > 0 && p > t.run[n-1] {
				if p == t.run[n-1]+1 {
					t.streak++
				} else {
					t.streak = 1
				}
				t.run = append(t.run, p)
			} else {
				above, t, accepted = append(above, t.run...), trail{run: []int{p}, streak: 1}, false
				runStart = len(order) - 1
			}
			t.block = max(t.block, t.streak)
			t.skipped = p + 1 - len(t.run)
			for _, a := range above {
				if a <= p {
					t.skipped--
				}
			}
			t.skipped = max(t.skipped, 0)
			if !accepted && r.accepts(&t, c) {
				accepted, res.Needed = true, len(order)
			}
		}
		res.New += len(fresh)
		emit(fresh)
		switch {
		case accepted:
			res.Outcome = walk.MetHeld
		case page.Next == "":
			res.Outcome = walk.ReachedEnd
			res.Needed = len(order)
		default:
			token = page.Next
			continue
		}
		break
	}

	held := walk.NewIDList(order...)
	res.Found, res.Rebookmarked = len(order), len(above)
	if len(t.run) > 0 {
		res.Found = runStart
	}
	if res.Outcome == walk.MetHeld {
		last := t.run[len(t.run)-1]
		res.Removed = t.skipped
		moved := map[int]bool{}
		for _, a := range above {
			moved[a] = true
		}
		for i := last + 1; i < len(remembered); i++ {
			if !moved[i] {
				held.Append(remembered[i])
			}
		}
	} else if prev != nil {
		res.Removed = len(remembered) - len(above) - len(t.run)
	}
	mem := &walk.Memory{Held: held, SyncedAt: now}
	var interval time.Duration
	if prev != nil && !prev.SyncedAt.IsZero() {
		interval = now.Sub(prev.SyncedAt)
		mem.History = append(mem.History, prev.History...)
	}
	mem.History = append(mem.History, walk.SyncRecord{At: now, Interval: interval, Found: res.Found, Billed: res.Billed})
	if len(mem.History) > 16 {
		mem.History = mem.History[len(mem.History)-16:]
	}
	res.Memory = mem
	return res, nil
}
