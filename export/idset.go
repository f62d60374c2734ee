package export

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/cespare/xxhash/v2"

	"github.com/cq-source-x/cq-source-x/internal/textpack"
)

// idSet is a set of post ids: the x_bookmarks rows of one account already
// written. Ids are decimal numbers that fit a uint64 (every X id does), kept
// sorted as 8-byte numbers; an id that is not a canonical decimal number
// goes to a sorted string list instead, so nothing depends on the id format.
// Encoded, the sorted numbers are delta-varints, DEFLATE-compressed and
// base64'd: a few bytes per id.
//
// The ids a run adds are kept apart from those it began with until the set
// is settled (encoded, listed or counted, once the run is over), so that
// the set also tells the bookmarks an earlier run wrote (HasEarlier)
// without a second set of the run's.
type idSet struct {
	nums []uint64 // sorted, unique: the ids the set began with (or was settled with)
	strs []string // sorted, unique; ids that are not canonical decimals
	// added since: sorted and unique, merged from addNums at each compact
	// and into nums when the set is settled
	added []uint64
	// added since the last compact (addStrs until the set is settled)
	addNums map[uint64]struct{}
	addStrs map[string]struct{}
	// filter holds every number in nums, added and addNums once a set has been
	// asked about many new ids (a first export asks about every post): it
	// answers "not held" for almost all of them with one cache line, where
	// a binary search of a million ids reads about ten.
	filter   bloomFilter
	inFilter uint64 // numbers the filter was sized for
	asked    int    // AddNew calls before the filter was made
}

func parseID(id string) (uint64, bool) {
	if len(id) == 0 || (id[0] == '0' && len(id) > 1) {
		return 0, false // not canonical: "007" and "7" must stay different ids
	}
	n, err := strconv.ParseUint(id, 10, 64) // digits only: no sign, no "_"
	if err != nil {
		return 0, false
	}
	return n, true
}

// Has reports whether id is in the set.
func (s *idSet) Has(id string) bool {
	if n, ok := parseID(id); ok {
		return s.hasNum(n)
	}
	if _, found := slices.BinarySearch(s.strs, id); found {
		return true
	}
	_, added := s.addStrs[id]
	return added
}

// has is Has of a set that may be nil (holding nothing).
func (s *idSet) has(id string) bool { return s != nil && s.Has(id) }

// HasEarlier reports whether id was in the set before the ids added since
// it was loaded (or last settled): for the written ids of a run, whether an
// earlier run wrote the bookmark.
func (s *idSet) HasEarlier(id string) bool {
	if n, ok := parseID(id); ok {
		_, found := slices.BinarySearch(s.nums, n)
		return found
	}
	_, found := slices.BinarySearch(s.strs, id)
	return found
}

// compactAt is how many added ids wait in maps before they are merged
// into the sorted lists: a map costs 20 to 40 bytes an id, the list 8. A
// set merges its own at compactAt (a million-post export stays flat), and
// writtenIDs merges every set's when that many wait across all accounts.
const compactAt = 1 << 16

// writtenIDs are the written-id sets of every account during a run. An
// export of many accounts adds a few hundred ids to each set, none of
// which would reach compactAt alone; so that the ids waiting in maps stay
// bounded whatever the number of accounts, every set that has some merges
// them once compactAt wait in all.
type writtenIDs struct {
	byUser  map[string]*idSet
	dirty   []*idSet // sets with ids waiting (a set may appear twice)
	waiting int      // ids added since the last merge
}

func newWrittenIDs(held map[string]*idSet) *writtenIDs {
	w := &writtenIDs{byUser: make(map[string]*idSet, len(held))}
	for uid, set := range held {
		w.byUser[uid] = set
	}
	return w
}

// AddNew adds the post id to the account's set and reports whether it was
// not in it yet.
func (w *writtenIDs) AddNew(uid, id string) bool {
	set := w.byUser[uid]
	if set == nil {
		set = &idSet{}
		w.byUser[uid] = set
	}
	if !set.AddNew(id) {
		return false
	}
	if len(set.addNums) == 1 {
		w.dirty = append(w.dirty, set)
	}
	if w.waiting++; w.waiting >= compactAt {
		for _, s := range w.dirty {
			s.compact()
		}
		clear(w.dirty)
		w.dirty, w.waiting = w.dirty[:0], 0
	}
	return true
}

