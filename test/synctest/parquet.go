package synctest

import (
	"context"
	"os"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// ReadParquet reads a whole Parquet file back with pqarrow: its Arrow
// schema, its records, and the file's reader for its metadata (closed when
// the test ends).
func ReadParquet(tb testing.TB, path string) (*arrow.Schema, []arrow.RecordBatch, *file.Reader) {
	tb.Helper()
	f, err := os.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { f.Close() })
	pr, err := file.NewParquetReader(f)
	if err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 4096}, memory.DefaultAllocator)
	if err != nil {
		tb.Fatal(err)
	}
	rr, err := fr.GetRecordReader(context.Background(), nil, nil)
	if err != nil {
		tb.Fatal(err)
	}
	defer rr.Release()
	var recs []arrow.RecordBatch
	for rr.Next() {
		rec := rr.RecordBatch()
		rec.Retain()
		recs = append(recs, rec)
	}
	if err := rr.Err(); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
	sc, err := fr.Schema()
	if err != nil {
		tb.Fatal(err)
	}
	return sc, recs, pr
}
