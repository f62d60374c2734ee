package pqbench

import (
	"bytes"
	"fmt"
	"github.com/cq-source-x/cq-source-x/test/synctest"
	"io"
	"reflect"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/cq-source-x/cq-source-x/export/pqfile"
	"github.com/parquet-go/parquet-go"
	pgcompress "github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/compress/zstd"
)

const benchPosts = 100_000

var (
	once    sync.Once
	data    *synctest.Synced
	convOut []arrow.RecordBatch // data converted once, as the exporter writes it
	conv    *pqfile.Converter
)

var syncTime = time.Date(2026, 11, 22, 10, 15, 0, 123456000, time.UTC)

// records returns the plugin's x_bookmarks records for benchPosts posts,
// synced once per process, and the same records converted.
func records(tb testing.TB) (*synctest.Synced, []arrow.RecordBatch, *pqfile.Converter) {
	once.Do(func() {
		data = synctest.Table(tb, benchPosts, "x_bookmarks", nil)
		var err error
		conv, err = pqfile.NewConverter(data.Table, syncTime, "x", nil)
		if err != nil {
			tb.Fatal(err)
		}
		for _, r := range data.Records {
			out, err := conv.Convert(r)
			if err != nil {
				tb.Fatal(err)
			}
			convOut = append(convOut, out)
		}
	})
	if data == nil {
		tb.Fatal("records failed earlier")
	}
	return data, convOut, conv
}

type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) { c.n += int64(len(p)); return len(p), nil }

// --- pqarrow (kept: export/pqfile) ---

func writePQArrow(w io.Writer, conv *pqfile.Converter, recs []arrow.RecordBatch, codec string, convert bool, raw []arrow.RecordBatch) error {
	c, level := pqCodec(codec)
	pw, err := pqfile.NewWriter(w, conv.Schema(), pqfile.Options{Compression: c, CompressionLevel: level})
	if err != nil {
		return err
	}
	if convert {
		for _, r := range raw {
			out, err := conv.Convert(r)
			if err != nil {
				return err
			}
			if err := pw.Write(out); err != nil {
				return err
			}
			out.Release()
		}
	} else {
		for _, r := range recs {
			if err := pw.Write(r); err != nil {
				return err
			}
		}
	}
	return pw.Close()
}

// --- parquet-go (measured, not kept) ---

type pgKind int

const (
	pgString pgKind = iota
	pgTimestamp
	pgBool
	pgInt64
	pgFloat64
	pgStringList
)

type pgColumn struct {
	arrowIndex int
	kind       pgKind
	optional   bool
}

// pgSchema maps an Arrow schema to a parquet-go schema. parquet.Group is a
// map, so parquet-go orders the columns by name; leaf i of the Parquet
// schema is the i-th field name in sorted order.
func pgSchema(sc *arrow.Schema) (*parquet.Schema, []pgColumn, error) {
	g := parquet.Group{}
	byName := map[string]pgColumn{}
	for i, f := range sc.Fields() {
		var n parquet.Node
		var k pgKind
		switch f.Type.ID() {
		case arrow.STRING:
			n, k = parquet.String(), pgString
		case arrow.TIMESTAMP:
			n, k = parquet.Timestamp(parquet.Microsecond), pgTimestamp
		case arrow.BOOL:
			n, k = parquet.Leaf(parquet.BooleanType), pgBool
		case arrow.INT64:
			n, k = parquet.Int(64), pgInt64
		case arrow.FLOAT64:
			n, k = parquet.Leaf(parquet.DoubleType), pgFloat64
		case arrow.LIST:
			n, k = parquet.List(parquet.Optional(parquet.String())), pgStringList
		default:
			return nil, nil, fmt.Errorf("type %s", f.Type)
		}
		if f.Nullable {
			n = parquet.Optional(n)
		}
		g[f.Name] = n
		byName[f.Name] = pgColumn{arrowIndex: i, kind: k, optional: f.Nullable}
	}
	names := make([]string, 0, len(byName))
	for name := range byName {
		names = append(names, name)
	}
	sort.Strings(names)
	cols := make([]pgColumn, len(names))
	for i, name := range names {
		cols[i] = byName[name]
	}
	return parquet.NewSchema("x_bookmarks", g), cols, nil
}

func strBytes(a *array.String, i int) []byte {
	off := a.ValueOffsets()
	return a.ValueBytes()[off[i]-off[0] : off[i+1]-off[0]]
}