// AddNew adds id and reports whether it was not in the set yet.
func (s *idSet) AddNew(id string) bool {
	if n, ok := parseID(id); ok {
		if s.filter == nil {
			if s.asked++; s.asked >= filterAfter {
				s.buildFilter()
			}
		}
		if s.filter == nil || s.filter.CheckHash(hashID(n)) {
			if s.hasNum(n) {
				return false
			}
		}
		s.addNum(n)
		return true
	}
	if s.Has(id) {
		return false
	}
	s.Add(id)
	return true
}

func (s *idSet) addNum(n uint64) {
	if s.addNums == nil {
		// Not sized up front: a map sized for compactAt ids takes about
		// 2 MB, and every account of an export has a set.
		s.addNums = map[uint64]struct{}{}
	}
	s.addNums[n] = struct{}{}
	if s.filter != nil {
		if uint64(s.numbers()) > s.inFilter {
			s.buildFilter() // sized for twice as many
		} else {
			s.filter.InsertHash(hashID(n))
		}
	}
	if len(s.addNums) >= compactAt {
		s.compact()
	}
}

// filterAfter is how many AddNew calls a set answers by searching before
// it makes its filter: an incremental export asks about a few new posts,
// for which a filter of every written id would cost more than it saves.
const filterAfter = 4096

// filterFalsePositives is the share of new ids the filter sends on to the
// search (the Parquet split-block filter, 32 bytes a block).
const filterFalsePositives = 0.01

// buildFilter makes the filter for twice the numbers held, holding every
// one of them.
func (s *idSet) buildFilter() {
	size := uint64(max(2*s.numbers(), 2*filterAfter))
	bf := metadata.NewBloomFilterFromNDVAndFPP(uint32(min(size, math.MaxUint32)), filterFalsePositives, 1<<30, memory.DefaultAllocator)
	for _, n := range s.nums {
		bf.InsertHash(hashID(n))
	}
	for _, n := range s.added {
		bf.InsertHash(hashID(n))
	}
	for n := range s.addNums {
		bf.InsertHash(hashID(n))
	}
	s.filter, s.inFilter = bf.(bloomFilter), size
}

// bloomFilter is what arrow-go's split-block filter does, builder and
// reader in one (metadata.NewBloomFilterFromNDVAndFPP returns it as the
// builder).
type bloomFilter interface {
	InsertHash(uint64)
	CheckHash(uint64) bool
}

// hashID is the filter's hash of a number: xxHash64 of its 8 bytes.
func hashID(n uint64) uint64 {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], n)
	return xxhash.Sum64(b[:])
}

// Add adds id.
func (s *idSet) Add(id string) {
	if n, ok := parseID(id); ok {
		s.addNum(n)
	} else {
		if s.addStrs == nil {
			s.addStrs = map[string]struct{}{}
		}
		s.addStrs[strings.Clone(id)] = struct{}{} // id may share a record's buffer
	}
}

// hasNum reports whether the number n is in the set.
func (s *idSet) hasNum(n uint64) bool {
	if _, found := slices.BinarySearch(s.nums, n); found {
		return true
	}
	if _, found := slices.BinarySearch(s.added, n); found {
		return true
	}
	_, added := s.addNums[n]
	return added
}

// sortedNumbers returns the numbers of the set, sorted. It merges the
// latest additions among those added, not into those the set began with:
// HasEarlier answers as before.
func (s *idSet) sortedNumbers() []uint64 {
	s.compact()
	return mergeSorted(s.nums, s.added)
}

// numbers is how many numbers the set holds.
func (s *idSet) numbers() int { return len(s.nums) + len(s.added) + len(s.addNums) }

// Len is the number of ids. It settles the set.
func (s *idSet) Len() int {
	s.settle()
	return len(s.nums) + len(s.strs)
}

