package ids

import (
	"bytes"
	"testing"
)

// FuzzUnpack: Unpack never panics on any text, and what Pack packs unpacks
// to the same bytes.
func FuzzUnpack(f *testing.F) {
	for _, raw := range [][]byte{nil, {1}, []byte("1800000000000000000"), bytes.Repeat([]byte{0x80}, 300)} {
		text, err := Pack(raw)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(text)
	}
	f.Add([]byte("not base64!"))
	f.Add([]byte("H4sIAAAAAAAA/w=="))
	f.Fuzz(func(t *testing.T, text []byte) {
		Unpack(text, "fuzz")
		text2, err := Pack(text)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Unpack(text2, "fuzz")
		if err != nil || !bytes.Equal(back, text) {
			t.Fatalf("Pack then Unpack: %q, %v; want %q", back, err, text)
		}
	})
}