// pgRows turns one record into parquet-go rows.
func pgRows(rec arrow.RecordBatch, cols []pgColumn, rows []parquet.Row) []parquet.Row {
	n := int(rec.NumRows())
	rows = rows[:0]
	for r := 0; r < n; r++ {
		row := make(parquet.Row, 0, len(cols)+2)
		for ci, c := range cols {
			a := rec.Column(c.arrowIndex)
			def := 0
			if c.optional {
				def = 1
			}
			if a.IsNull(r) {
				row = append(row, parquet.Value{}.Level(0, 0, ci))
				continue
			}
			switch c.kind {
			case pgString:
				row = append(row, parquet.ByteArrayValue(strBytes(a.(*array.String), r)).Level(0, def, ci))
			case pgTimestamp:
				row = append(row, parquet.Int64Value(int64(a.(*array.Timestamp).Value(r))).Level(0, def, ci))
			case pgBool:
				row = append(row, parquet.BooleanValue(a.(*array.Boolean).Value(r)).Level(0, def, ci))
			case pgInt64:
				row = append(row, parquet.Int64Value(a.(*array.Int64).Value(r)).Level(0, def, ci))
			case pgFloat64:
				row = append(row, parquet.DoubleValue(a.(*array.Float64).Value(r)).Level(0, def, ci))
			case pgStringList:
				l := a.(*array.List)
				start, end := l.ValueOffsets(r)
				if start == end {
					row = append(row, parquet.Value{}.Level(0, def, ci)) // empty list
					continue
				}
				elems := l.ListValues().(*array.String)
				for j := start; j < end; j++ {
					rep := 1
					if j == start {
						rep = 0
					}
					if elems.IsNull(int(j)) {
						row = append(row, parquet.Value{}.Level(rep, def+1, ci))
					} else {
						row = append(row, parquet.ByteArrayValue(strBytes(elems, int(j))).Level(rep, def+2, ci))
					}
				}
			}
		}
		rows = append(rows, row)
	}
	return rows
}

func writeParquetGo(w io.Writer, sc *arrow.Schema, recs []arrow.RecordBatch, codec pgcompress.Codec) error {
	schema, cols, err := pgSchema(sc)
	if err != nil {
		return err
	}
	opts := []parquet.WriterOption{schema, parquet.Compression(codec)}
	md := sc.Metadata()
	for i, k := range md.Keys() {
		opts = append(opts, parquet.KeyValueMetadata(k, md.Values()[i]))
	}
	pw := parquet.NewGenericWriter[any](w, opts...)
	var rows []parquet.Row
	for _, rec := range recs {
		rows = pgRows(rec, cols, rows)
		if _, err := pw.WriteRows(rows); err != nil {
			return err
		}
	}
	return pw.Close()
}

// --- round trips ---

// expected lists every cell of the original records, row-major, with the
// two internal columns the converter adds in front.
func expected(tb testing.TB, s *synctest.Synced) [][]any {
	ts, _ := arrow.TimestampFromTime(syncTime, arrow.Microsecond)
	var out [][]any
	for _, r := range s.Records {
		for i := 0; i < int(r.NumRows()); i++ {
			row := []any{int64(ts), "x"}
			for c := 0; c < int(r.NumCols()); c++ {
				row = append(row, synctest.Cell(tb, r.Column(c), i))
			}
			out = append(out, row)
		}
	}
	return out
}

func readPQArrow(tb testing.TB, b []byte) [][]any {
	pr, err := file.NewParquetReader(bytes.NewReader(b))
	if err != nil {
		tb.Fatal(err)
	}
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 8192}, memory.DefaultAllocator)
	if err != nil {
		tb.Fatal(err)
	}
	tbl, err := fr.ReadTable(tb.Context())
	if err != nil {
		tb.Fatal(err)
	}
	defer tbl.Release()
	tr := array.NewTableReader(tbl, 8192)
	defer tr.Release()
	var out [][]any
	for tr.Next() {
		rec := tr.RecordBatch()
		for i := 0; i < int(rec.NumRows()); i++ {
			row := make([]any, rec.NumCols())
			for c := range row {
				row[c] = synctest.Cell(tb, rec.Column(c), i)
			}
			out = append(out, row)
		}
	}
	return out
}

func readParquetGo(tb testing.TB, b []byte, sc *arrow.Schema) [][]any {
	f, err := parquet.OpenFile(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		tb.Fatal(err)
	}
	_, cols, err := pgSchema(sc)
	if err != nil {
		tb.Fatal(err)
	}
	var out [][]any
	for _, rg := range f.RowGroups() {
		rows := rg.Rows()
		buf := make([]parquet.Row, 1024)
		for {
			n, err := rows.ReadRows(buf)
			for _, pr := range buf[:n] {
				row := make([]any, len(cols))
				for _, v := range pr {
					c := cols[v.Column()]
					ai := c.arrowIndex
					if c.kind == pgStringList {
						if row[ai] == nil && v.DefinitionLevel() >= 1 {
							row[ai] = []string{}
						}
						if v.DefinitionLevel() == 3 {
							row[ai] = append(row[ai].([]string), string(v.ByteArray()))
						}
						continue
					}
					if v.IsNull() {
						continue
					}
					switch c.kind {
					case pgString:
						row[ai] = string(v.ByteArray())
					case pgTimestamp, pgInt64:
						row[ai] = v.Int64()
					case pgBool:
						row[ai] = v.Boolean()
					case pgFloat64:
						row[ai] = v.Double()
					}
				}
				out = append(out, row)
			}
			if err == io.EOF {
				break
			}
			if err != nil {
				tb.Fatal(err)
			}
		}
		rows.Close()
	}
	return out
}

