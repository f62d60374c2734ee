package pqfile

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Options tune a Writer. The zero value is what the exporter uses.
type Options struct {
	// Compression codec; zero (uncompressed) means DefaultCompression.
	Compression compress.Compression
	// RowGroupBytes starts a new row group once the current one holds this
	// many compressed bytes; 0 means DefaultRowGroupBytes.
	RowGroupBytes int64
	// CreatedBy is written as the file's created_by.
	CreatedBy string
	// BatchRows is how many rows are gathered into one record before it is
	// written; 0 means DefaultBatchRows. The SDK sends records of 50 rows,
	// and pqarrow's cost per record written dominates at that size.
	BatchRows int
	// CompressionLevel for codecs that have levels; 0 is the codec's default.
	CompressionLevel int
}

// DefaultBatchRows is the size of the records written (see Options).
const DefaultBatchRows = 8192

// DefaultRowGroupBytes bounds a row group (and so the memory it is buffered
// in) to about 64 MiB of compressed data.
const DefaultRowGroupBytes = 64 << 20

// DefaultCompression is zstd: files about a third smaller than snappy's for
// the same write speed on this data (docs/parquet.md).
var DefaultCompression = compress.Codecs.Zstd

// Writer writes one Parquet file.
type Writer struct {
	w         io.Writer
	fw        *pqarrow.FileWriter
	sc        *arrow.Schema
	batch     int
	pending   []arrow.RecordBatch
	pendRows  int
	rowGroup  int64
	rows      int64
	closed    bool
	closeFile func() error
}

// NewWriter writes records of schema sc to w, and sc itself as the stored
// Arrow schema (ARROW:schema). Close closes w if it is an io.Closer.
func NewWriter(w io.Writer, sc *arrow.Schema, o Options) (*Writer, error) {
	codec := o.Compression
	if codec == compress.Codecs.Uncompressed {
		codec = DefaultCompression
	}
	props := []parquet.WriterProperty{
		parquet.WithCompression(codec),
		parquet.WithDictionaryDefault(true),
		parquet.WithStats(true),
	}
	if o.CompressionLevel != 0 {
		props = append(props, parquet.WithCompressionLevel(o.CompressionLevel))
	}
	if o.CreatedBy != "" {
		props = append(props, parquet.WithCreatedBy(o.CreatedBy))
	}
	fw, err := pqarrow.NewFileWriter(sc, w, parquet.NewWriterProperties(props...),
		pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
	if err != nil {
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	rg := o.RowGroupBytes
	if rg <= 0 {
		rg = DefaultRowGroupBytes
	}
	batch := o.BatchRows
	if batch <= 0 {
		batch = DefaultBatchRows
	}
	return &Writer{w: w, fw: fw, sc: sc, batch: batch, rowGroup: rg}, nil
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

// flush writes the gathered records as one.
func (w *Writer) flush() error {
	if len(w.pending) == 0 {
		return nil
	}
	defer func() {
		for _, r := range w.pending {
			r.Release()
		}
		w.pending, w.pendRows = w.pending[:0], 0
	}()
	rec := w.pending[0]
	if len(w.pending) > 1 {
		cols := make([]arrow.Array, w.sc.NumFields())
		defer func() {
			for _, c := range cols {
				if c != nil {
					c.Release()
				}
			}
		}()
		parts := make([]arrow.Array, len(w.pending))
		for i := range cols {
			for j, r := range w.pending {
				parts[j] = r.Column(i)
			}
			c, err := array.Concatenate(parts, memory.DefaultAllocator)
			if err != nil {
				return err
			}
			cols[i] = c
		}
		rec = array.NewRecordBatch(w.sc, cols, int64(w.pendRows))
		defer rec.Release()
	}
	if w.fw.RowGroupTotalCompressedBytes() >= w.rowGroup {
		if err := w.fw.NewBufferedRowGroupChecked(); err != nil {
			return err
		}
	}
	return w.fw.WriteBuffered(rec)
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
	err = errors.Join(err, w.fw.Close())
	if w.closeFile != nil {
		err = errors.Join(err, w.closeFile())
	}
	return err
}
