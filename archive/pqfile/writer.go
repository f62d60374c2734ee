package pqfile

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/cloudquery/plugin-sdk/v4/schema"
)

// Options describe a file: what its rows are (the table comes to Create)
// and how it is encoded.
type Options struct {
	SyncTime     time.Time         // of every row's _cq_sync_time
	SourceName   string            // of every row's _cq_source_name
	Metadata     map[string]string // added to the schema metadata
	Codec        string            // one of Codecs; "" is DefaultCodec
	CreatedBy    string
	RowGroupRows int64 // the most rows a row group holds; 0 is DefaultRowGroupRows
}

// DefaultRowGroupRows bounds a row group: the one being written is held
// in memory, encoded, until it is full (docs/benchmarks.md).
const DefaultRowGroupRows = 16384

// Writer writes one table's rows to a Parquet file with pqarrow.
type Writer struct {
	conv *converter
	sc   *arrow.Schema // the file's
	f    *os.File
	buf  *bufio.Writer
	fw   *pqarrow.FileWriter
	rows int64
	done bool
	// err is the first write that failed: the file is incomplete, and
	// pqarrow's state is not used again (after an error midway through a
	// row group, its writers no longer agree on the column to write next).
	err error
}

// Create creates path, which must not exist, for the rows of table.
// Close writes the footer and syncs the file to disk.
func Create(path string, table *schema.Table, o Options) (*Writer, error) {
	conv, err := newConverter(table, o.SyncTime, o.SourceName, o.Metadata)
	if err != nil {
		return nil, err
	}
	w, err := CreateWritten(path, conv.out, o)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", table.Name, err)
	}
	w.conv = conv
	return w, nil
}

// CreateWritten creates path, which must not exist, for records already in
// the form this package writes them (read back from its files, as
// compaction does): sc is their schema, stored in the file as it is, and
// theirs may differ from it only in metadata (a column's description).
// Options' SyncTime, SourceName and Metadata are not used.
func CreateWritten(path string, sc *arrow.Schema, o Options) (*Writer, error) {
	props, err := writerProperties(sc, o)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	w := &Writer{sc: sc, f: f, buf: bufio.NewWriterSize(f, 1<<20)}
	// pqarrow closes the writer it is given when it closes: it is given
	// the buffer alone, and Close flushes and syncs the file after it.
	w.fw, err = pqarrow.NewFileWriter(sc, w.buf, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		f.Close()
		os.Remove(path)
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	return w, nil
}

func writerProperties(sc *arrow.Schema, o Options) (*parquet.WriterProperties, error) {
	codec, err := ParseCodec(o.Codec)
	if err != nil {
		return nil, err
	}
	rows := o.RowGroupRows
	if rows <= 0 {
		rows = DefaultRowGroupRows
	}
	props := []parquet.WriterProperty{
		parquet.WithCompression(codec),
		parquet.WithMaxRowGroupLength(rows),
		// No dictionaries: the columns that repeat (user_id, lang, the
		// _cq_ columns) compress as well without one, and the dictionary
		// encoder allocates for every value.
		parquet.WithDictionaryDefault(false),
	}
	if o.CreatedBy != "" {
		props = append(props, parquet.WithCreatedBy(o.CreatedBy))
	}
	for _, f := range sc.Fields() {
		if v, _ := f.Metadata.GetValue(MetadataJSON); v == "true" {
			// The min and max of JSON text prune nothing.
			props = append(props, parquet.WithStatsFor(f.Name, false))
		}
	}
	return parquet.NewWriterProperties(props...), nil
}

// Write adds the rows of rec, a record of the table, to the row group
// being written.
func (w *Writer) Write(rec arrow.RecordBatch) error {
	if w.err != nil {
		return w.err
	}
	if rec.NumRows() == 0 {
		return nil
	}
	var out arrow.RecordBatch
	var err error
	if w.conv != nil {
		out, err = w.conv.convert(rec)
	} else if rec.NumCols() != int64(w.sc.NumFields()) {
		err = fmt.Errorf("a record of %d columns, the file %d", rec.NumCols(), w.sc.NumFields())
	} else {
		out = array.NewRecordBatch(w.sc, rec.Columns(), rec.NumRows())
	}
	if err != nil {
		return err
	}
	defer out.Release()
	if err := w.fw.WriteBuffered(out); err != nil {
		w.err = err
		return err
	}
	w.rows += rec.NumRows()
	return nil
}

func (w *Writer) Rows() int64 { return w.rows }

// Close writes the last row group and the footer, syncs the file and
// closes it. After an error (of Close or a Write) the file is incomplete:
// its caller removes it.
func (w *Writer) Close() error {
	if w.done {
		return w.err
	}
	w.done = true
	if w.err != nil {
		return errors.Join(w.err, w.f.Close())
	}
	err := w.fw.Close()
	if err == nil {
		err = w.buf.Flush()
	}
	if err == nil {
		err = w.f.Sync()
	}
	w.err = errors.Join(err, w.f.Close())
	return w.err
}