func compareRows(tb testing.TB, lib string, want, got [][]any) {
	tb.Helper()
	if len(want) != len(got) {
		tb.Fatalf("%s: %d rows read back, want %d", lib, len(got), len(want))
	}
	bad := 0
	for i := range want {
		if !reflect.DeepEqual(want[i], got[i]) {
			bad++
			if bad <= 3 {
				for c := range want[i] {
					if !reflect.DeepEqual(want[i][c], got[i][c]) {
						tb.Errorf("%s: row %d column %d: wrote %#v, read %#v", lib, i, c, want[i][c], got[i][c])
					}
				}
			}
		}
	}
	if bad > 0 {
		tb.Fatalf("%s: %d of %d rows differ", lib, bad, len(want))
	}
}

// TestRoundTrip writes the 100k records with each library and codec, reads
// them back with the same library, and compares every value.
func TestRoundTrip(t *testing.T) {
	s, recs, conv := records(t)
	want := expected(t, s)
	for _, codec := range codecs {
		var buf bytes.Buffer
		if err := writePQArrow(&buf, conv, recs, codec, false, nil); err != nil {
			t.Fatal(err)
		}
		compareRows(t, "pqarrow/"+codec, want, readPQArrow(t, buf.Bytes()))
		t.Logf("pqarrow/%s: %d rows, %d bytes: every value read back equal", codec, len(want), buf.Len())
		buf.Reset()
		if err := writeParquetGo(&buf, conv.Schema(), recs, pgCodec(codec)); err != nil {
			t.Fatal(err)
		}
		compareRows(t, "parquet-go/"+codec, want, readParquetGo(t, buf.Bytes(), conv.Schema()))
		t.Logf("parquet-go/%s: %d rows, %d bytes: every value read back equal", codec, len(want), buf.Len())
	}
}

// codecs: zstd at its default level (3), zstd at level 1, snappy.
var codecs = []string{"zstd", "zstd1", "snappy"}

func pqCodec(name string) (compress.Compression, int) {
	switch name {
	case "snappy":
		return compress.Codecs.Snappy, 0
	case "zstd1":
		return compress.Codecs.Zstd, 1
	}
	return compress.Codecs.Zstd, 0
}

func pgCodec(name string) pgcompress.Codec {
	switch name {
	case "snappy":
		return &parquet.Snappy
	case "zstd1":
		return &zstd.Codec{Level: zstd.SpeedFastest}
	}
	return &parquet.Zstd
}

// BenchmarkWrite writes the 100k records once per iteration into memory
// (no disk I/O): rows/s and the file size per library and codec. The
// pqarrow+convert case includes the SDK-to-Parquet conversion the exporter
// does (JSON and UUID columns); the others start from converted records.
// pqarrow-per-50-row-record writes each record as the SDK sends it,
// without gathering 8192 rows first (BatchRows 1).
func BenchmarkWrite(b *testing.B) {
	s, recs, conv := records(b)
	for _, codec := range codecs {
		b.Run("lib=pqarrow/codec="+codec, func(b *testing.B) {
			benchWrite(b, s.Rows, func(w io.Writer) error { return writePQArrow(w, conv, recs, codec, false, nil) })
		})
		b.Run("lib=pqarrow+convert/codec="+codec, func(b *testing.B) {
			benchWrite(b, s.Rows, func(w io.Writer) error { return writePQArrow(w, conv, nil, codec, true, s.Records) })
		})
		b.Run("lib=pqarrow-per-50-row-record/codec="+codec, func(b *testing.B) {
			if codec != "zstd" {
				b.Skip("zstd only")
			}
			benchWrite(b, s.Rows, func(w io.Writer) error {
				pw, err := pqfile.NewWriter(w, conv.Schema(), pqfile.Options{BatchRows: 1})
				if err != nil {
					return err
				}
				for _, r := range recs {
					if err := pw.Write(r); err != nil {
						return err
					}
				}
				return pw.Close()
			})
		})
		b.Run("lib=parquet-go/codec="+codec, func(b *testing.B) {
			benchWrite(b, s.Rows, func(w io.Writer) error { return writeParquetGo(w, conv.Schema(), recs, pgCodec(codec)) })
		})
	}
}

// benchWrite reports rows/s (wall time), the file size, and the CPU time
// per write (user+system, all threads: GC and compression included), which
// a busy machine disturbs less than wall time.
func benchWrite(b *testing.B, rows int64, write func(io.Writer) error) {
	b.ReportAllocs()
	var size int64
	cpu0 := cpuTime()
	for b.Loop() {
		var cw countingWriter
		if err := write(&cw); err != nil {
			b.Fatal(err)
		}
		size = cw.n
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(rows)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
	b.ReportMetric(float64(size), "file-bytes")
	b.ReportMetric(cpu.Seconds()*1000/float64(b.N), "cpu-ms/op")
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
