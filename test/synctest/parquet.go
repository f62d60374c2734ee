package synctest

import (
	"context"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
)

// ReadParquet reads a whole Parquet file back with pqarrow: its Arrow
// schema, its records, and the file's reader for its metadata (closed when
// the test ends).
func ReadParquet(tb testing.TB, path string) (*arrow.Schema, []arrow.RecordBatch, *file.Reader) {
	tb.Helper()
	var recs []arrow.RecordBatch
	err := pqfile.ReadRecords(context.Background(), path, nil, func(rec arrow.RecordBatch) error {
		rec.Retain()
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	sc, _, err := pqfile.ReadSchema(path)
	if err != nil {
		tb.Fatal(err)
	}
	pr, err := file.OpenParquetFile(path, false)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { pr.Close() })
	return sc, recs, pr
}
