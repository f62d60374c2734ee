package ids

import (
	"bytes"
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
)

// Sorted is a sorted list of ids as numbers, each once: the posts an
// account archived, a compliance job's posts.
type Sorted []uint64

// NewSorted sorts nums and drops repeats, in place.
func NewSorted(nums []uint64) Sorted {
	slices.Sort(nums)
	return slices.Compact(nums)
}

func (p Sorted) Has(n uint64) bool { return has(p, n) }

// has reports whether sorted list holds v.
func has[T cmp.Ordered](list []T, v T) bool {
	_, found := slices.BinarySearch(list, v)
	return found
}

func (p Sorted) Strings() []string {
	out := make([]string, len(p))
	for i, n := range p {
		out[i] = strconv.FormatUint(n, 10)
	}
	return out
}

// sortedFormat starts the encoding of a list and of a Set.
const sortedFormat byte = 1

// Marshal encodes the list as text: a format byte, the count, the ids as
// ascending deltas (uvarints), packed (Pack).
func (p Sorted) Marshal() (string, error) {
	raw := appendSorted(make([]byte, 0, 1+binary.MaxVarintLen64+len(p)*5), p)
	text, err := Pack(raw)
	return string(text), err
}

// UnmarshalSorted decodes what Marshal wrote; "" is an empty list. what
// names the value in errors.
func UnmarshalSorted(text, what string) (Sorted, error) {
	if text == "" {
		return nil, nil
	}
	raw, err := Unpack([]byte(text), what)
	if err != nil {
		return nil, err
	}
	r := bytes.NewReader(raw)
	p, err := readSorted(r, len(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%s: trailing bytes", what)
	}
	return p, nil
}

// appendSorted appends the format byte, the count and the deltas of p.
func appendSorted(raw []byte, p []uint64) []byte {
	raw = append(raw, sortedFormat)
	raw = binary.AppendUvarint(raw, uint64(len(p)))
	var prev uint64
	for _, n := range p {
		raw = binary.AppendUvarint(raw, n-prev)
		prev = n
	}
	return raw
}

// readSorted reads what appendSorted wrote from r, a value of size bytes.
// Ids that are not ascending, or that wrap past 2^64, are damage: a binary
// search would miss ids of such a list.
func readSorted(r *bytes.Reader, size int) (Sorted, error) {
	if f, err := r.ReadByte(); err != nil || f != sortedFormat {
		return nil, fmt.Errorf("unknown format")
	}
	count, err := binary.ReadUvarint(r)
	if err != nil || count > uint64(size) {
		return nil, fmt.Errorf("bad count")
	}
	out := make(Sorted, count)
	var prev uint64
	for i := range out {
		d, err := binary.ReadUvarint(r)
		if err != nil || (i > 0 && d == 0) || prev+d < prev {
			return nil, fmt.Errorf("damaged at id %d of %d", i, count)
		}
		prev += d
		out[i] = prev
	}
	return out, nil
}

// Union merges two sorted lists into a new one.
func (p Sorted) Union(o Sorted) Sorted {
	out := make(Sorted, 0, len(p)+len(o))
	for len(p) > 0 && len(o) > 0 {
		switch {
		case p[0] < o[0]:
			out, p = append(out, p[0]), p[1:]
		case o[0] < p[0]:
			out, o = append(out, o[0]), o[1:]
		default:
			out, p, o = append(out, p[0]), p[1:], o[1:]
		}
	}
	return append(append(out, p...), o...)
}