// compact merges the numbers waiting in the map into the sorted list of
// those added.
func (s *idSet) compact() {
	if len(s.addNums) > 0 {
		added := make([]uint64, 0, len(s.addNums))
		for n := range s.addNums {
			added = append(added, n)
		}
		slices.Sort(added)
		s.added = mergeSorted(s.added, added)
		s.addNums = nil
	}
}

// settle merges every id added into the ids the set holds: from then on,
// HasEarlier holds them too.
func (s *idSet) settle() {
	s.compact()
	if len(s.added) > 0 {
		s.nums = mergeSorted(s.nums, s.added)
		s.added = nil
	}
	if len(s.addStrs) > 0 {
		for str := range s.addStrs {
			s.strs = append(s.strs, str)
		}
		slices.Sort(s.strs)
		s.strs = slices.Compact(s.strs)
		s.addStrs = nil
	}
}

// snapshot is the set as it is now, settled: ids added to s later are not
// in it. (settle replaces nums, never changes it in place, so it is shared.)
func (s *idSet) snapshot() *idSet {
	s.settle()
	return &idSet{nums: s.nums, strs: slices.Clone(s.strs)}
}

// mergeSorted merges two sorted lists of unique numbers into one.
func mergeSorted(a, b []uint64) []uint64 {
	out := make([]uint64, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		switch {
		case a[0] < b[0]:
			out, a = append(out, a[0]), a[1:]
		case b[0] < a[0]:
			out, b = append(out, b[0]), b[1:]
		default:
			out, a, b = append(out, a[0]), a[1:], b[1:]
		}
	}
	return append(append(out, a...), b...)
}

// IDs lists the ids (numbers first, then the others). It settles the set.
func (s *idSet) IDs() []string {
	s.settle()
	out := make([]string, 0, len(s.nums)+len(s.strs))
	for _, n := range s.nums {
		out = append(out, strconv.FormatUint(n, 10))
	}
	return append(out, s.strs...)
}

const idSetFormat = 1

// MarshalText encodes the set: format byte, count of numbers, their deltas
// as uvarints, count of strings, each length-prefixed; DEFLATE; base64.
func (s *idSet) MarshalText() ([]byte, error) {
	s.settle()
	raw := []byte{idSetFormat}
	raw = binary.AppendUvarint(raw, uint64(len(s.nums)))
	var prev uint64
	for _, n := range s.nums {
		raw = binary.AppendUvarint(raw, n-prev)
		prev = n
	}
	raw = binary.AppendUvarint(raw, uint64(len(s.strs)))
	raw = textpack.AppendStrings(raw, s.strs)
	return textpack.Pack(raw)
}

// UnmarshalText decodes what MarshalText wrote.
func (s *idSet) UnmarshalText(text []byte) error {
	raw, err := textpack.Unpack(text, "written-id set")
	if err != nil {
		return err
	}
	r := bytes.NewReader(raw)
	bad := errors.New("written-id set: damaged")
	if f, err := r.ReadByte(); err != nil || f != idSetFormat {
		return fmt.Errorf("written-id set: unknown format")
	}
	count, err := binary.ReadUvarint(r)
	if err != nil || count > uint64(len(raw)) {
		return bad
	}
	*s = idSet{nums: make([]uint64, count)} // and no filter: made when asked for
	var prev uint64
	for i := range s.nums {
		d, err := binary.ReadUvarint(r)
		if err != nil || (i > 0 && d == 0) || prev+d < prev { // sorted and unique: no repeat, no wrap
			return bad
		}
		prev += d
		s.nums[i] = prev
	}
	count, err = binary.ReadUvarint(r)
	if err != nil || count > uint64(len(raw)) {
		return bad
	}
	var ok bool
	if s.strs, ok = textpack.ReadStrings(r, count); !ok {
		return bad
	}
	if r.Len() != 0 {
		return bad
	}
	for i, str := range s.strs {
		if _, isNum := parseID(str); isNum || (i > 0 && s.strs[i-1] >= str) {
			return bad // numbers are kept as numbers; the rest sorted and unique
		}
	}
	return nil
}
