// Package idset is a set of X ids that holds millions in about 8 bytes
// each, where a map of strings takes 40 or more: a first sync reads every
// post of a list, and a walk and a day's billing ledger remember each.
package idset

import (
	"maps"
	"slices"
	"strconv"
)

// Set is a set of ids. Ids that are decimal numbers (as X's are) are kept
// as numbers: a sorted slice, and the latest additions in a map merged
// into it whenever it holds an eighth as many (and at least minMerge). Any
// other id a server sent is kept as it came. The zero Set is empty and
// ready.
type Set struct {
	sorted []uint64
	latest map[uint64]struct{}
	other  map[string]struct{}
}

// Add adds id and reports whether it was not in the set.
func (s *Set) Add(id string) bool {
	n, ok := Number(id)
	if !ok {
		if _, had := s.other[id]; had {
			return false
		}
		if s.other == nil {
			s.other = map[string]struct{}{}
		}
		s.other[id] = struct{}{}
		return true
	}
	if _, had := s.latest[n]; had {
		return false
	}
	if _, had := slices.BinarySearch(s.sorted, n); had {
		return false
	}
	if s.latest == nil {
		s.latest = map[uint64]struct{}{}
	}
	s.latest[n] = struct{}{}
	if len(s.latest) >= max(minMerge, len(s.sorted)/8) {
		s.merge()
	}
	return true
}

// Has reports whether id is in the set.
func (s *Set) Has(id string) bool {
	n, ok := Number(id)
	if !ok {
		_, had := s.other[id]
		return had
	}
	if _, had := s.latest[n]; had {
		return true
	}
	_, had := slices.BinarySearch(s.sorted, n)
	return had
}

// Clone returns a copy of the set.
func (s *Set) Clone() *Set {
	return &Set{sorted: slices.Clone(s.sorted), latest: maps.Clone(s.latest), other: maps.Clone(s.other)}
}

// Len is the number of ids in the set.
func (s *Set) Len() int { return len(s.sorted) + len(s.latest) + len(s.other) }

// Sorted returns the ids in string order.
func (s *Set) Sorted() []string {
	out := make([]string, 0, s.Len())
	for _, n := range s.sorted {
		out = append(out, strconv.FormatUint(n, 10))
	}
	for n := range s.latest {
		out = append(out, strconv.FormatUint(n, 10))
	}
	for id := range s.other {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// minMerge is the fewest latest additions a set merges: a map takes two or
// three times the bytes of the slice an id, and most sets hold a few
// hundred ids (an account's posts read and billed).
const minMerge = 64

// merge moves the latest additions into the sorted slice, merging from its
// end so that the slice needs no second copy. The map goes with them: a set
// that grows no more (a walk's posts, a day's ledger, kept until the sync
// ends) keeps its ids in 8 bytes each, not in a map sized for the last
// additions.
func (s *Set) merge() {
	add := slices.Sorted(maps.Keys(s.latest))
	s.latest = nil
	n := len(s.sorted)
	s.sorted = slices.Grow(s.sorted, len(add))[:n+len(add)]
	i, j := n-1, len(add)-1
	for k := len(s.sorted) - 1; j >= 0; k-- {
		if i >= 0 && s.sorted[i] > add[j] {
			s.sorted[k] = s.sorted[i]
			i--
		} else {
			s.sorted[k] = add[j]
			j--
		}
	}
}

// Number parses a decimal id without sign or leading zeros, so that
// formatting the number gives back exactly the same string.
func Number(id string) (uint64, bool) {
	if id == "" || len(id) > 20 || (id[0] == '0' && len(id) > 1) {
		return 0, false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < '0' || id[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseUint(id, 10, 64)
	return n, err == nil
}
