package idset

import (
	"math/rand/v2"
	"runtime"
	"slices"
	"strconv"
	"testing"
)

// The set holds every id added, and only those, across its merges.
func TestASetHoldsEachIDOnce(t *testing.T) {
	var s Set
	want := map[string]bool{}
	rng := rand.New(rand.NewPCG(3, 4))
	for range 50_000 {
		id := strconv.FormatUint(rng.Uint64N(40_000), 10)
		if got := s.Add(id); got == want[id] {
			t.Fatalf("Add(%s) = %v, but it was in the set: %v", id, got, want[id])
		}
		want[id] = true
	}
	if !slices.IsSorted(s.sorted) || s.Len() != len(want) {
		t.Fatalf("%d sorted + %d latest, want %d", len(s.sorted), len(s.latest), len(want))
	}
}

// Only an id whose number prints back as the id is kept as a number: "7",
// "007", "+7", "abc" and a number past uint64 are five ids, each once.
func TestIDsThatAreNotPlainNumbersAreKeptAsTheyCame(t *testing.T) {
	var s Set
	ids := []string{"7", "007", "+7", "abc", "18446744073709551616", "7", "abc", "007"}
	added := 0
	for _, id := range ids {
		if s.Add(id) {
			added++
		}
	}
	want := []string{"+7", "007", "18446744073709551616", "7", "abc"}
	if got := s.Sorted(); added != 5 || !slices.Equal(got, want) {
		t.Errorf("%d added, ids %q; want 5, %q", added, got, want)
	}
}

// A set that has merged its latest additions keeps them in its sorted
// slice alone: no map sized for them stays behind (a day's ledger of every
// account is kept until the sync ends).
func TestAMergedSetKeepsNoMap(t *testing.T) {
	var s Set
	for i := range minMerge {
		s.Add(strconv.Itoa(1_000_000 + i))
	}
	if s.latest != nil || len(s.sorted) != minMerge {
		t.Errorf("after a merge: %d sorted, latest map %v", len(s.sorted), s.latest != nil)
	}
}

// Has tells the ids of the set, merged or not, numbers or not; a clone
// holds the same ids and changes apart from the set.
func TestHasAndClone(t *testing.T) {
	var s Set
	for i := range 3000 {
		s.Add(strconv.Itoa(2 * i))
	}
	s.Add("abc")
	c := s.Clone()
	c.Add("1")
	for _, id := range []string{"0", "5998", "abc"} {
		if !s.Has(id) || !c.Has(id) {
			t.Errorf("%s not held", id)
		}
	}
	for _, id := range []string{"1", "5999", "ab", "007"} {
		if s.Has(id) {
			t.Errorf("%s held", id)
		}
	}
	if !c.Has("1") || c.Len() != s.Len()+1 {
		t.Errorf("clone: has 1 %v, %d ids for %d", c.Has("1"), c.Len(), s.Len())
	}
}

// Sets of a few hundred ids, as most accounts' ledgers of the day are, keep
// them in about 8 bytes each, not in a map.
func TestSmallSetsCostAboutEightBytesAnID(t *testing.T) {
	const sets, perSet = 1000, 300
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	all := make([]Set, sets)
	for i := range all {
		for j := range perSet {
			all[i].Add(strconv.Itoa(1_700_000_000_000_000_000 + i*perSet + j))
		}
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if perID := float64(after.HeapAlloc-before.HeapAlloc) / (sets * perSet); perID > 12 {
		t.Errorf("%.1f bytes an id held", perID)
	}
	runtime.KeepAlive(all)
}
