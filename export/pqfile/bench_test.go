package pqfile_test

import (
	"github.com/cq-source-x/cq-source-x/test/synctest"
	"testing"

	"github.com/cq-source-x/cq-source-x/export/pqfile"
)

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// BenchmarkWriteBookmarks converts and writes the plugin's x_bookmarks
// records for 100,000 simulated posts into memory, as the exporter does.
// The comparison with parquet-go and the codecs is in pqbench (a separate
// module); docs/parquet.md has the figures.
func BenchmarkWriteBookmarks(b *testing.B) {
	s := synctest.Table(b, 100_000, "x_bookmarks", nil)
	conv, err := pqfile.NewConverter(s.Table, syncTime, "x", nil)
	if err != nil {
		b.Fatal(err)
	}
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
}
