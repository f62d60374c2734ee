package pqfile

import (
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"unsafe"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
)

// chunkWriter writes one leaf column of a file from Columns: its data pages
// (PLAIN values, RLE levels, version 1), one row group after another. It
// makes the pages arrow-go's column writer makes from the same values —
// same page ends, levels, statistics and compression — without arrow-go's
// per-page buffers, which come from one pool shared by every column, are
// zeroed when returned and regrow from 256 bytes whenever a collection has
// emptied the pool (most of what a 100,000-post export allocated). Page
// headers, column chunk metadata and the footer are arrow-go's own
// (file.PageWriter, metadata builders).
//
// A row group's pages are kept compressed, in store, until the row group
// ends: the row group's columns are then written one after another, as a
// buffered row group of arrow-go writes them.
type chunkWriter struct {
	descr     *pqschema.Column
	kind      physicalKind
	maxDef    int16
	maxRep    int16
	codecType compress.Compression
	codec     compress.Codec // nil: uncompressed
	level     int
	pageBytes int
	batch     int // levels between checks of the page size
	maxStats  int
	signed    bool
	// statistics of the page being built and of the chunk, nil when the
	// column has none
	pageStats, chunkStats metadata.TypedStatistics
	mem                   memory.Allocator

	// the page being built: its values, PLAIN, after pageHeadroom bytes
	// kept free for its levels
	vals     []byte
	bools    *boolBits // booleans not yet in vals
	def, rep *levelEncoder
	nLevels  int
	nRows    int
	levels   []byte // the page's encoded levels
	joined   []byte // levels and values, when the levels do not fit the headroom
	strs     []parquet.ByteArray

	// the row group's pages, compressed
	store       []byte
	pages       []pageRecord
	rowsWritten int64
}

// pageRecord is a page of store.
type pageRecord struct {
	start, end   int
	levels       int32
	uncompressed int32
	stats        metadata.EncodedStatistics
	firstRow     int64
}

// pageHeadroom is the room kept in front of a page's values for its
// levels, so that the page needs no copy to put them together: the levels
// of a page of a thousand values, nulls among them, take a few hundred
// bytes.
const pageHeadroom = 4096

func newChunkWriter(descr *pqschema.Column, kind physicalKind, props *parquet.WriterProperties) (*chunkWriter, error) {
	path := descr.Path()
	w := &chunkWriter{
		descr:     descr,
		kind:      kind,
		maxDef:    descr.MaxDefinitionLevel(),
		maxRep:    descr.MaxRepetitionLevel(),
		codecType: props.CompressionFor(path),
		level:     props.CompressionLevelFor(path),
		pageBytes: int(props.DataPageSize()),
		batch:     int(props.WriteBatchSize()),
		maxStats:  int(props.MaxStatsSizeFor(path)),
		signed:    descr.SortOrder() == pqschema.SortSIGNED,
		vals:      make([]byte, pageHeadroom),
		mem:       props.Allocator(),
	}
	if w.codecType != compress.Codecs.Uncompressed {
		codec, err := compress.GetCodec(w.codecType)
		if err != nil {
			return nil, err
		}
		w.codec = codec
	}
	if props.StatisticsEnabledFor(path) && descr.SortOrder() != pqschema.SortUNKNOWN {
		w.pageStats = metadata.NewStatistics(descr, w.mem)
		w.chunkStats = metadata.NewStatistics(descr, w.mem)
	}
	if w.maxDef > 0 {
		w.def = newLevelEncoder(w.maxDef)
	}
	if w.maxRep > 0 {
		w.rep = newLevelEncoder(w.maxRep)
	}
	if kind == boolKind {
		w.bools = &boolBits{}
	}
	return w, nil
}

// leafValues is one batch of a leaf column: its levels (nil when the column
// has none) and its values, in the slice of its kind. Text and binary
// values are data[ends[k-1]:ends[k]], or all of constant when it is set.
type leafValues struct {
	def, rep []int16
	n        int // values, when there are no definition levels
	data     []byte
	ends     []int32
	constant []byte
	ints     []int64
	floats   []float64
	bools    []bool
}

