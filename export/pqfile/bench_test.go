package pqfile_test

import (
	"testing"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/cq-source-x/cq-source-x/export/pqfile"
	"github.com/cq-source-x/cq-source-x/test/synctest"
)

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkWriteBookmarks converts and writes the x_bookmarks records of
// 100,000 simulated posts into memory, as the exporter does: records of
// 8192 rows from the direct record builder. The sub-benchmarks compare
// codecs; "zstd-1" is what the exporter ships. The comparison with
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
		codec compress.Compression
		level int
	}{
		{"zstd-1", compress.Codecs.Zstd, 1},
		{"snappy", compress.Codecs.Snappy, 0},
		{"lz4_raw", compress.Codecs.Lz4Raw, 0},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			var size int64
			for b.Loop() {
				var cw countingWriter
				w, err := pqfile.NewWriter(&cw, conv.Schema(), pqfile.Options{Compression: c.codec, CompressionLevel: c.level})
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
