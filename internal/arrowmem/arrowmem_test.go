package arrowmem

import (
	"testing"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func aligned(b []byte) bool {
	return uintptr(unsafe.Pointer(unsafe.SliceData(b)))%alignment == 0
}

// A buffer freed is the one handed out next for a size of its class.
func TestFreedBufferIsReused(t *testing.T) {
	a := NewRecycling(1 << 30)
	b := a.Allocate(100_000)
	if len(b) != 100_000 || cap(b) != classSize(100_000) || !aligned(b) {
		t.Fatalf("len %d cap %d aligned %v", len(b), cap(b), aligned(b))
	}
	b[0] = 42
	a.Free(b)
	if a.Held() != cap(b) {
		t.Fatalf("held %d, want %d", a.Held(), cap(b))
	}
	c := a.Allocate(99_000) // same class
	if unsafe.SliceData(c) != unsafe.SliceData(b) || len(c) != 99_000 {
		t.Fatal("the freed buffer was not reused")
	}
	if c[0] != 42 {
		t.Fatal("a reused buffer is handed out as it was (not zeroed)")
	}
	if a.Held() != 0 {
		t.Fatalf("held %d after reuse", a.Held())
	}
}

// Small buffers are Go's: not kept, never zeroed by mistake.
func TestSmallBuffersAreNotKept(t *testing.T) {
	a := NewRecycling(1 << 30)
	b := a.Allocate(1000)
	if len(b) != 1000 || !aligned(b) {
		t.Fatalf("len %d aligned %v", len(b), aligned(b))
	}
	a.Free(b)
	if a.Held() != 0 {
		t.Fatalf("kept a %d-byte buffer", len(b))
	}
}

// What the limit does not allow is left to the garbage collector.
func TestLimitBoundsWhatIsKept(t *testing.T) {
	a := NewRecycling(200_000)
	x, y := a.Allocate(100_000), a.Allocate(100_000)
	a.Free(x)
	a.Free(y) // 2 × 114,688 > 200,000
	if a.Held() != classSize(100_000) {
		t.Fatalf("held %d, want one buffer (%d)", a.Held(), classSize(100_000))
	}
}

// Buffers from elsewhere (not of a class size) are not taken.
func TestForeignBuffersAreNotKept(t *testing.T) {
	a := NewRecycling(1 << 30)
	a.Free(make([]byte, 100_001))
	if a.Held() != 0 {
		t.Fatal("kept a buffer of no class size")
	}
}

// Reallocate grows in place within the class, and otherwise moves the
// contents to a larger buffer and keeps the old one.
func TestReallocateKeepsContents(t *testing.T) {
	a := NewRecycling(1 << 30)
	b := a.Allocate(40_000)
	for i := range b {
		b[i] = byte(i)
	}
	same := a.Reallocate(cap(b), b)
	if unsafe.SliceData(same) != unsafe.SliceData(b) {
		t.Fatal("grew out of place within the class")
	}
	big := a.Reallocate(1_000_000, same)
	if len(big) != 1_000_000 || !aligned(big) {
		t.Fatalf("len %d aligned %v", len(big), aligned(big))
	}
	for i := range 40_000 {
		if big[i] != byte(i) {
			t.Fatalf("byte %d lost", i)
		}
	}
	if a.Held() != cap(b) {
		t.Fatalf("the old buffer was not kept: held %d", a.Held())
	}
}

// Size classes: at most a quarter of the octave above the size, multiples
// of the alignment, and a class size is its own class.
func TestClassSizes(t *testing.T) {
	for size := minRecycled; size < 1<<26; size = size*9/8 + 7 {
		c := classSize(size)
		if c < size || c > size+size/4+alignment || c%alignment != 0 || classSize(c) != c {
			t.Fatalf("class of %d is %d", size, c)
		}
	}
}

// Records built, released and built again reuse the buffers and hold the
// second record's values, whatever the first left in them.
func TestBuildersReuseReleasedBuffers(t *testing.T) {
	a := NewRecycling(1 << 30)
	build := func(prefix string) *array.String {
		b := array.NewStringBuilder(a)
		defer b.Release()
		for i := range 20_000 {
			if i%7 == 0 {
				b.AppendNull()
				continue
			}
			b.Append(prefix + string(rune('a'+i%26)))
		}
		return b.NewStringArray()
	}
	first := build("first-")
	first.Release()
	if a.Held() == 0 {
		t.Fatal("released buffers were not kept")
	}
	second := build("2-")
	defer second.Release()
	for i := range second.Len() {
		want := "2-" + string(rune('a'+i%26))
		if i%7 == 0 {
			if second.IsValid(i) {
				t.Fatalf("row %d: valid, want null", i)
			}
		} else if second.Value(i) != want {
			t.Fatalf("row %d: %q, want %q", i, second.Value(i), want)
		}
	}
}

var _ memory.Allocator = (*Recycling)(nil)
