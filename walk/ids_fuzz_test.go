package walk

import (
	"encoding/binary"
	"testing"

	"github.com/cq-source-x/cq-source-x/ids"
)

// FuzzIDListDecode decodes id lists from any bytes, packed as the state
// packs them (so that the fuzzer reaches the decoder past gzip's CRC). A
// list that decodes encodes back to a list with the same ids; nothing
// panics, and no count allocates more than the input can hold.
func FuzzIDListDecode(f *testing.F) {
	for _, l := range []*IDList{NewIDList(), NewIDList("1800000000000000001", "1800000000000000000", "5"), NewIDList("7", "x", "007", "")} {
		text, err := l.MarshalText()
		if err != nil {
			f.Fatal(err)
		}
		raw, err := ids.Unpack(text, "seed")
		if err != nil {
			f.Fatal(err)
		}
		f.Add(raw)
	}
	f.Add(binary.AppendUvarint([]byte{formatNumbers}, 1<<62))
	f.Add([]byte{formatStrings, 2, 1, 'a'})
	f.Fuzz(func(t *testing.T, raw []byte) {
		text, err := ids.Pack(raw)
		if err != nil {
			t.Fatal(err)
		}
		var l IDList
		if err := l.UnmarshalText(text); err != nil {
			return
		}
		again, err := l.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		var back IDList
		if err := back.UnmarshalText(again); err != nil {
			t.Fatalf("a decoded list does not decode once encoded: %v", err)
		}
		if back.Len() != l.Len() {
			t.Fatalf("%d ids, %d after a round trip", l.Len(), back.Len())
		}
		pos := l.Positions()
		for i := range l.Len() {
			if back.At(i) != l.At(i) {
				t.Fatalf("id %d: %q, %q after a round trip", i, l.At(i), back.At(i))
			}
			if j, ok := pos(l.At(i)); !ok || j > i || l.At(j) != l.At(i) {
				t.Fatalf("Positions of %q: %d, %v", l.At(i), j, ok)
			}
		}
	})
}
