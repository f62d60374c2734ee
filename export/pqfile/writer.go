package pqfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Options tune a Writer. The zero value is what the exporter uses.
type Options struct {
	// Codec is the compression codec's name, one of Codecs; "" means
	// DefaultCodec.
	Codec string
	// CreatedBy is written as the file's created_by.
	CreatedBy string
	// BatchRows is how many rows are gathered into one record before it is
	// encoded; 0 means DefaultBatchRows. The SDK sends records of 50 rows,
	// and pqarrow's cost per record written dominates at that size.
	BatchRows int
	// RowGroupRows: a row group is closed, and a new one started, once it
	// holds at least this many rows; 0 means DefaultRowGroupRows.
	RowGroupRows int
	// CompressionLevel for codecs that have levels (zstd, gzip); 0 means
	// DefaultZstdLevel for zstd and the codec's default for the others.
	CompressionLevel int
}

// DefaultBatchRows is the size of the records encoded (see Options): small
// enough that what is left to encode when the input ends is short, large
// enough that the cost per record does not count.
const DefaultBatchRows = 4096

// DefaultRowGroupRows is the size of row groups (see Options): a few MB of
// pages held until the group is written, and a row group count readers
// handle well (about 6 per 100,000 bookmarks).
const DefaultRowGroupRows = 16384

// DefaultZstdLevel is zstd's fastest level (docs/parquet.md).
const DefaultZstdLevel = 1

// Writer writes one Parquet file. Encoding and compression run in a
// goroutine of their own, one batch behind the caller, so that a sync keeps
// producing records while the previous batch is encoded: on two cores the
// two overlap instead of taking turns.
type Writer struct {
	w         io.Writer
	fw        *pqarrow.FileWriter
	sc        *arrow.Schema
	batch     int
	groupMax  int   // RowGroupRows
	groupRows int64 // rows in the row group being written (encoding goroutine)
	pending   []arrow.RecordBatch
	pendRows  int
	rows      int64
	closed    bool
	closeFile func() error
	// afterRowGroup, when set, runs in the encoding goroutine after each
	// row group but the last is written.
	afterRowGroup func()

	batches chan []arrow.RecordBatch // to the encoding goroutine; holds one batch
	done    chan struct{}            // closed when the encoding goroutine ends
	errMu   sync.Mutex
	err     error // the encoding goroutine's first error
}

// NewWriter writes records of schema sc to w, and sc itself as the stored
// Arrow schema (ARROW:schema). Close closes w if it is an io.Closer.
func NewWriter(w io.Writer, sc *arrow.Schema, o Options) (*Writer, error) {
	codec, err := ParseCodec(o.Codec)
	if err != nil {
		return nil, err
	}
	props := []parquet.WriterProperty{
		parquet.WithCompression(codec),
		// No dictionaries: the columns that repeat (user_id, lang, the
		// _cq_ columns) compress as well without one, and the dictionary
		// encoder allocated for every value (docs/parquet.md).
		parquet.WithDictionaryDefault(false),
		parquet.WithDataPageSize(256 << 10),
		parquet.WithStats(true),
	}
	for _, f := range sc.Fields() {
		if v, _ := f.Metadata.GetValue(MetadataJSON); v == "true" {
			// The min and max of JSON text prune nothing and cost a
			// comparison per value: no statistics for JSON columns.
			props = append(props, parquet.WithStatsFor(f.Name, false))
		}
	}
	level := o.CompressionLevel
	if level == 0 && codec == compress.Codecs.Zstd {
		level = DefaultZstdLevel
	}
	if level != 0 {
		props = append(props, parquet.WithCompressionLevel(level))
	}
	if o.CreatedBy != "" {
		props = append(props, parquet.WithCreatedBy(o.CreatedBy))
	}
	fw, err := pqarrow.NewFileWriter(sc, w, parquet.NewWriterProperties(props...),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	batch := o.BatchRows
	if batch <= 0 {
		batch = DefaultBatchRows
	}
	groupMax := o.RowGroupRows
	if groupMax <= 0 {
		groupMax = DefaultRowGroupRows
	}
	wr := &Writer{w: w, fw: fw, sc: sc, batch: batch, groupMax: groupMax,
		batches: make(chan []arrow.RecordBatch, 1), done: make(chan struct{})}
	go wr.encode()
	return wr, nil
}

// encode writes the batches handed over by flush, in order.
func (w *Writer) encode() {
	defer close(w.done)
	for recs := range w.batches {
		if w.failed() == nil {
			if err := w.writeBatch(recs); err != nil {
				w.errMu.Lock()
				w.err = err
				w.errMu.Unlock()
			}
		}
		for _, r := range recs {
			r.Release()
		}
	}
}

func (w *Writer) failed() error {
	w.errMu.Lock()
	defer w.errMu.Unlock()
	return w.err
}

// Create creates path (which must not exist) and writes records of schema
// sc to it. Close writes the footer, syncs the file to disk and closes it.
func Create(path string, sc *arrow.Schema, o Options) (*Writer, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	// The Parquet writer makes many small writes; buffer them. bufio.Writer
	// is not an io.Closer, so the Parquet writer does not close the file.
	bw := bufio.NewWriterSize(f, 1<<20)
	w, err := NewWriter(bw, sc, o)
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, err
	}
	// After each row group, start writing what the file holds so far to
	// disk: the final fsync then waits for the last row group only, rather
	// than for the whole file (hundreds of MB for a large first export).
	w.afterRowGroup = func() { startWriteback(f) }
	w.closeFile = func() error {
		if err := bw.Flush(); err != nil {
			f.Close()
			return err
		}
		return errors.Join(f.Sync(), f.Close())
	}
	return w, nil
}

