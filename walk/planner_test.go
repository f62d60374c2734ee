package walk

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// scenario replays daily syncs of one account whose habit is fixed: each day
// it bookmarks between lo and hi new posts, sometimes removes or
// re-bookmarks one. It returns the posts billed by incremental syncs, their
// lower bound (k+1 for k posts bookmarked since the previous sync above the
// first untouched one, capped at the list length) and the order-confirming
// bound (k+2, capped).
func scenario(t *testing.T, seed uint64, initial, lo, hi, days int, s Settings) (billed, bound, confirmBound, requests int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 7))
	l := newList(initial)
	a := newArchive()
	if res := a.sync(t, l, s); !res.Outcome.Clean() {
		t.Fatalf("first sync: %s", res.Outcome)
	}
	next := 50_000_000
	for day := range days {
		touched := map[string]bool{}
		for range lo + rng.IntN(hi-lo+1) {
			next++
			id := strconv.Itoa(next)
			l.bookmark(id)
			touched[id] = true
		}
		if len(l.ids) > 10 && rng.IntN(20) == 0 {
			l.unbookmark(l.ids[rng.IntN(10)])
		}
		if len(l.ids) > 10 && rng.IntN(30) == 0 {
			id := l.ids[5+rng.IntN(len(l.ids)-5)]
			l.bookmark(id)
			touched[id] = true
		}
		k := slices.IndexFunc(l.ids, func(id string) bool { return !touched[id] })
		if k < 0 {
			k = len(l.ids)
		}
		bound += min(k+1, len(l.ids))
		confirmBound += min(k+2, len(l.ids))
		res := a.sync(t, l, s)
		if !res.Outcome.Clean() {
			t.Fatalf("day %d: %s", day, res.Outcome)
		}
		if m := a.missing(l); len(m) > 0 {
			t.Fatalf("day %d: lost %d posts", day, len(m))
		}
		billed += res.Billed
		requests += res.Requests
	}
	return billed, bound, confirmBound, requests
}

// The planner's bound, as a ratio on fixed scenarios: incremental syncs bill
// at most a few percent over the order-confirming bound (k+2), and never
// spend more requests than the budget.
func TestPlannerBillsCloseToTheOrderConfirmingBound(t *testing.T) {
	for _, sc := range []struct {
		name            string
		initial, lo, hi int
		maxRatio        float64
	}{
		{"quiet", 500, 0, 0, 1.00},
		{"light", 300, 1, 3, 1.00},
		{"steady", 800, 4, 20, 1.02},
		{"busy", 2000, 21, 150, 1.04},
		{"heavy", 2000, 151, 1000, 1.04},
	} {
		t.Run(sc.name, func(t *testing.T) {
			s := Settings{}
			billed, bound, confirm, requests := scenario(t, 1, sc.initial, sc.lo, sc.hi, 30, s)
			ratio := float64(billed) / float64(confirm)
			t.Logf("billed %d, bound %d (ratio %.3f), confirming bound %d (ratio %.3f), requests %d", billed, bound, float64(billed)/float64(bound), confirm, ratio, requests)
			if ratio > sc.maxRatio {
				t.Errorf("billed/confirming bound = %.3f, want ≤ %.2f", ratio, sc.maxRatio)
			}
			if requests > 30*DefaultRequestBudget {
				t.Errorf("%d requests over 30 syncs exceeds the budget", requests)
			}
		})
	}
}