// write adds a batch, as arrow-go's WriteBatch does: batch levels at a
// time, a page ending at the first check past the page size.
func (w *chunkWriter) write(in leafValues) error {
	n := in.n
	if in.def != nil {
		n = len(in.def)
	}
	vo := 0 // values written
	for lo := 0; lo < n; lo += w.batch {
		hi := min(lo+w.batch, n)
		nv := hi - lo
		if in.def != nil {
			nv = 0
			for _, d := range in.def[lo:hi] {
				if d == w.maxDef {
					nv++
				}
			}
			w.def.put(in.def[lo:hi])
		}
		if in.rep != nil {
			for _, r := range in.rep[lo:hi] {
				if r == 0 {
					w.nRows++
				}
			}
			w.rep.put(in.rep[lo:hi])
		} else {
			w.nRows += hi - lo
		}
		w.appendValues(in, vo, vo+nv, int64(hi-lo-nv))
		vo += nv
		w.nLevels += hi - lo
		if w.encodedSize() >= w.pageBytes {
			if err := w.flushPage(); err != nil {
				return err
			}
		}
	}
	return nil
}

// appendValues adds values [from, to) of in, PLAIN, and counts them and
// nulls nulls in the page's statistics.
func (w *chunkWriter) appendValues(in leafValues, from, to int, nulls int64) {
	switch w.kind {
	case byteArrayKind:
		if w.pageStats != nil {
			w.strs = w.strs[:0]
		}
		for k := from; k < to; k++ {
			v := in.constant
			if v == nil {
				start := int32(0)
				if k > 0 {
					start = in.ends[k-1]
				}
				v = in.data[start:in.ends[k]:in.ends[k]]
			}
			w.vals = binary.LittleEndian.AppendUint32(w.vals, uint32(len(v)))
			w.vals = append(w.vals, v...)
			if w.pageStats != nil {
				w.strs = append(w.strs, v)
			}
		}
		if w.pageStats != nil {
			w.pageStats.(*metadata.ByteArrayStatistics).Update(w.strs, nulls)
		}
	case int64Kind, timestampKind:
		vs := in.ints[from:to]
		for _, v := range vs {
			w.vals = binary.LittleEndian.AppendUint64(w.vals, uint64(v))
		}
		if w.pageStats != nil {
			w.pageStats.(*metadata.Int64Statistics).Update(vs, nulls)
		}
	case float64Kind:
		vs := in.floats[from:to]
		for _, v := range vs {
			w.vals = binary.LittleEndian.AppendUint64(w.vals, math.Float64bits(v))
		}
		if w.pageStats != nil {
			w.pageStats.(*metadata.Float64Statistics).Update(vs, nulls)
		}
	case boolKind:
		vs := in.bools[from:to]
		w.vals = w.bools.put(vs, w.vals)
		if w.pageStats != nil {
			w.pageStats.(*metadata.BooleanStatistics).Update(vs, nulls)
		}
	}
}

// encodedSize is the size of the page's values (arrow-go's
// EstimatedDataEncodedSize).
func (w *chunkWriter) encodedSize() int {
	if w.bools != nil {
		return len(w.vals) - pageHeadroom + (w.bools.pos+7)/8
	}
	return len(w.vals) - pageHeadroom
}

// boolBits packs booleans as arrow-go's PLAIN encoder does, and with
// them the bits it leaves in the unused high end of a page's last byte,
// which readers ignore, so that the pages are arrow-go's byte for byte: the
// encoder packs into a buffer of 1,024 bytes, emptied into the page when
// full and at the page's end and reused without clearing, through an
// arrow/bitutil.BitmapWriter, which starts each batch of values on a copy
// of the byte it last wrote — the previous byte when the last batch ended
// on a byte boundary.
type boolBits struct {
	buf     [1024]byte
	pos     int  // bits written since the buffer was last emptied
	curByte byte // the BitmapWriter's
}

