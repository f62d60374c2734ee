package pqfile

import (
	"context"
	"io/fs"
	"os"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
)

// readBatchRows is the number of rows in the batches ReadRecords reads: a
// few thousand rows of x_bookmarks (a post's JSON each) stay a few MB.
const readBatchRows = 4096

// ReadRecords calls batch with each record batch of the Parquet file at
// path, in row order. columns names the top-level columns to read (nil
// reads them all); the batches hold them in the file's order, and a named
// column the file lacks is absent from them. A batch is released once
// batch returns: batch retains what it keeps. Every error, batch's own
// too, is an *fs.PathError naming the file.
func ReadRecords(ctx context.Context, path string, columns []string, batch func(arrow.RecordBatch) error) error {
	f, err := os.Open(path) // not file.OpenParquetFile, which leaves a file that is not Parquet open
	if err != nil {
		return err
	}
	defer f.Close()
	return ReadFile(ctx, f, columns, batch)
}

// ReadFile is ReadRecords of an open file (one opened in a directory held
// open, say, which a rename of the directory does not change); its errors
// name the file by f.Name().
func ReadFile(ctx context.Context, f *os.File, columns []string, batch func(arrow.RecordBatch) error) error {
	return withReader(f, func(fr *pqarrow.FileReader) error {
		var leaves []int
		if columns != nil {
			leaves = leavesOf(fr.ParquetReader().MetaData().Schema, columns)
			if len(leaves) == 0 {
				return noColumns(fr.ParquetReader().NumRows(), batch)
			}
		}
		rr, err := fr.GetRecordReader(ctx, leaves, nil)
		if err != nil {
			return err
		}
		defer rr.Release()
		for rr.Next() {
			if err := batch(rr.RecordBatch()); err != nil {
				return err
			}
		}
		return rr.Err()
	})
}

// ReadSchema returns the Arrow schema (with the file's metadata) and the
// row count of the Parquet file at path, from its footer; its errors are
// ReadRecords's.
func ReadSchema(path string) (sc *arrow.Schema, rows int64, err error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	err = withReader(f, func(fr *pqarrow.FileReader) error {
		rows = fr.ParquetReader().NumRows()
		sc, err = fr.Schema()
		return err
	})
	return sc, rows, err
}

// withReader calls read with a reader of the Parquet file f, naming the
// file in any error.
func withReader(f *os.File, read func(*pqarrow.FileReader) error) error {
	pr, err := file.NewParquetReader(f)
	if err == nil {
		var fr *pqarrow.FileReader
		fr, err = pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: readBatchRows, Parallel: true}, memory.DefaultAllocator)
		if err == nil {
			err = read(fr)
		}
	}
	if err != nil {
		return &fs.PathError{Op: "read", Path: f.Name(), Err: err}
	}
	return nil
}

func leavesOf(sc *pqschema.Schema, columns []string) []int {
	var leaves []int
	for i := range sc.NumColumns() {
		if slices.Contains(columns, sc.ColumnRoot(i).Name()) {
			leaves = append(leaves, i)
		}
	}
	return leaves
}

// noColumns reads a file that has none of the columns asked for: one batch
// of no columns counts its rows.
func noColumns(rows int64, batch func(arrow.RecordBatch) error) error {
	if rows == 0 {
		return nil
	}
	rec := array.NewRecordBatch(arrow.NewSchema(nil, nil), nil, rows)
	defer rec.Release()
	return batch(rec)
}
