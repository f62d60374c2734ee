package pqfile_test

import (
	"fmt"
	"github.com/cq-source-x/cq-source-x/test/synctest"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/types"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
)

var syncTime = time.Date(2026, 11, 22, 10, 15, 0, 123456000, time.UTC)

// writeAll writes every record of s to a new file in dir.
func writeAll(tb testing.TB, dir string, s *synctest.Synced, o pqfile.Options) string {
	tb.Helper()
	o.SyncTime, o.SourceName = syncTime, "x"
	o.Metadata = map[string]string{pqfile.MetadataPluginVersion: "v9.9.9"}
	path := filepath.Join(dir, s.Table.Name+".parquet")
	w, err := pqfile.Create(path, s.Table, o)
	if err != nil {
		tb.Fatal(err)
	}
	for _, rec := range s.Records {
		if err := w.Write(rec); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	if w.Rows() != s.Rows {
		tb.Fatalf("wrote %d rows, want %d", w.Rows(), s.Rows)
	}
	return path
}

// compareAll checks that the records read back hold exactly the values
// written, row by row and column by column, nulls included.
func compareAll(tb testing.TB, s *synctest.Synced, got []arrow.RecordBatch) {
	tb.Helper()
	type cursor struct {
		recs []arrow.RecordBatch
		r, i int
	}
	next := func(c *cursor) (arrow.RecordBatch, int) {
		for c.r < len(c.recs) && c.i >= int(c.recs[c.r].NumRows()) {
			c.r, c.i = c.r+1, 0
		}
		if c.r == len(c.recs) {
			return nil, 0
		}
		c.i++
		return c.recs[c.r], c.i - 1
	}
	want, have := &cursor{recs: s.Records}, &cursor{recs: got}
	wantTime, _ := arrow.TimestampFromTime(syncTime, arrow.Microsecond)
	rows, mismatches := 0, 0
	for {
		wr, wi := next(want)
		hr, hi := next(have)
		if wr == nil || hr == nil {
			if wr != nil || hr != nil {
				tb.Fatalf("row counts differ after %d rows", rows)
			}
			break
		}
		rows++
		if v := synctest.Cell(tb, hr.Column(0), hi); v != int64(wantTime) {
			tb.Fatalf("row %d: _cq_sync_time %v", rows, v)
		}
		if v := synctest.Cell(tb, hr.Column(1), hi); v != "x" {
			tb.Fatalf("row %d: _cq_source_name %v", rows, v)
		}
		for c := 0; c < int(wr.NumCols()); c++ {
			w, h := synctest.Cell(tb, wr.Column(c), wi), synctest.Cell(tb, hr.Column(c+2), hi)
			if !reflect.DeepEqual(w, h) {
				mismatches++
				if mismatches < 10 {
					tb.Errorf("row %d column %s: wrote %#v, read %#v", rows, wr.ColumnName(c), w, h)
				}
			}
		}
	}
	if rows != int(s.Rows) || mismatches > 0 {
		tb.Fatalf("%d rows compared (want %d), %d mismatches", rows, s.Rows, mismatches)
	}
}

// checkTypes checks the Parquet types readers see and the metadata.
func checkTypes(t *testing.T, s *synctest.Synced, sc *arrow.Schema, pr *file.Reader) {
	t.Helper()
	pq := pr.MetaData().Schema
	for _, c := range s.Table.Columns {
		idx := pq.ColumnIndexByName(c.Name)
		if c.Type.ID() == arrow.LIST {
			idx = pq.ColumnIndexByName(c.Name + ".list.element")
		}
		if idx < 0 {
			t.Fatalf("column %s not in the Parquet schema", c.Name)
		}
		col := pq.Column(idx)
		lt := col.LogicalType()
		switch {
		case arrow.TypeEqual(c.Type, types.ExtensionTypes.JSON), arrow.TypeEqual(c.Type, types.ExtensionTypes.UUID),
			c.Type.ID() == arrow.STRING, c.Type.ID() == arrow.LIST:
			if _, ok := lt.(pqschema.StringLogicalType); !ok || col.PhysicalType() != parquet.Types.ByteArray {
				t.Errorf("%s: %s %s, want BYTE_ARRAY (String)", c.Name, col.PhysicalType(), lt)
			}
		case c.Type.ID() == arrow.TIMESTAMP:
			ts, ok := lt.(pqschema.TimestampLogicalType)
			if !ok || !ts.IsAdjustedToUTC() || ts.TimeUnit() != pqschema.TimeUnitMicros || col.PhysicalType() != parquet.Types.Int64 {
				t.Errorf("%s: %s %s, want INT64 TIMESTAMP(MICROS, UTC)", c.Name, col.PhysicalType(), lt)
			}
		}
		f, ok := sc.FieldsByName(c.Name)
		if !ok {
			t.Fatalf("no field %s read back", c.Name)
		}
		if d, _ := f[0].Metadata.GetValue(pqfile.MetadataDescription); d != c.Description {
			t.Errorf("%s: description %q, want %q", c.Name, d, c.Description)
		}
		if pk, _ := f[0].Metadata.GetValue(schema.MetadataPrimaryKey); (pk == "true") != c.PrimaryKey {
			t.Errorf("%s: primary key metadata %q", c.Name, pk)
		}
		isJSON := arrow.TypeEqual(c.Type, types.ExtensionTypes.JSON)
		if j, _ := f[0].Metadata.GetValue(pqfile.MetadataJSON); (j == "true") != isJSON {
			t.Errorf("%s: JSON metadata %q", c.Name, j)
		}
		if want := arrow.BinaryTypes.String; (isJSON || arrow.TypeEqual(c.Type, types.ExtensionTypes.UUID)) && !arrow.TypeEqual(f[0].Type, want) {
			t.Errorf("%s read back as %s, want %s", c.Name, f[0].Type, want)
		}
	}
	kv := pr.MetaData().KeyValueMetadata()
	for k, want := range map[string]string{
		schema.MetadataTableName:     s.Table.Name,
		pqfile.MetadataPluginVersion: "v9.9.9",
		pqfile.MetadataSourceName:    "x",
	} {
		if v := kv.FindValue(k); v == nil || *v != want {
			t.Errorf("key/value metadata %s = %v, want %q", k, v, want)
		}
		if v, _ := sc.Metadata().GetValue(k); v != want {
			t.Errorf("Arrow schema metadata %s = %q, want %q", k, v, want)
		}
	}
	if s.Table.IsIncremental {
		if v, _ := sc.Metadata().GetValue(schema.MetadataIncremental); v != "true" {
			t.Errorf("incremental metadata %q", v)
		}
	}
	var pks []string
	for _, c := range s.Table.PrimaryKeys() {
		pks = append(pks, c)
	}
	if v, _ := sc.Metadata().GetValue(pqfile.MetadataPrimaryKeys); v != fmt.Sprint(joinComma(pks)) {
		t.Errorf("primary keys metadata %q, want %q", v, joinComma(pks))
	}
}

func joinComma(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ","
		}
		out += x
	}
	return out
}

