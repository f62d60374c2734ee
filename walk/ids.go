package walk

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cq-source-x/cq-source-x/ids"
)

// IDList is an ordered list of post ids, newest first, kept as numbers as
// package ids says why; once one is not a number, as strings.
type IDList struct {
	nums []uint64
	strs []string // non-nil once the list holds a non-numeric id
}

func NewIDList(ids ...string) *IDList {
	l := &IDList{}
	for _, id := range ids {
		l.Append(id)
	}
	return l
}

func (l *IDList) Len() int {
	if l == nil {
		return 0
	}
	return len(l.nums) + len(l.strs) // one of them is empty
}

func (l *IDList) At(i int) string {
	if l.strs != nil {
		return l.strs[i]
	}
	return strconv.FormatUint(l.nums[i], 10)
}

func (l *IDList) Append(id string) {
	if l.strs == nil {
		if n, ok := ids.Parse(id); ok {
			l.nums = append(l.nums, n)
			return
		}
		l.strs, l.nums = l.IDs(), nil // non-nil, even when empty
	}
	l.strs = append(l.strs, strings.Clone(id)) // id may share a page's body
}

// appendFrom appends the i-th id of src, without a round trip through a
// string when both lists hold numbers.
func (l *IDList) appendFrom(src *IDList, i int) {
	if l.strs == nil && src.strs == nil {
		l.nums = append(l.nums, src.nums[i])
		return
	}
	l.Append(src.At(i))
}

// IDs returns the ids as strings (a copy).
func (l *IDList) IDs() []string {
	out := make([]string, l.Len())
	for i := range out {
		out[i] = l.At(i)
	}
	return out
}

// Positions returns the index of an id in the list (the first, should an id
// repeat), and whether the list holds it. It is built once per walk, from
// the list held since the last sync.
func (l *IDList) Positions() func(id string) (int, bool) {
	if l.strs != nil {
		m := index(l.strs)
		return func(id string) (int, bool) { i, ok := m[id]; return i, ok }
	}
	m := index(l.nums)
	return func(id string) (int, bool) {
		n, isNum := ids.Parse(id)
		i, ok := m[n]
		return i, isNum && ok
	}
}

// index maps each value of list to its first index.
func index[K comparable](list []K) map[K]int {
	m := make(map[K]int, len(list))
	for i, k := range slices.Backward(list) {
		m[k] = i
	}
	return m
}

// The state's encoding of a list: a format byte, the count, then the ids
// (numbers as zig-zag varint deltas; strings length-prefixed), ids.Pack'ed.
const (
	formatNumbers byte = 1
	formatStrings byte = 2
)

func (l *IDList) MarshalText() ([]byte, error) {
	var raw []byte
	if l.strs != nil {
		raw = append(raw, formatStrings)
		raw = binary.AppendUvarint(raw, uint64(len(l.strs)))
		raw = ids.AppendStrings(raw, l.strs)
	} else {
		raw = make([]byte, 0, 1+binary.MaxVarintLen64*(1+len(l.nums)))
		raw = append(raw, formatNumbers)
		raw = binary.AppendUvarint(raw, uint64(len(l.nums)))
		var prev uint64
		for _, n := range l.nums {
			raw = binary.AppendVarint(raw, int64(n-prev))
			prev = n
		}
	}
	return ids.Pack(raw)
}

func (l *IDList) UnmarshalText(text []byte) error {
	raw, err := ids.Unpack(text, "held post list")
	if err != nil {
		return err
	}
	r := bytes.NewReader(raw)
	format, err := r.ReadByte()
	if err != nil {
		return errors.New("held post list: empty")
	}
	count, err := binary.ReadUvarint(r)
	if err != nil || count > uint64(len(raw)) {
		return errors.New("held post list: bad count")
	}
	*l = IDList{}
	switch format {
	case formatNumbers:
		l.nums = make([]uint64, count)
		var prev uint64
		for i := range l.nums {
			d, err := binary.ReadVarint(r)
			if err != nil {
				return fmt.Errorf("held post list: truncated at id %d of %d", i, count)
			}
			prev += uint64(d)
			l.nums[i] = prev
		}
	case formatStrings:
		strs, ok := ids.ReadStrings(r, count)
		if !ok {
			return fmt.Errorf("held post list: truncated at id %d of %d", len(strs), count)
		}
		l.strs = strs
	default:
		return fmt.Errorf("held post list: unknown format %d", format)
	}
	if r.Len() != 0 {
		return errors.New("held post list: trailing bytes")
	}
	return nil
}
