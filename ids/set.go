package ids

import (
	"bytes"
	"encoding/binary"
	"errors"
	"maps"
	"slices"
	"strings"
)

// Set is a set of ids. Numbers are kept in sorted slices, and the latest
// additions in a map merged into them whenever it holds an eighth as many
// (and at least minMerge); any other id is kept as it came. The zero Set is
// empty and ready. The ids held when it was decoded are kept apart, so that
// it tells them (HasEarlier): the bookmarks an earlier export wrote.
type Set struct {
	held   []uint64 // sorted: the numbers held when decoded
	added  []uint64 // sorted: the numbers added since, merged from latest
	latest map[uint64]struct{}
	strs   []string // sorted: the other ids held when decoded
	more   map[string]struct{}
	// filter holds every number once the set has been asked about many (a
	// first export's): one cache line read for most new ids, where a binary
	// search of a million reads about twenty.
	filter   filter
	inFilter int // numbers the filter was sized for
	asked    int // numbers added before the filter was made
}

// minMerge is the fewest latest additions a set merges: a map takes two or
// three times the bytes of the slice an id, and most sets hold a few
// hundred ids (an account's posts read and billed).
const minMerge = 64

// Add adds id and reports whether it was not in the set.
func (s *Set) Add(id string) bool {
	n, ok := Parse(id)
	if !ok {
		if s.hasString(id) {
			return false
		}
		if s.more == nil {
			s.more = map[string]struct{}{}
		}
		s.more[strings.Clone(id)] = struct{}{} // id may share a record's buffer
		return true
	}
	if s.filter == nil {
		if s.asked++; s.asked >= filterAfter {
			s.buildFilter()
		}
	}
	if (s.filter == nil || s.filter.check(n)) && s.hasNumber(n) {
		return false
	}
	if s.latest == nil {
		// Not sized up front: most sets stay small.
		s.latest = map[uint64]struct{}{}
	}
	s.latest[n] = struct{}{}
	if s.filter != nil {
		if s.numbers() > s.inFilter {
			s.buildFilter() // sized for twice as many
		} else {
			s.filter.insert(n)
		}
	}
	if len(s.latest) >= max(minMerge, len(s.added)/8) {
		s.merge()
	}
	return true
}

// Has reports whether id is in the set (a nil set holds none).
func (s *Set) Has(id string) bool {
	if s == nil {
		return false
	}
	if n, ok := Parse(id); ok {
		return s.hasNumber(n)
	}
	return s.hasString(id)
}

// HasEarlier reports whether id was in the set before the ids added since it
// was decoded.
func (s *Set) HasEarlier(id string) bool {
	if s == nil {
		return false
	}
	if n, ok := Parse(id); ok {
		return has(s.held, n)
	}
	return has(s.strs, id)
}

func (s *Set) hasNumber(n uint64) bool {
	_, latest := s.latest[n]
	return latest || has(s.held, n) || has(s.added, n)
}

func (s *Set) hasString(id string) bool {
	_, more := s.more[id]
	return more || has(s.strs, id)
}

func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return s.numbers() + len(s.strs) + len(s.more)
}

func (s *Set) numbers() int { return len(s.held) + len(s.added) + len(s.latest) }

// Numbers returns the ids that are numbers, sorted.
func (s *Set) Numbers() Sorted {
	if s == nil {
		return nil
	}
	s.merge()
	return Sorted(s.held).Union(s.added)
}

// IDs lists the ids: the numbers in order, then the others in string order.
func (s *Set) IDs() []string {
	if s == nil {
		return nil
	}
	return append(s.Numbers().Strings(), s.others()...)
}

// others are the ids that are not numbers, sorted.
func (s *Set) others() []string {
	out := append(slices.Clone(s.strs), slices.Collect(maps.Keys(s.more))...)
	slices.Sort(out)
	return out
}

// SetOf is a set that held nums (HasEarlier), which it keeps.
func SetOf(nums Sorted) *Set { return &Set{held: nums} }

// Clone returns a copy of the set, which changes apart from it. (The sorted
// slices are shared: no set changes them in place.)
func (s *Set) Clone() *Set {
	return &Set{held: s.held, added: s.added, latest: maps.Clone(s.latest), strs: s.strs, more: maps.Clone(s.more)}
}

// merge moves the latest additions into the sorted added slice and drops
// the map: a set that grows no more keeps its ids in 8 bytes each.
func (s *Set) merge() {
	if len(s.latest) > 0 {
		s.added = Sorted(s.added).Union(slices.Sorted(maps.Keys(s.latest)))
		s.latest = nil
	}
}

// filterAfter is how many numbers a set adds by searching before it makes
// its filter: a set that is asked about a few new ids (an incremental
// export's) would spend more on a filter of every id than it saves.
const filterAfter = 4096

// buildFilter makes the filter, for twice the numbers held.
func (s *Set) buildFilter() {
	s.inFilter = max(2*s.numbers(), 2*filterAfter)
	s.filter = newFilter(s.inFilter)
	for _, list := range [][]uint64{s.held, s.added} {
		for _, n := range list {
			s.filter.insert(n)
		}
	}
	for n := range s.latest {
		s.filter.insert(n)
	}
}

var errDamaged = errors.New("id set: damaged")

// MarshalText encodes the set: its numbers as Sorted encodes them, then the
// count of the other ids and each length-prefixed; packed (Pack).
func (s *Set) MarshalText() ([]byte, error) {
	nums, strs := s.Numbers(), s.others()
	raw := appendSorted(make([]byte, 0, 2+binary.MaxVarintLen64+len(nums)*5), nums)
	raw = binary.AppendUvarint(raw, uint64(len(strs)))
	return Pack(AppendStrings(raw, strs))
}

// UnmarshalText decodes what MarshalText wrote. It refuses ids out of
// order, repeated, or a number kept as a string: a search would miss them,
// and an id written twice would follow.
func (s *Set) UnmarshalText(text []byte) error {
	raw, err := Unpack(text, "id set")
	if err != nil {
		return err
	}
	r := bytes.NewReader(raw)
	nums, err := readSorted(r, len(raw))
	if err != nil {
		return errDamaged
	}
	count, err := binary.ReadUvarint(r)
	if err != nil || count > uint64(len(raw)) {
		return errDamaged
	}
	strs, ok := ReadStrings(r, count)
	if !ok || r.Len() != 0 {
		return errDamaged
	}
	for i, str := range strs {
		if _, isNum := Parse(str); isNum || (i > 0 && strs[i-1] >= str) {
			return errDamaged
		}
	}
	*s = Set{held: nums, strs: strs} // and no filter: made when asked for
	return nil
}
