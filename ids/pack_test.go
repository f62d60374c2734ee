package ids

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"math/rand"
	"runtime"
	"strings"
	"testing"
)

func TestPackRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 1000, 200_000} { // more than one stored block
		raw := make([]byte, n)
		rand.New(rand.NewSource(int64(n))).Read(raw)
		text, err := Pack(raw)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Unpack(text, "test")
		if err != nil || !bytes.Equal(back, raw) {
			t.Fatalf("%d bytes: round trip failed (%v)", n, err)
		}
	}
}

// State written by earlier versions holds compressed streams.
func TestUnpackReadsCompressedStreams(t *testing.T) {
	raw := bytes.Repeat([]byte("1800000000000000000,"), 1000)
	var packed bytes.Buffer
	zw, _ := flate.NewWriter(&packed, flate.BestSpeed)
	zw.Write(raw)
	zw.Close()
	back, err := Unpack([]byte(base64.StdEncoding.EncodeToString(packed.Bytes())), "test")
	if err != nil || !bytes.Equal(back, raw) {
		t.Fatalf("compressed stream: %v", err)
	}
}

func TestUnpackNamesWhatIsDamaged(t *testing.T) {
	if _, err := Unpack([]byte("not base64!"), "held post list"); err == nil || !strings.Contains(err.Error(), "held post list: not base64") {
		t.Errorf("bad base64: %v", err)
	}
	if _, err := Unpack([]byte(base64.StdEncoding.EncodeToString([]byte{0xff, 0xff})), "written-id set"); err == nil || !strings.Contains(err.Error(), "written-id set: not DEFLATE data") {
		t.Errorf("bad DEFLATE: %v", err)
	}
}

func TestStringsRoundTripAndTruncation(t *testing.T) {
	strs := []string{"", "a", "é\"<>", strings.Repeat("x", 300)}
	b := AppendStrings([]byte{7}, strs)
	r := bytes.NewReader(b[1:])
	got, ok := ReadStrings(r, uint64(len(strs)))
	if !ok || r.Len() != 0 || strings.Join(got, "|") != strings.Join(strs, "|") {
		t.Fatalf("round trip: %q, %v, %d bytes left", got, ok, r.Len())
	}
	got, ok = ReadStrings(bytes.NewReader(b[1:len(b)-1]), uint64(len(strs)))
	if ok || len(got) != 3 {
		t.Fatalf("cut short: read %d strings, ok %v; want 3 and false", len(got), ok)
	}
}

// State written by earlier versions holds bare DEFLATE streams of stored
// blocks, as Pack wrote them before it wrote gzip.
func TestUnpackReadsTheStreamsOfEarlierVersions(t *testing.T) {
	raw := make([]byte, 100_000)
	rand.New(rand.NewSource(3)).Read(raw)
	var packed bytes.Buffer
	zw, _ := flate.NewWriter(&packed, flate.NoCompression)
	zw.Write(raw)
	zw.Close()
	back, err := Unpack([]byte(base64.StdEncoding.EncodeToString(packed.Bytes())), "test")
	if err != nil || !bytes.Equal(back, raw) {
		t.Fatalf("stored stream: %v", err)
	}
}

// A damaged value is an error, never other data: gzip's CRC-32 and length
// check every byte (the header's time and OS bytes, which hold no data, may
// change freely).
func TestUnpackRefusesDamagedData(t *testing.T) {
	raw := make([]byte, 3000)
	rand.New(rand.NewSource(4)).Read(raw)
	text, err := Pack(raw)
	if err != nil {
		t.Fatal(err)
	}
	packed, _ := base64.StdEncoding.DecodeString(string(text))
	for i := range packed {
		for _, flip := range []byte{0x01, 0x10, 0x80, 0xff} {
			damaged := bytes.Clone(packed)
			damaged[i] ^= flip
			back, err := Unpack([]byte(base64.StdEncoding.EncodeToString(damaged)), "written-id set")
			if err == nil && !bytes.Equal(back, raw) {
				t.Fatalf("byte %d of %d xor %#x: read %d bytes of other data without an error", i, len(packed), flip, len(back))
			}
			if err != nil && !strings.HasPrefix(err.Error(), "written-id set: ") {
				t.Fatalf("byte %d: error %q does not name the value", i, err)
			}
		}
	}
}

// Packing and unpacking the small value of one list allocates about the
// value, not a DEFLATE compressor (hundreds of kilobytes) or decompressor
// per call: a sync packs one per list of every account.
func TestPackAndUnpackAllocateAboutTheirData(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector drops pooled values at random")
	}
	raw := make([]byte, 1000)
	rand.New(rand.NewSource(1)).Read(raw)
	const calls = 200
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range calls {
		text, err := Pack(raw)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Unpack(text, "test"); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if perCall := (after.TotalAlloc - before.TotalAlloc) / calls; perCall > 32<<10 {
		t.Fatalf("a Pack and an Unpack of %d bytes allocate %d bytes", len(raw), perCall)
	}
}

// A value packed leaves nothing of its size behind: the gzip writers kept
// for the next values do not hold on to the last one's buffer.
func TestPackKeepsNoBufferOfTheValue(t *testing.T) {
	raw := make([]byte, 8<<20)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	if _, err := Pack(raw); err != nil {
		t.Fatal(err)
	}
	runtime.GC() // the pool keeps its writers across one collection
	runtime.ReadMemStats(&after)
	if kept := int64(after.HeapAlloc) - int64(before.HeapAlloc); kept > 1<<20 {
		t.Errorf("%d bytes kept after packing %d", kept, len(raw))
	}
	runtime.KeepAlive(raw)
}