const boolsInBuf = 1024 * 8

// put adds vs as one PlainBooleanEncoder.Put, appending the buffer to out
// each time it is full.
func (b *boolBits) put(vs []bool, out []byte) []byte {
	if len(vs) == 0 {
		return out
	}
	n := b.appendBools(vs)
	for n < len(vs) {
		out = append(out, b.buf[:]...)
		b.reset()
		vs = vs[n:]
		n = b.appendBools(vs)
	}
	return out
}

// appendBools is BitmapWriter.AppendBools.
func (b *boolBits) appendBools(in []bool) int {
	space := min(boolsInBuf-b.pos, len(in))
	if space == 0 {
		return 0
	}
	bitOffset, byteOffset := b.pos%8, b.pos/8
	app := b.buf[byteOffset : byteOffset+(bitOffset+space+7)/8]
	app[0] = b.curByte
	for i, v := range in[:space] {
		if k := i + bitOffset; v {
			app[k/8] |= 1 << (k % 8)
		} else {
			app[k/8] &^= 1 << (k % 8)
		}
	}
	b.pos += space
	b.curByte = app[len(app)-1]
	return space
}

// flush appends what the buffer holds to out and starts it again
// (FlushValues).
func (b *boolBits) flush(out []byte) []byte {
	if b.pos > 0 {
		out = append(out, b.buf[:(b.pos+7)/8]...)
	}
	b.reset()
	return out
}

func (b *boolBits) reset() { b.pos, b.curByte = 0, b.buf[0] }

// flushPage ends the page being built: levels and values, compressed, into
// store.
func (w *chunkWriter) flushPage() error {
	// Version 1 pages: repetition levels, then definition levels, each
	// after its length; then the values.
	if w.bools != nil {
		w.vals = w.bools.flush(w.vals)
	}
	w.levels = w.levels[:0]
	if w.rep != nil {
		enc := w.rep.finish()
		w.levels = binary.LittleEndian.AppendUint32(w.levels, uint32(len(enc)))
		w.levels = append(w.levels, enc...)
	}
	if w.def != nil {
		enc := w.def.finish()
		w.levels = binary.LittleEndian.AppendUint32(w.levels, uint32(len(enc)))
		w.levels = append(w.levels, enc...)
	}
	var page []byte
	if len(w.levels) <= pageHeadroom {
		start := pageHeadroom - len(w.levels)
		copy(w.vals[start:], w.levels)
		page = w.vals[start:]
	} else {
		w.joined = append(append(w.joined[:0], w.levels...), w.vals[pageHeadroom:]...)
		page = w.joined
	}
	if len(page) > math.MaxInt32 {
		return fmt.Errorf("column %s: page of %d bytes", w.descr.Path(), len(page))
	}

	var stats metadata.EncodedStatistics
	if w.pageStats != nil {
		var err error
		if stats, err = w.encodeStats(w.pageStats); err != nil {
			return err
		}
		// Kept until the row group is written, while the statistics
		// object is reused: copy what may be its memory.
		stats.Min, stats.Max = cloneBytes(stats.Min), cloneBytes(stats.Max)
		w.chunkStats.Merge(w.pageStats)
		w.pageStats.Reset()
	}

	start := len(w.store)
	if w.codec == nil {
		w.store = append(roomFor(w.store, len(page)), page...)
	} else {
		bound := int(w.codec.CompressBound(int64(len(page))))
		w.store = roomFor(w.store, bound)
		dst := w.store[start : start+bound : start+bound]
		out := w.codec.EncodeLevel(dst, page, w.level)
		if len(out) > 0 && unsafe.SliceData(out) == unsafe.SliceData(dst) {
			w.store = w.store[:start+len(out)]
		} else {
			w.store = append(w.store[:start], out...)
		}
	}
	w.pages = append(w.pages, pageRecord{start: start, end: len(w.store), levels: int32(w.nLevels),
		uncompressed: int32(len(page)), stats: stats, firstRow: w.rowsWritten})
	w.rowsWritten += int64(w.nRows)

	w.vals = w.vals[:pageHeadroom]
	w.nLevels, w.nRows = 0, 0
	if w.def != nil {
		w.def.reset()
	}
	if w.rep != nil {
		w.rep.reset()
	}
	return nil
}