// TestRoundTrip writes the plugin's real records of every table (with
// expansions, so the author and media JSON columns are filled) and reads
// them back: every value, null, timestamp, list and JSON string is intact,
// and the Parquet types and metadata are what readers need.
func TestRoundTrip(t *testing.T) {
	all := synctest.All(t, 3000, map[string]any{
		"fields": map[string]any{"expansions": []string{"author_id", "attachments.media_keys"}},
	})
	dir := t.TempDir()
	for _, name := range []string{"x_bookmarks", "x_bookmark_folders", "x_bookmark_folder_posts", "x_api_usage"} {
		s := all[name]
		t.Run(name, func(t *testing.T) {
			if s.Rows == 0 {
				t.Fatal("no rows synced")
			}
			path := writeAll(t, dir, s, pqfile.Options{})
			sc, got, pr := synctest.ReadParquet(t, path)
			compareAll(t, s, got)
			checkTypes(t, s, sc, pr)
		})
	}
	// Every kind of value occurs: nulls and values in the optional columns.
	b := all["x_bookmarks"]
	for _, col := range []string{"media", "note_tweet", "in_reply_to_user_id", "referenced_tweets", "bookmarked_after"} {
		idx := b.Table.Columns.Index(col)
		nulls, values := 0, 0
		for _, r := range b.Records {
			nulls += r.Column(idx).NullN()
			values += int(r.NumRows()) - r.Column(idx).NullN()
		}
		if values == 0 && col != "bookmarked_after" {
			t.Errorf("column %s is never set in the test data", col)
		}
		if nulls == 0 {
			t.Errorf("column %s is never null in the test data", col)
		}
	}
}

// The SDK's records (of 50 rows) go into row groups of RowGroupRows rows,
// the last holding the rest, and every value reads back.
func TestRowGroupsHoldRowGroupRows(t *testing.T) {
	s := synctest.Table(t, 2500, "x_bookmarks", nil)
	path := writeAll(t, t.TempDir(), s, pqfile.Options{RowGroupRows: 1000})
	_, got, pr := synctest.ReadParquet(t, path)
	compareAll(t, s, got)
	var sizes []int64
	for g := range pr.NumRowGroups() {
		sizes = append(sizes, pr.MetaData().RowGroup(g).NumRows())
	}
	if !reflect.DeepEqual(sizes, []int64{1000, 1000, 500}) {
		t.Errorf("row groups of %v rows, want [1000 1000 500]", sizes)
	}
}
