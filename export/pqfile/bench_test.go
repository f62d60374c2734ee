package pqfile_test

import (
	"testing"

	"github.com/cq-source-x/cq-source-x/export/pqfile"
	"github.com/cq-source-x/cq-source-x/test/synctest"
)

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkWriteBookmarks converts and writes the x_bookmarks records of
// 100,000 simulated posts into memory, as the exporter does: records of
// 8192 rows from the direct record builder. The sub-benchmarks compare
// codecs; "snappy" is what the exporter writes by default. The comparison with
// parquet-go is in pqbench (a separate module); docs/parquet.md has the
// figures.
func BenchmarkWriteBookmarks(b *testing.B) {
	s := synctest.Sync(b, 100_000, synctest.Options{Direct: true})["x_bookmarks"]
	conv, err := pqfile.NewConverter(s.Table, syncTime, "x", nil)
	if err != nil {
		b.Fatal(err)
	}
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
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var size int64
			for b.Loop() {
				var cw countingWriter
				w, err := pqfile.NewWriter(&cw, conv.Schema(), pqfile.Options{Codec: c.codec, CompressionLevel: c.level})
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
}
