package pqfile

import (
	"encoding/binary"
	"math/bits"
)

// levelEncoder writes the definition or repetition levels of one data page
// in Parquet's RLE / bit-packed hybrid encoding, byte for byte as arrow-go's
// level encoder (parquet/internal/utils.RleEncoder, the Impala algorithm)
// writes them, so that files from Columns and from records stay the same
// bytes (TestColumnsWriteTheRecordsFile): runs of 8 or more equal levels
// are run-length encoded, the rest bit-packed in groups of 8, up to 63
// groups per run.
type levelEncoder struct {
	bitWidth int
	out      []byte // encoded so far; byte offsets below are into out

	// the RLE state (RleEncoder)
	buffer    [8]uint64
	nbuf      int
	curVal    uint64
	repCount  int32
	litCount  int32
	indicator int // offset of the literal run's indicator byte, or -1

	// the bit writer (BitWriter): bits not yet written to out
	word       uint64
	bitOffset  uint
	byteOffset int
}

func newLevelEncoder(maxLevel int16) *levelEncoder {
	return &levelEncoder{bitWidth: bits.Len64(uint64(maxLevel)), indicator: -1}
}

// reset starts a new page.
func (e *levelEncoder) reset() {
	e.out = e.out[:0]
	e.nbuf, e.curVal, e.repCount, e.litCount, e.indicator = 0, 0, 0, 0, -1
	e.word, e.bitOffset, e.byteOffset = 0, 0, 0
}

// put encodes levels.
func (e *levelEncoder) put(levels []int16) {
	for i := 0; i < len(levels); {
		v := uint64(levels[i])
		if v == e.curVal && e.repCount >= 8 {
			// Inside a run already long enough to be run-length encoded,
			// an equal level only lengthens it.
			j := i + 1
			for j < len(levels) && uint64(levels[j]) == v {
				j++
			}
			e.repCount += int32(j - i)
			i = j
			continue
		}
		e.putOne(v)
		i++
	}
}

func (e *levelEncoder) putOne(v uint64) {
	if e.curVal == v {
		e.repCount++
		if e.repCount > 8 {
			return
		}
	} else {
		if e.repCount >= 8 {
			e.flushRepeated()
		}
		e.repCount = 1
		e.curVal = v
	}
	e.buffer[e.nbuf] = v
	e.nbuf++
	if e.nbuf == 8 {
		e.flushBuffered()
	}
}

func (e *levelEncoder) flushBuffered() {
	if e.repCount >= 8 {
		e.nbuf = 0
		if e.litCount != 0 {
			e.flushLiteral(true)
		}
		return
	}
	e.litCount += int32(e.nbuf)
	ngroups := e.litCount / 8
	e.flushLiteral(ngroups+1 >= 1<<6)
	e.repCount = 0
}

func (e *levelEncoder) flushLiteral(updateIndicator bool) {
	if e.indicator == -1 {
		e.indicator = e.skipByte()
	}
	for _, v := range e.buffer[:e.nbuf] {
		e.writeValue(v)
	}
	e.nbuf = 0
	if updateIndicator {
		e.out[e.indicator] = byte((e.litCount/8)<<1 | 1)
		e.indicator = -1
		e.litCount = 0
	}
}

func (e *levelEncoder) flushRepeated() {
	e.alignBits()
	e.out = binary.AppendUvarint(e.out[:e.byteOffset], uint64(e.repCount)<<1)
	e.byteOffset = len(e.out)
	var raw [8]byte
	binary.LittleEndian.PutUint64(raw[:], e.curVal)
	e.out = append(e.out, raw[:(e.bitWidth+7)/8]...)
	e.byteOffset = len(e.out)
	e.repCount = 0
	e.nbuf = 0
}

// finish ends the page's levels and returns their encoding.
func (e *levelEncoder) finish() []byte {
	if e.litCount > 0 || e.repCount > 0 || e.nbuf > 0 {
		allRep := e.litCount == 0 && (e.repCount == int32(e.nbuf) || e.nbuf == 0)
		if e.repCount > 0 && allRep {
			e.flushRepeated()
		} else {
			for e.nbuf != 0 && e.nbuf < 8 {
				e.buffer[e.nbuf] = 0
				e.nbuf++
			}
			e.litCount += int32(e.nbuf)
			e.flushLiteral(true)
			e.repCount = 0
		}
	}
	// The bits of a last, partial byte count (BitWriter.Flush(false) and
	// Written).
	n := e.byteOffset
	if e.bitOffset > 0 {
		k := int(e.bitOffset+7) / 8
		e.writeAt(e.word, e.byteOffset, k)
		n += k
	}
	return e.out[:n]
}

// skipByte reserves a byte at the next byte boundary and returns its offset.
func (e *levelEncoder) skipByte() int {
	e.alignBits()
	at := e.byteOffset
	e.byteOffset++
	e.grow(e.byteOffset)
	return at
}

// writeValue appends v in bitWidth bits, least significant bits first.
func (e *levelEncoder) writeValue(v uint64) {
	e.word |= v << e.bitOffset
	e.bitOffset += uint(e.bitWidth)
	if e.bitOffset >= 64 {
		e.writeAt(e.word, e.byteOffset, 8)
		e.byteOffset += 8
		e.bitOffset -= 64
		e.word = v >> (uint(e.bitWidth) - e.bitOffset)
	}
}

// alignBits writes the pending bits and moves to the next byte boundary.
func (e *levelEncoder) alignBits() {
	if e.bitOffset > 0 {
		k := int(e.bitOffset+7) / 8
		e.writeAt(e.word, e.byteOffset, k)
		e.byteOffset += k
	}
	e.word, e.bitOffset = 0, 0
	if len(e.out) < e.byteOffset {
		e.grow(e.byteOffset)
	}
}

// writeAt writes the first n bytes of w, little-endian, at off.
func (e *levelEncoder) writeAt(w uint64, off, n int) {
	e.grow(off + n)
	var raw [8]byte
	binary.LittleEndian.PutUint64(raw[:], w)
	copy(e.out[off:off+n], raw[:n])
}

func (e *levelEncoder) grow(n int) {
	if len(e.out) < n {
		e.out = append(e.out, make([]byte, n-len(e.out))...)
	}
}
