package pqfile_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/types"
	"github.com/google/uuid"

	"github.com/cq-source-x/cq-source-x/export/pqfile"
	"github.com/cq-source-x/cq-source-x/test/synctest"
)

// every kind of column Columns writes, required and nullable
var kindsTable = &schema.Table{
	Name: "kinds",
	Columns: schema.ColumnList{
		schema.CqIDColumn,
		schema.CqParentIDColumn,
		{Name: "key", Type: arrow.BinaryTypes.String, PrimaryKey: true, NotNull: true},
		{Name: "text", Type: arrow.BinaryTypes.String, Description: "some text"},
		{Name: "seen", Type: arrow.FixedWidthTypes.Timestamp_us, NotNull: true},
		{Name: "created", Type: arrow.FixedWidthTypes.Timestamp_us},
		{Name: "count", Type: arrow.PrimitiveTypes.Int64},
		{Name: "score", Type: arrow.PrimitiveTypes.Float64},
		{Name: "flag", Type: arrow.FixedWidthTypes.Boolean},
		{Name: "ids", Type: arrow.ListOf(arrow.BinaryTypes.String)},
		{Name: "doc", Type: types.ExtensionTypes.JSON},
	},
}

// kindsRow is one row of kindsTable; nil pointers and empty strings, lists
// and documents are nulls.
type kindsRow struct {
	id      uuid.UUID
	key     string
	text    string
	seen    time.Time
	created *time.Time
	count   *int64
	score   *float64
	flag    *bool
	ids     []string
	doc     []byte
}

func kindsRows(n int, seed uint64) []kindsRow {
	r := rand.New(rand.NewPCG(seed, 1))
	words := []string{"plain", "ünïcödé", "emoji 🎉", "quote \" and \\ backslash", "", "a longer piece of text that goes on for a while"}
	rows := make([]kindsRow, n)
	for i := range rows {
		row := kindsRow{
			id:   uuid.New(),
			key:  fmt.Sprintf("k%07d", i),
			text: words[r.IntN(len(words))],
			seen: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(1e15))),
		}
		if r.IntN(3) > 0 {
			t := time.Date(2006, 3, 21, 0, 0, 0, 0, time.UTC).Add(time.Duration(r.Int64N(6e17)))
			row.created = &t
		}
		if r.IntN(4) > 0 {
			v := r.Int64N(1<<40) - 1<<39
			row.count = &v
		}
		if r.IntN(4) > 0 {
			v := r.NormFloat64() * 1e3
			row.score = &v
		}
		if r.IntN(3) > 0 {
			v := r.IntN(2) == 0
			row.flag = &v
		}
		for range r.IntN(4) {
			row.ids = append(row.ids, fmt.Sprint(r.Uint64()))
		}
		if r.IntN(3) > 0 {
			row.doc = fmt.Appendf(nil, `{"n":%d,"s":%q}`, r.IntN(1000), words[r.IntN(len(words))])
		}
		rows[i] = row
	}
	return rows
}

// kindsRecord builds the rows as the SDK's record of kindsTable.
func kindsRecord(rows []kindsRow) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, kindsTable.ToArrowSchema())
	defer b.Release()
	for _, row := range rows {
		b.Field(0).(*types.UUIDBuilder).Append(row.id)
		b.Field(1).AppendNull()
		b.Field(2).(*array.StringBuilder).Append(row.key)
		if row.text != "" {
			b.Field(3).(*array.StringBuilder).Append(row.text)
		} else {
			b.Field(3).AppendNull()
		}
		b.Field(4).(*array.TimestampBuilder).AppendTime(row.seen)
		if row.created != nil {
			b.Field(5).(*array.TimestampBuilder).AppendTime(*row.created)
		} else {
			b.Field(5).AppendNull()
		}
		if row.count != nil {
			b.Field(6).(*array.Int64Builder).Append(*row.count)
		} else {
			b.Field(6).AppendNull()
		}
		if row.score != nil {
			b.Field(7).(*array.Float64Builder).Append(*row.score)
		} else {
			b.Field(7).AppendNull()
		}
		if row.flag != nil {
			b.Field(8).(*array.BooleanBuilder).Append(*row.flag)
		} else {
			b.Field(8).AppendNull()
		}
		if row.ids != nil {
			lb := b.Field(9).(*array.ListBuilder)
			lb.Append(true)
			for _, s := range row.ids {
				lb.ValueBuilder().(*array.StringBuilder).Append(s)
			}
		} else {
			b.Field(9).AppendNull()
		}
		if row.doc != nil {
			b.Field(10).(*types.JSONBuilder).Builder.(*array.BinaryBuilder).Append(row.doc)
		} else {
			b.Field(10).AppendNull()
		}
	}
	return b.NewRecordBatch()
}