// roomFor returns b with room for n more bytes, doubling its capacity as it
// grows: a row group's store grows page by page to a few MB, and append's
// growth of a quarter at a time would copy it a dozen times.
func roomFor(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b
	}
	nb := make([]byte, len(b), max(2*cap(b), len(b)+n))
	copy(nb, b)
	return nb
}

// encodeStats encodes a page's or the chunk's statistics as arrow-go's
// column writer does: min and max dropped when longer than the limit, the
// sort order's sign set.
func (w *chunkWriter) encodeStats(s metadata.TypedStatistics) (metadata.EncodedStatistics, error) {
	enc, err := s.Encode()
	if err != nil {
		return enc, err
	}
	enc.ApplyStatSizeLimits(w.maxStats)
	enc.Signed = w.signed
	return enc, nil
}

func cloneBytes(b []byte) []byte {
	if b == nil {
		return nil
	}
	return append([]byte{}, b...)
}

// writeChunk ends the row group's last page and writes the row group's
// pages to sink as the column's chunk, column colOrdinal of row group
// rgOrdinal: the bytes written (pages and their headers, as arrow-go counts
// them for the row group's size).
func (w *chunkWriter) writeChunk(sink *tellWriter, rg *metadata.RowGroupMetaDataBuilder, rgOrdinal, colOrdinal int16) (int64, error) {
	if w.nLevels > 0 {
		if err := w.flushPage(); err != nil {
			return 0, err
		}
	}
	meta := rg.NextColumnChunk()
	pager, err := file.NewPageWriter(sink, w.codecType, w.level, meta, rgOrdinal, colOrdinal, memory.DefaultAllocator, false, nil, nil)
	if err != nil {
		return 0, err
	}
	var written int64
	for _, p := range w.pages {
		page := file.NewDataPageV1WithConfig(memory.NewBufferBytes(w.store[p.start:p.end]), parquet.Encodings.RLE, parquet.Encodings.RLE,
			file.DataPageConfig{Num: p.levels, Encoding: parquet.Encodings.Plain, UncompressedSize: p.uncompressed, Stats: p.stats, FirstRowIndex: p.firstRow})
		n, err := pager.WriteDataPage(page)
		page.Release()
		if err != nil {
			return written, err
		}
		written += n
	}
	if w.chunkStats != nil {
		stats, err := w.encodeStats(w.chunkStats)
		if err != nil {
			return written, err
		}
		if w.rowsWritten > 0 && stats.IsSet() {
			meta.SetStats(stats)
		}
		// A new one, as arrow-go's column writer of the next row group
		// would have: Reset would also forget that a null count is kept.
		w.chunkStats = metadata.NewStatistics(w.descr, w.mem)
	}
	if err := pager.Close(false, false); err != nil {
		return written, err
	}
	w.store, w.pages, w.rowsWritten = w.store[:0], w.pages[:0], 0
	if w.bools != nil {
		*w.bools = boolBits{} // a new row group's column writer starts with a new buffer
	}
	return written, nil
}

// tellWriter counts the bytes written through it: the sink arrow-go's page
// writers take, which ask it where they are in the file.
type tellWriter struct {
	w io.Writer
	n int64
}

func (t *tellWriter) Write(p []byte) (int, error) {
	n, err := t.w.Write(p)
	t.n += int64(n)
	return n, err
}

func (t *tellWriter) Tell() int64 { return t.n }
