package pqfile

import (
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

	"github.com/cq-source-x/cq-source-x/internal/directio"
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

// Writer writes one Parquet file, from Arrow records (NewWriter, Create)
// or from Columns (NewColumnsWriter, CreateColumns). Encoding and
// compression run in a goroutine of their own, one batch behind the caller,
// so that a sync keeps producing rows while the previous batch is encoded:
// on two cores the two overlap instead of taking turns.
type Writer struct {
	w         io.Writer
	file      fileBackend
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
	// For a Writer of Columns: their layout, and the written ones, emptied,
	// for NewColumns to hand out again.
	layout *layout
	free   chan *Columns
	// sizes are the largest lengths of each column's buffers among the
	// Columns handed to WriteColumns: a new Columns starts at these
	// capacities instead of growing to them value by value.
	sizes []columnSizes

	batches chan work     // to the encoding goroutine; holds one batch
	done    chan struct{} // closed when the encoding goroutine ends
	errMu   sync.Mutex
	err     error // the encoding goroutine's first error
}

// work is one batch for the encoding goroutine: records or Columns.
type work struct {
	recs []arrow.RecordBatch
	cols *Columns
}

// fileBackend is the Parquet file being written: pqarrow's for records,
// arrow-go's column writers for Columns.
type fileBackend interface {
	// newRowGroup closes the current buffered row group, if any, and starts
	// the next.
	newRowGroup() error
	hasRowGroup() bool
	// endRowGroup writes a full row group out at once, if the backend can
	// before the next begins, and reports whether it did.
	endRowGroup() (bool, error)
	writeRecord(rec arrow.RecordBatch) error
	writeColumns(c *Columns) error
	close() error
}

const (
	// PageBytes is the size at which a data page is closed.
	PageBytes = 256 << 10
	// PageBatchValues is how many values arrow-go encodes between checks of
	// the page size: a page ends at the first check past PageBytes.
	PageBatchValues = 256
)

// writerProperties are the Parquet properties of every file.
func writerProperties(sc *arrow.Schema, o Options) (*parquet.WriterProperties, error) {
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
		parquet.WithDataPageSize(PageBytes),
		// The page size is checked after each batch of values, so with
		// arrow-go's default of 1,024 a page of posts (about 570 bytes of
		// JSON each) came out near 600 KB. Batches of 256 keep pages near
		// the size asked for (about 300 KB), and arrow-go's pooled page
		// buffers, which it zeroes whole at every page, half as large:
		// 2-4% less CPU and 12 MB less RSS at 100,000 posts
		// (docs/parquet.md).
		parquet.WithBatchSize(PageBatchValues),
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
	return parquet.NewWriterProperties(props...), nil
}

// NewWriter writes records of schema sc to w, and sc itself as the stored
// Arrow schema (ARROW:schema). Close closes w if it is an io.Closer.
func NewWriter(w io.Writer, sc *arrow.Schema, o Options) (*Writer, error) {
	props, err := writerProperties(sc, o)
	if err != nil {
		return nil, err
	}
	fw, err := pqarrow.NewFileWriter(sc, w, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	return newWriter(w, sc, &arrowFile{fw: fw}, o), nil
}

// NewColumnsWriter writes the rows of conv's table, given as Columns, to w:
// the file NewWriter would write from the same rows as converted records.
func NewColumnsWriter(w io.Writer, conv *Converter, o Options) (*Writer, error) {
	l, err := newLayout(conv.table)
	if err != nil {
		return nil, err
	}
	sc := conv.Schema()
	props, err := writerProperties(sc, o)
	if err != nil {
		return nil, err
	}
	cf, err := newColumnFile(w, sc, props, conv, l)
	if err != nil {
		return nil, err
	}
	wr := newWriter(w, sc, cf, o)
	wr.layout = l
	wr.free = make(chan *Columns, 2)
	return wr, nil
}

func newWriter(w io.Writer, sc *arrow.Schema, file fileBackend, o Options) *Writer {
	batch := o.BatchRows
	if batch <= 0 {
		batch = DefaultBatchRows
	}
	groupMax := o.RowGroupRows
	if groupMax <= 0 {
		groupMax = DefaultRowGroupRows
	}
	wr := &Writer{w: w, file: file, sc: sc, batch: batch, groupMax: groupMax,
		batches: make(chan work, 1), done: make(chan struct{})}
	go wr.encode()
	return wr
}

// encode writes the batches handed over by flush and WriteColumns, in order.
func (w *Writer) encode() {
	defer close(w.done)
	for b := range w.batches {
		if w.failed() == nil {
			if err := w.writeBatch(b); err != nil {
				w.errMu.Lock()
				w.err = err
				w.errMu.Unlock()
			}
		}
		for _, r := range b.recs {
			r.Release()
		}
		if b.cols != nil && b.cols.owner == w {
			b.cols.Reset()
			select {
			case w.free <- b.cols:
			default:
			}
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
	return create(path, func(w io.Writer) (*Writer, error) { return NewWriter(w, sc, o) })
}

// CreateColumns creates path (which must not exist) and writes the rows of
// conv's table to it from Columns, as NewColumnsWriter. Close writes the
// footer, syncs the file to disk and closes it.
func CreateColumns(path string, conv *Converter, o Options) (*Writer, error) {
	return create(path, func(w io.Writer) (*Writer, error) { return NewColumnsWriter(w, conv, o) })
}

func create(path string, newWriter func(io.Writer) (*Writer, error)) (*Writer, error) {
	sink, err := directio.Create(path, os.O_EXCL)
	if err != nil {
		return nil, err
	}
	// The Parquet writer is given the sink as a bare io.Writer, so that it
	// does not close it: closeFile does.
	w, err := newWriter(writerOnly{sink})
	if err != nil {
		sink.Close()
		os.Remove(path)
		return nil, err
	}
	w.afterRowGroup = sink.PartDone
	w.closeFile = sink.Close
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
	if w.layout != nil {
		return errors.New("this Parquet writer takes Columns, not records")
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

// NewColumns returns empty Columns for the rows of a Writer of Columns,
// reusing the memory of those already written.
func (w *Writer) NewColumns() (*Columns, error) {
	if w.layout == nil {
		return nil, errors.New("this Parquet writer takes records, not Columns")
	}
	select {
	case c := <-w.free:
		return c, nil
	default:
		c := w.layout.newColumns()
		c.owner = w
		for i := range w.sizes {
			c.cols[i].reserve(w.sizes[i])
		}
		return c, nil
	}
}

// WriteColumns hands c to the encoding goroutine. Columns from this
// Writer's NewColumns are the Writer's from then on (the caller gets the
// next from NewColumns); others (NewColumns of the package) must not change
// until Close. Like Write, it blocks while a batch is already waiting.
func (w *Writer) WriteColumns(c *Columns) error {
	if err := w.failed(); err != nil {
		return err
	}
	if w.layout == nil {
		return errors.New("this Parquet writer takes records, not Columns")
	}
	if (c.owner != nil && c.owner != w) || !w.layout.holds(c) {
		return fmt.Errorf("columns of table %s given to another writer of table %s", c.table.Name, w.layout.table.Name)
	}
	// Before the empty check: a wrong value is not appended, so a batch of
	// nothing but wrong values has no rows.
	if err := c.Err(); err != nil {
		return err
	}
	if c.Len() == 0 {
		return nil
	}
	w.rows += int64(c.Len())
	if c.owner == w {
		if w.sizes == nil {
			w.sizes = make([]columnSizes, len(c.cols))
		}
		for i := range c.cols {
			w.sizes[i] = w.sizes[i].atLeast(c.cols[i].sizes())
		}
	}
	w.batches <- work{cols: c}
	return w.failed()
}

// flush hands the gathered records to the encoding goroutine. It blocks
// while that goroutine still has a batch waiting, which bounds the memory in
// flight to two batches.
func (w *Writer) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	w.batches <- work{recs: w.pending}
	w.pending, w.pendRows = nil, 0
	return w.failed()
}

// writeBatch writes one batch into the current row group, first starting a
// new one if it is full. Batches go into a buffered row group, which holds
// its encoded pages (a few MB) until it is closed: row groups of
// RowGroupRows, encoded BatchRows at a time, so that little is left to
// encode when the input ends (it is on the export's critical path).
func (w *Writer) writeBatch(b work) error {
	if !w.file.hasRowGroup() || w.groupRows >= int64(w.groupMax) {
		started := w.file.hasRowGroup()
		if err := w.file.newRowGroup(); err != nil { // writes the full one
			return err
		}
		w.groupRows = 0
		if started && w.afterRowGroup != nil {
			w.afterRowGroup()
		}
	}
	if b.cols != nil {
		if err := w.file.writeColumns(b.cols); err != nil {
			return err
		}
		w.groupRows += int64(b.cols.Len())
	} else {
		rec, err := w.concat(b.recs)
		if err != nil {
			return err
		}
		defer rec.Release()
		if err := w.file.writeRecord(rec); err != nil {
			return err
		}
		w.groupRows += rec.NumRows()
	}
	if w.groupRows >= int64(w.groupMax) {
		// Write the full row group now, while the sync goes on, rather
		// than when the next batch arrives: if that is the last one, the
		// whole row group would be written after the sync's last page,
		// on the export's critical path (11 ms of 36 at the end of a
		// 100,000-post export).
		ended, err := w.file.endRowGroup()
		if err != nil {
			return err
		}
		if ended && w.afterRowGroup != nil {
			w.afterRowGroup()
		}
	}
	return nil
}

// concat makes one record of recs.
func (w *Writer) concat(recs []arrow.RecordBatch) (arrow.RecordBatch, error) {
	if len(recs) == 1 {
		recs[0].Retain()
		return recs[0], nil
	}
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
			return nil, err
		}
		cols[i] = c
	}
	return array.NewRecordBatch(w.sc, cols, rows), nil
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
	err = errors.Join(err, w.file.close())
	if w.closeFile != nil {
		err = errors.Join(err, w.closeFile())
	}
	return err
}

// writerOnly hides all but Write (the Parquet writers close an io.Closer).
type writerOnly struct{ w io.Writer }

func (w writerOnly) Write(p []byte) (int, error) { return w.w.Write(p) }
