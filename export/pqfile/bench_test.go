package pqfile_test

import (
	"testing"

	"github.com/cq-source-x/cq-source-x/export/pqfile"
	"github.com/cq-source-x/cq-source-x/test/synctest"
)

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkWriteBookmarks writes the x_bookmarks rows of 100,000 simulated
// posts into memory. The exporter's path is "columns": Columns of 4,096
// rows (built once, before timing) encoded by the Writer; its
// sub-benchmarks compare codecs, "snappy" being the default. "records" is
// the same file written from the SDK's records, converted (the path of the
// other tables). The comparison with parquet-go is in pqbench (a separate
// module); docs/parquet.md has the figures.
func BenchmarkWriteBookmarks(b *testing.B) {
	s := synctest.Sync(b, 100_000, synctest.Options{})["x_bookmarks"]
	conv, err := pqfile.NewConverter(s.Table, syncTime, "x", nil)
	if err != nil {
		b.Fatal(err)
	}
	var batches []*pqfile.Columns
	c, err := pqfile.NewColumns(s.Table)
	if err != nil {
		b.Fatal(err)
	}
	for _, rec := range s.Records {
		appendRecord(b, c, rec)
		if c.Len() >= pqfile.DefaultBatchRows {
			batches = append(batches, c)
			if c, err = pqfile.NewColumns(s.Table); err != nil {
				b.Fatal(err)
			}
		}
	}
	batches = append(batches, c)
	for _, c := range []struct {
		name  string
		codec string
		level int
	}{
		{"snappy", "snappy", 0},
		{"zstd-1", "zstd", 1},
		{"lz4_raw", "lz4_raw", 0},
		{"none", "none", 0},
	} {
		b.Run("columns/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			var size int64
			for b.Loop() {
				var cw countingWriter
				w, err := pqfile.NewColumnsWriter(&cw, conv, pqfile.Options{Codec: c.codec, CompressionLevel: c.level})
				if err != nil {
					b.Fatal(err)
				}
				for _, batch := range batches {
					if err := w.WriteColumns(batch); err != nil {
						b.Fatal(err)
					}
				}
				if err := w.Close(); err != nil {
					b.Fatal(err)
				}
				size = cw.n
			}
			b.ReportMetric(float64(s.Rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			b.ReportMetric(float64(size), "file-bytes")
		})
	}
	b.Run("records/snappy", func(b *testing.B) {
		b.ReportAllocs()
		var size int64
		for b.Loop() {
			var cw countingWriter
			w, err := pqfile.NewWriter(&cw, conv.Schema(), pqfile.Options{})
			if err != nil {
				b.Fatal(err)
			}
			for _, r := range s.Records {
				out, err := conv.Convert(r)
				if err != nil {
					b.Fatal(err)
				}
				if err := w.Write(out); err != nil {
					b.Fatal(err)
				}
				out.Release()
			}
			if err := w.Close(); err != nil {
				b.Fatal(err)
			}
			size = cw.n
		}
		b.ReportMetric(float64(s.Rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
		b.ReportMetric(float64(size), "file-bytes")
	})
}