// Write adds rec to the file. Records are gathered until BatchRows rows,
// then written as one; a new row group starts once the current one is full.
func (w *Writer) Write(rec arrow.RecordBatch) error {
	if rec.NumRows() == 0 {
		return nil
	}
	if err := w.failed(); err != nil {
		return err
	}
	if !rec.Schema().Equal(w.sc) {
		return fmt.Errorf("record schema does not match the file's:\nrecord: %s\nfile: %s", rec.Schema(), w.sc)
	}
	rec.Retain()
	w.pending = append(w.pending, rec)
	w.pendRows += int(rec.NumRows())
	w.rows += rec.NumRows()
	if w.pendRows >= w.batch {
		return w.flush()
	}
	return nil
}

// flush hands the gathered records to the encoding goroutine. It blocks
// while that goroutine still has a batch waiting, which bounds the memory in
// flight to two batches.
func (w *Writer) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	w.batches <- w.pending
	w.pending, w.pendRows = nil, 0
	return w.failed()
}

// writeBatch writes records as one record.
func (w *Writer) writeBatch(recs []arrow.RecordBatch) error {
	rec := recs[0]
	if len(recs) > 1 {
		rows := int64(0)
		for _, r := range recs {
			rows += r.NumRows()
		}
		cols := make([]arrow.Array, w.sc.NumFields())
		defer func() {
			for _, c := range cols {
				if c != nil {
					c.Release()
				}
			}
		}()
		parts := make([]arrow.Array, len(recs))
		for i := range cols {
			for j, r := range recs {
				parts[j] = r.Column(i)
			}
			c, err := array.Concatenate(parts, memory.DefaultAllocator)
			if err != nil {
				return err
			}
			cols[i] = c
		}
		rec = array.NewRecordBatch(w.sc, cols, rows)
		defer rec.Release()
	}
	// Batches go into a buffered row group, which holds its encoded pages
	// (a few MB) until it is closed: row groups of RowGroupRows, encoded
	// BatchRows at a time, so that little is left to encode when the input
	// ends (it is on the export's critical path).
	if w.groupRows >= int64(w.groupMax) {
		if err := w.fw.NewBufferedRowGroupChecked(); err != nil { // writes the full one
			return err
		}
		w.groupRows = 0
		if w.afterRowGroup != nil {
			w.afterRowGroup()
		}
	}
	if err := w.fw.WriteBuffered(rec); err != nil {
		return err
	}
	w.groupRows += rec.NumRows()
	return nil
}

// Rows is the number of rows written so far (some may still be gathered).
func (w *Writer) Rows() int64 { return w.rows }

// Close writes the footer; for a Writer made by Create it also syncs and
// closes the file.
func (w *Writer) Close() error {
	if w.closed {
		return nil
	}
	w.closed = true
	err := w.flush()
	close(w.batches)
	<-w.done
	if err == nil {
		err = w.failed()
	}
	err = errors.Join(err, w.fw.Close())
	if w.closeFile != nil {
		err = errors.Join(err, w.closeFile())
	}
	return err
}