// appendKinds appends the rows to Columns of kindsTable.
func appendKinds(c *pqfile.Columns, rows []kindsRow) {
	for _, row := range rows {
		c.Column(0).AppendUUID(row.id)
		c.Column(1).AppendNull()
		c.Column(2).AppendString(row.key)
		if row.text != "" {
			c.Column(3).AppendString(row.text)
		} else {
			c.Column(3).AppendNull()
		}
		c.Column(4).AppendTime(row.seen)
		if row.created != nil {
			c.Column(5).AppendTime(*row.created)
		} else {
			c.Column(5).AppendNull()
		}
		if row.count != nil {
			c.Column(6).AppendInt64(*row.count)
		} else {
			c.Column(6).AppendNull()
		}
		if row.score != nil {
			c.Column(7).AppendFloat64(*row.score)
		} else {
			c.Column(7).AppendNull()
		}
		if row.flag != nil {
			c.Column(8).AppendBool(*row.flag)
		} else {
			c.Column(8).AppendNull()
		}
		if row.ids != nil {
			c.Column(9).AppendStrings(row.ids)
		} else {
			c.Column(9).AppendNull()
		}
		if row.doc != nil {
			c.Column(10).AppendBytes(row.doc)
		} else {
			c.Column(10).AppendNull()
		}
	}
}

var kindsOptions = pqfile.Options{CreatedBy: "test", BatchRows: 1000, RowGroupRows: 3000}

func newKindsConverter(t *testing.T) *pqfile.Converter {
	t.Helper()
	conv, err := pqfile.NewConverter(kindsTable, syncTime, "x", map[string]string{pqfile.MetadataPluginVersion: "v9.9.9"})
	if err != nil {
		t.Fatal(err)
	}
	return conv
}

// writeKindsRecords writes batches of rows as converted records.
func writeKindsRecords(t *testing.T, path string, batches [][]kindsRow) {
	t.Helper()
	writeKindsRecordsWith(t, path, batches, kindsOptions)
}

func writeKindsRecordsWith(t *testing.T, path string, batches [][]kindsRow, o pqfile.Options) {
	t.Helper()
	conv := newKindsConverter(t)
	w, err := pqfile.Create(path, conv.Schema(), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, rows := range batches {
		rec := kindsRecord(rows)
		out, err := conv.Convert(rec)
		rec.Release()
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Write(out); err != nil {
			t.Fatal(err)
		}
		out.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeKindsColumns writes batches of rows from Columns.
func writeKindsColumns(t *testing.T, path string, batches [][]kindsRow) {
	t.Helper()
	writeKindsColumnsWith(t, path, batches, kindsOptions)
}

func writeKindsColumnsWith(t *testing.T, path string, batches [][]kindsRow, o pqfile.Options) {
	t.Helper()
	w, err := pqfile.CreateColumns(path, newKindsConverter(t), o)
	if err != nil {
		t.Fatal(err)
	}
	for _, rows := range batches {
		c, err := w.NewColumns()
		if err != nil {
			t.Fatal(err)
		}
		appendKinds(c, rows)
		if err := w.WriteColumns(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// sameFile fails the test unless the files at got and want are the same
// bytes.
func sameFile(t *testing.T, got, want string) {
	t.Helper()
	w, err := os.ReadFile(want)
	if err != nil {
		t.Fatal(err)
	}
	g, err := os.ReadFile(got)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(g, w) {
		i := 0
		for i < min(len(g), len(w)) && g[i] == w[i] {
			i++
		}
		t.Fatalf("files differ from byte %d (%s %d bytes, %s %d)", i, filepath.Base(got), len(g), filepath.Base(want), len(w))
	}
}

func batchesOf(rows []kindsRow, size int) [][]kindsRow {
	var out [][]kindsRow
	for len(rows) > 0 {
		n := min(size, len(rows))
		out = append(out, rows[:n])
		rows = rows[n:]
	}
	return out
}

// The file written from Columns is the file pqarrow writes from the same
// rows as converted records, byte for byte: schema, metadata, pages,
// statistics and row groups (several here, and reused Columns).
func TestColumnsWriteTheRecordsFile(t *testing.T) {
	dir := t.TempDir()
	batches := batchesOf(kindsRows(10_000, 7), 1000)
	fromRecords, fromColumns := filepath.Join(dir, "records.parquet"), filepath.Join(dir, "columns.parquet")
	writeKindsRecords(t, fromRecords, batches)
	writeKindsColumns(t, fromColumns, batches)
	sameFile(t, fromColumns, fromRecords)
	_, recs, _ := synctest.ReadParquet(t, fromColumns)
	n := 0
	for _, r := range recs {
		n += int(r.NumRows())
	}
	if n != 10_000 {
		t.Fatalf("read %d rows back", n)
	}
}

// Deleted rows are gone from every column, lists and nulls included: the
// file is the one written without them.
func TestColumnsDeleteRows(t *testing.T) {
	dir := t.TempDir()
	rows := kindsRows(500, 8)
	drop := []int{0, 1, 7, 8, 9, 250, 498, 499}
	var kept []kindsRow
	for i, row := range rows {
		if !containsInt(drop, i) {
			kept = append(kept, row)
		}
	}
	fromKept := filepath.Join(dir, "kept.parquet")
	writeKindsRecords(t, fromKept, [][]kindsRow{kept})

	path := filepath.Join(dir, "deleted.parquet")
	w, err := pqfile.CreateColumns(path, newKindsConverter(t), kindsOptions)
	if err != nil {
		t.Fatal(err)
	}
	c, err := w.NewColumns()
	if err != nil {
		t.Fatal(err)
	}
	appendKinds(c, rows)
	c.Delete(drop)
	if c.Len() != len(kept) {
		t.Fatalf("%d rows after deleting %d of %d", c.Len(), len(drop), len(rows))
	}
	if err := w.WriteColumns(c); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	sameFile(t, path, fromKept)
}

func containsInt(xs []int, x int) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// A value of the wrong kind, a null in a required column, or a column left
// short is refused with the column's name, and nothing is written.
func TestColumnsRefuseWrongValues(t *testing.T) {
	cases := []struct {
		name string
		fill func(c *pqfile.Columns)
		want string
	}{
		{"null in a required column", func(c *pqfile.Columns) { c.Column(2).AppendNull() }, "column key is not nullable"},
		{"integer for text", func(c *pqfile.Columns) { c.Column(3).AppendInt64(1) }, "column text (text/binary) was given an integer"},
		{"text for a list", func(c *pqfile.Columns) { c.Column(9).AppendString("x") }, "column ids (list of text/binary) was given text"},
		{"a column left short", func(c *pqfile.Columns) { c.Column(10).AppendNull() }, "column doc: 2 rows, column _cq_id has 1"},
		{"a time for an integer", func(c *pqfile.Columns) { c.Column(6).AppendTime(time.Now()) }, "column count (int64) was given a time"},
		{"an integer for a time", func(c *pqfile.Columns) { c.Column(4).AppendInt64(1) }, "column seen (timestamp) was given an integer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w, err := pqfile.NewColumnsWriter(&bytes.Buffer{}, newKindsConverter(t), kindsOptions)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			c, err := w.NewColumns()
			if err != nil {
				t.Fatal(err)
			}
			appendKinds(c, kindsRows(1, 9))
			tc.fill(c)
			err = w.WriteColumns(c)
			if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "table kinds") {
				t.Fatalf("got %v, want an error with %q", err, tc.want)
			}
			if w.Rows() != 0 {
				t.Fatalf("%d rows written", w.Rows())
			}
		})
	}
}

// An empty text is a value, not a null: it counts in the column chunk's
// min and max even when a batch holds nothing else (a batch's text buffer
// is then still empty).
func TestColumnsCountEmptyTextInStatistics(t *testing.T) {
	dir := t.TempDir()
	rows := kindsRows(6, 10)
	for i := range rows[:3] {
		rows[i].key = ""
	}
	batches := [][]kindsRow{rows[:3], rows[3:]} // one row group
	fromRecords, fromColumns := filepath.Join(dir, "records.parquet"), filepath.Join(dir, "columns.parquet")
	writeKindsRecords(t, fromRecords, batches)
	writeKindsColumns(t, fromColumns, batches)
	sameFile(t, fromColumns, fromRecords)

	r, err := file.OpenParquetFile(fromColumns, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	chunk, err := r.MetaData().RowGroup(0).ColumnChunk(r.MetaData().Schema.ColumnIndexByName("key"))
	if err != nil {
		t.Fatal(err)
	}
	stats, err := chunk.Statistics()
	if err != nil || stats == nil || !stats.HasMinMax() {
		t.Fatalf("no min and max for key: %v", err)
	}
	if min := stats.(*metadata.ByteArrayStatistics).Min(); len(min) != 0 {
		t.Errorf("key's min is %q; rows 0-2 have \"\"", min)
	}
}

// A list keeps every value however long it is (repetition levels do not
// wrap past 32,767 values).
func TestColumnsWriteLongLists(t *testing.T) {
	dir := t.TempDir()
	rows := kindsRows(3, 11)
	rows[1].ids = make([]string, 40_000)
	for i := range rows[1].ids {
		rows[1].ids[i] = fmt.Sprint(i)
	}
	batches := [][]kindsRow{rows}
	fromRecords, fromColumns := filepath.Join(dir, "records.parquet"), filepath.Join(dir, "columns.parquet")
	writeKindsRecords(t, fromRecords, batches)
	writeKindsColumns(t, fromColumns, batches)
	sameFile(t, fromColumns, fromRecords)
}

// A timestamp column takes times in the unit the file stores (pqarrow
// stores seconds as milliseconds), and reads back as the same instant.
func TestColumnsStoreTimesInTheirColumnsUnit(t *testing.T) {
	units := []arrow.DataType{
		&arrow.TimestampType{Unit: arrow.Second, TimeZone: "UTC"},
		&arrow.TimestampType{Unit: arrow.Millisecond, TimeZone: "UTC"},
		&arrow.TimestampType{Unit: arrow.Microsecond, TimeZone: "UTC"},
		&arrow.TimestampType{Unit: arrow.Nanosecond, TimeZone: "UTC"},
	}
	table := &schema.Table{Name: "times"}
	for _, u := range units {
		table.Columns = append(table.Columns, schema.Column{Name: "at_" + u.(*arrow.TimestampType).Unit.String(), Type: u})
	}
	when := time.Date(2026, 11, 23, 19, 30, 1, 0, time.UTC)
	conv, err := pqfile.NewConverter(table, syncTime, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "times.parquet")
	w, err := pqfile.CreateColumns(path, conv, pqfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c, err := w.NewColumns()
	if err != nil {
		t.Fatal(err)
	}
	for i := range units {
		c.Column(i).AppendTime(when)
	}
	if err := w.WriteColumns(c); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	_, recs, _ := synctest.ReadParquet(t, path)
	if len(recs) != 1 || recs[0].NumRows() != 1 {
		t.Fatalf("read back %d records", len(recs))
	}
	for i, u := range units {
		a := recs[0].Column(i + 2).(*array.Timestamp) // past _cq_sync_time, _cq_source_name
		unit := a.DataType().(*arrow.TimestampType).Unit
		if got := a.Value(0).ToTime(unit); !got.Equal(when) {
			t.Errorf("%s: read back %s, want %s", u, got, when)
		}
	}
}

// Columns refuse the Arrow types they have no Append method for, naming
// the column, rather than store raw integers under a type that means
// something else.
func TestColumnsRefuseTypesTheyCannotWrite(t *testing.T) {
	for _, typ := range []arrow.DataType{arrow.PrimitiveTypes.Uint64, arrow.FixedWidthTypes.Time64us, arrow.ListOf(arrow.PrimitiveTypes.Int64)} {
		table := &schema.Table{Name: "odd", Columns: schema.ColumnList{{Name: "value", Type: typ}}}
		_, err := pqfile.NewColumns(table)
		if err == nil || !strings.Contains(err.Error(), "column value") || !strings.Contains(err.Error(), "not written from Columns") {
			t.Errorf("%s: got %v, want the column refused", typ, err)
		}
	}
}

// A batch whose only values were wrong has no rows, and still gives its
// error.
func TestWriteColumnsReportsAnEmptyBatchsWrongValue(t *testing.T) {
	w, err := pqfile.NewColumnsWriter(&bytes.Buffer{}, newKindsConverter(t), kindsOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	c, err := w.NewColumns()
	if err != nil {
		t.Fatal(err)
	}
	c.Column(0).AppendInt64(1)
	if c.Len() != 0 {
		t.Fatalf("%d rows", c.Len())
	}
	if err := w.WriteColumns(c); err == nil || !strings.Contains(err.Error(), "column _cq_id (text/binary) was given an integer") {
		t.Fatalf("got %v, want the wrong value named", err)
	}
}

// A writer takes the input it was made for.
func TestWritersTakeTheirOwnInput(t *testing.T) {
	conv := newKindsConverter(t)
	cw, err := pqfile.NewColumnsWriter(&bytes.Buffer{}, conv, kindsOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer cw.Close()
	rec := kindsRecord(kindsRows(1, 1))
	defer rec.Release()
	out, err := conv.Convert(rec)
	if err != nil {
		t.Fatal(err)
	}
	defer out.Release()
	if err := cw.Write(out); err == nil || !strings.Contains(err.Error(), "takes Columns") {
		t.Fatalf("records to a Columns writer: %v", err)
	}
	rw, err := pqfile.NewWriter(&bytes.Buffer{}, conv.Schema(), kindsOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer rw.Close()
	if _, err := rw.NewColumns(); err == nil || !strings.Contains(err.Error(), "takes records") {
		t.Fatalf("Columns from a records writer: %v", err)
	}
}

// appendRecord appends the rows of rec, a record of c's table as the SDK
// builds it, to c: each Arrow value by the Append method for its type.
func appendRecord(tb testing.TB, c *pqfile.Columns, rec arrow.RecordBatch) {
	tb.Helper()
	for j, a := range rec.Columns() {
		col := c.Column(j)
		for i := range int(rec.NumRows()) {
			if a.IsNull(i) {
				col.AppendNull()
				continue
			}
			switch a := a.(type) {
			case *array.String:
				col.AppendString(a.Value(i))
			case *array.Timestamp:
				col.AppendTime(a.Value(i).ToTime(arrow.Microsecond))
			case *array.Int64:
				col.AppendInt64(a.Value(i))
			case *array.Float64:
				col.AppendFloat64(a.Value(i))
			case *array.Boolean:
				col.AppendBool(a.Value(i))
			case *array.List:
				start, end := a.ValueOffsets(i)
				values := a.ListValues().(*array.String)
				var v []string
				for k := start; k < end; k++ {
					v = append(v, values.Value(int(k)))
				}
				col.AppendStrings(v)
			case *types.JSONArray:
				col.AppendBytes(a.Storage().(*array.Binary).Value(i))
			case *types.UUIDArray:
				col.AppendUUID([16]byte(a.Storage().(*array.FixedSizeBinary).Value(i)))
			default:
				tb.Fatalf("column %s: no Append for %s", rec.ColumnName(j), a.DataType())
			}
		}
	}
}

// The same on real x_bookmarks rows (every field selection's columns
// filled): the records of a plugin sync, written as records and as Columns,
// give the same file.
func TestColumnsWriteTheRecordsFileOfBookmarks(t *testing.T) {
	dir := t.TempDir()
	s := synctest.Sync(t, 3000, synctest.Options{Spec: map[string]any{"fields": map[string]any{
		"expansions":   []string{"author_id", "attachments.media_keys"},
		"media_fields": []string{"url", "width", "height"},
	}}})["x_bookmarks"]
	if s.Rows != 3000 {
		t.Fatalf("synced %d rows", s.Rows)
	}
	o := pqfile.Options{CreatedBy: "test", BatchRows: 500, RowGroupRows: 1000}
	fromRecords, fromColumns := filepath.Join(dir, "records.parquet"), filepath.Join(dir, "columns.parquet")
	conv, err := pqfile.NewConverter(s.Table, syncTime, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	rw, err := pqfile.Create(fromRecords, conv.Schema(), o)
	if err != nil {
		t.Fatal(err)
	}
	cw, err := pqfile.CreateColumns(fromColumns, conv, o)
	if err != nil {
		t.Fatal(err)
	}
	// Batches of 500 rows for both: the records of the scheduler (50 rows
	// each) are gathered to 500 by the Writer.
	c, _ := cw.NewColumns()
	for _, rec := range s.Records {
		out, err := conv.Convert(rec)
		if err != nil {
			t.Fatal(err)
		}
		if err := rw.Write(out); err != nil {
			t.Fatal(err)
		}
		out.Release()
		appendRecord(t, c, rec)
		if c.Len() >= 500 {
			if err := cw.WriteColumns(c); err != nil {
				t.Fatal(err)
			}
			c, _ = cw.NewColumns()
		}
	}
	if err := cw.WriteColumns(c); err != nil {
		t.Fatal(err)
	}
	if err := errors.Join(rw.Close(), cw.Close()); err != nil {
		t.Fatal(err)
	}
	sameFile(t, fromColumns, fromRecords)
}

// Pages end near their size: the page size is checked every PageBatchValues
// values, and a page ends at the first check past PageBytes. (With
// arrow-go's default of 1,024 values between checks, pages of posts were
// more than twice PageBytes.)
func TestPagesEndAtTheFirstCheckPastPageBytes(t *testing.T) {
	s := synctest.Sync(t, 3000, synctest.Options{})["x_bookmarks"]
	conv, err := pqfile.NewConverter(s.Table, syncTime, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "bookmarks.parquet")
	w, err := pqfile.CreateColumns(path, conv, pqfile.Options{CreatedBy: "test", BatchRows: 3000, RowGroupRows: 3000})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := w.NewColumns()
	var sizes []int // of each post value in the page, in order
	for _, rec := range s.Records {
		appendRecord(t, c, rec)
		posts := rec.Column(s.Table.Columns.Index("post")).(*types.JSONArray).Storage().(*array.Binary)
		for i := range posts.Len() {
			sizes = append(sizes, 4+len(posts.Value(i))) // PLAIN: a 4-byte length, then the bytes
		}
	}
	if err := w.WriteColumns(c); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	r, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	pages, err := r.RowGroup(0).GetColumnPageReader(r.MetaData().Schema.ColumnIndexByName("post"))
	if err != nil {
		t.Fatal(err)
	}
	n, first := 0, 0
	for pages.Next() {
		values := int(pages.Page().NumValues())
		if values > pqfile.PageBatchValues {
			// Before the page's last check, it was still below PageBytes.
			before := 0
			for _, size := range sizes[first : first+values-pqfile.PageBatchValues] {
				before += size
			}
			if before >= pqfile.PageBytes {
				t.Errorf("page %d: %d values, %d bytes; it was %d bytes (over %d) %d values before its end",
					n, values, len(pages.Page().Data()), before, pqfile.PageBytes, pqfile.PageBatchValues)
			}
		}
		first += values
		n++
	}
	if err := pages.Err(); err != nil {
		t.Fatal(err)
	}
	if first != len(sizes) || n < 3 {
		t.Errorf("%d pages of %d values for %d rows: want every row, in 3 pages or more", n, first, len(sizes))
	}
}

// A Writer's new Columns start with room for the largest batch written so
// far, column by column, instead of growing to it value by value.
func TestNewColumnsStartWithRoomForTheBatchesWritten(t *testing.T) {
	w, err := pqfile.NewColumnsWriter(&bytes.Buffer{}, newKindsConverter(t), kindsOptions)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	first, err := w.NewColumns()
	if err != nil {
		t.Fatal(err)
	}
	appendKinds(first, kindsRows(3000, 5))
	text := kindsTable.Columns.Index("text")
	usedData, usedValues := first.Used(text)
	if err := w.WriteColumns(first); err != nil {
		t.Fatal(err)
	}
	// One Columns was written, the only one the Writer can hand out again:
	// of three taken now, two at least are new.
	for range 3 {
		c, err := w.NewColumns()
		if err != nil {
			t.Fatal(err)
		}
		data, values := c.Room(text)
		if data < usedData || values < usedValues || c.Len() != 0 {
			t.Fatalf("new Columns: room for %d bytes and %d values, want %d and %d (rows %d)", data, values, usedData, usedValues, c.Len())
		}
	}
}

// Definition and repetition levels are encoded as arrow-go encodes them,
// byte for byte, whatever their pattern: runs of every length from 1 to 40
// of nulls and values (run-length and bit-packed runs, and the switches
// between them), no nulls, nothing but nulls, lists of 0 to 9 values, in
// batches and row groups that do not line up with the runs.
func TestColumnsEncodeEveryPatternOfLevelsAsArrowGo(t *testing.T) {
	for _, pattern := range []struct {
		name string
		null func(i int, r *rand.Rand) bool
	}{
		{"runs", func(i int, _ *rand.Rand) bool {
			// runs of 1, 1, 2, 2, 3, 3, ... 40, 40, then again
			k, n := i%1640, 1
			for k >= 2*n {
				k -= 2 * n
				n++
			}
			return k < n
		}},
		{"random", func(_ int, r *rand.Rand) bool { return r.IntN(2) == 0 }},
		{"rare nulls", func(_ int, r *rand.Rand) bool { return r.IntN(50) == 0 }},
		{"none", func(int, *rand.Rand) bool { return false }},
		{"all", func(int, *rand.Rand) bool { return true }},
	} {
		t.Run(pattern.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, 12))
			rows := kindsRows(7000, 13)
			for i := range rows {
				if pattern.null(i, r) {
					rows[i].text, rows[i].created, rows[i].count, rows[i].score, rows[i].flag, rows[i].doc = "", nil, nil, nil, nil, nil
				}
				rows[i].ids = rows[i].ids[:0]
				for range r.IntN(10) * r.IntN(2) {
					rows[i].ids = append(rows[i].ids, fmt.Sprint(r.IntN(100)))
				}
			}
			dir := t.TempDir()
			o := pqfile.Options{CreatedBy: "test", BatchRows: 777, RowGroupRows: 2500}
			batches := batchesOf(rows, 777)
			writeKindsRecordsWith(t, filepath.Join(dir, "records.parquet"), batches, o)
			writeKindsColumnsWith(t, filepath.Join(dir, "columns.parquet"), batches, o)
			sameFile(t, filepath.Join(dir, "columns.parquet"), filepath.Join(dir, "records.parquet"))
		})
	}
}

// A page of tens of thousands of levels, nulls and values mixed, has more
// level bytes than the room kept for them in front of its values: it is
// put together by copying, and is still the page arrow-go writes.
func TestColumnsWriteLevelsLongerThanTheirRoom(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	rows := kindsRows(80_000, 23)
	for i := range rows {
		if r.IntN(2) == 0 {
			rows[i].count = nil // about 65,000 levels for the 32,768 values of a page
		}
	}
	dir := t.TempDir()
	o := pqfile.Options{CreatedBy: "test", BatchRows: 40_000, RowGroupRows: 80_000}
	batches := batchesOf(rows, 40_000)
	writeKindsRecordsWith(t, filepath.Join(dir, "records.parquet"), batches, o)
	writeKindsColumnsWith(t, filepath.Join(dir, "columns.parquet"), batches, o)
	sameFile(t, filepath.Join(dir, "columns.parquet"), filepath.Join(dir, "records.parquet"))
}

// A row group is written out as soon as it is full, not when the next
// batch arrives: after a sync's last page only the last, partial row group
// is left to write.
func TestAFullRowGroupIsWrittenAtOnce(t *testing.T) {
	var sink bytes.Buffer
	o := pqfile.Options{CreatedBy: "test", BatchRows: 1000, RowGroupRows: 2000}
	w, err := pqfile.NewColumnsWriter(&sink, newKindsConverter(t), o)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	for _, rows := range batchesOf(kindsRows(2000, 3), 1000) {
		c, err := pqfile.NewColumns(kindsTable)
		if err != nil {
			t.Fatal(err)
		}
		appendKinds(c, rows)
		if err := w.WriteColumnsNow(c); err != nil {
			t.Fatal(err)
		}
	}
	// Nothing more is written and the Writer is not closed: the full row
	// group must have reached the sink by itself.
	if sink.Len() < 10_000 {
		t.Fatalf("%d bytes written: the full row group waits for the next batch or Close", sink.Len())
	}
}
