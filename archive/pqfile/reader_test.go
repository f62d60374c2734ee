package pqfile_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
)

var readSchema = arrow.NewSchema([]arrow.Field{
	{Name: "user_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "tags", Type: arrow.ListOf(arrow.BinaryTypes.String), Nullable: true},
	{Name: "found_position", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
}, &readMetadata)

var readMetadata = arrow.NewMetadata([]string{"cq:table_name"}, []string{"x_test"})

// writeRows writes rows (JSON objects of readSchema) to a new file, in row
// groups of two rows.
func writeRows(t *testing.T, rows string) string {
	t.Helper()
	rec, _, err := array.RecordFromJSON(memory.DefaultAllocator, readSchema, strings.NewReader(rows))
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Release()
	path := filepath.Join(t.TempDir(), "rows.parquet")
	w, err := pqfile.CreateWritten(path, readSchema, pqfile.Options{RowGroupRows: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

const threeRows = `[
	{"user_id": "1", "tags": ["a", "b"], "found_position": 0},
	{"user_id": "1", "tags": null, "found_position": 1},
	{"user_id": "2", "tags": [], "found_position": null}
]`

// readAll reads the columns named of path, and returns each column's
// values as text, by column name.
func readAll(t *testing.T, path string, columns []string) map[string][]string {
	t.Helper()
	got := map[string][]string{}
	err := pqfile.ReadRecords(context.Background(), path, columns, func(rec arrow.RecordBatch) error {
		for i, f := range rec.Schema().Fields() {
			for r := range int(rec.NumRows()) {
				got[f.Name] = append(got[f.Name], rec.Column(i).ValueStr(r))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// The columns named are read, nested ones too; a column the file lacks is
// absent.
func TestReadRecordsReadsTheNamedColumns(t *testing.T) {
	path := writeRows(t, threeRows)
	got := readAll(t, path, []string{"found_position", "tags", "no_such_column"})
	want := map[string][]string{
		"tags":           {`["a","b"]`, "(null)", "[]"},
		"found_position": {"0", "1", "(null)"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read %v, want %v", got, want)
	}
}

// No columns named (nil) reads them all.
func TestReadRecordsReadsEveryColumnOfNil(t *testing.T) {
	got := readAll(t, writeRows(t, threeRows), nil)
	if len(got) != 3 || !reflect.DeepEqual(got["user_id"], []string{"1", "1", "2"}) {
		t.Errorf("read %v, want the three columns", got)
	}
}

// A file with none of the columns named still has its rows: batches of no
// columns count them.
func TestReadRecordsWithoutTheColumnsNamedCountsTheRows(t *testing.T) {
	path := writeRows(t, threeRows)
	rows := 0
	err := pqfile.ReadRecords(context.Background(), path, []string{"post"}, func(rec arrow.RecordBatch) error {
		if rec.NumCols() != 0 {
			t.Errorf("a batch has columns %v", rec.Schema())
		}
		rows += int(rec.NumRows())
		return nil
	})
	if err != nil || rows != 3 {
		t.Errorf("read %d rows (%v), want 3", rows, err)
	}
}

// ReadSchema reads the stored Arrow schema, its metadata, and the row
// count.
func TestReadSchemaReadsTheSchemaAndRowCount(t *testing.T) {
	sc, rows, err := pqfile.ReadSchema(writeRows(t, threeRows))
	if err != nil || rows != 3 {
		t.Fatalf("%d rows (%v), want 3", rows, err)
	}
	if v, ok := sc.Metadata().GetValue("cq:table_name"); !ok || v != "x_test" {
		t.Errorf("schema metadata %v, want cq:table_name x_test", sc.Metadata())
	}
	var names []string
	for _, f := range sc.Fields() {
		names = append(names, f.Name+" "+f.Type.ID().String())
	}
	if want := []string{"user_id STRING", "tags LIST", "found_position INT64"}; !reflect.DeepEqual(names, want) {
		t.Errorf("columns %v, want %v", names, want)
	}
}

// Errors name the file: one that is not Parquet, one that is missing, and
// the error the batch function returned (which stays what it is).
func TestReadErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	notParquet := filepath.Join(dir, "not.parquet")
	if err := os.WriteFile(notParquet, []byte("PAR1 not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.parquet")
	ignore := func(arrow.RecordBatch) error { return nil }
	stop := errors.New("not an x_bookmarks file")
	written := writeRows(t, threeRows)
	for _, c := range []struct {
		path string
		err  error
	}{
		{notParquet, pqfile.ReadRecords(context.Background(), notParquet, nil, ignore)},
		{notParquet, func() error { _, _, err := pqfile.ReadSchema(notParquet); return err }()},
		{missing, pqfile.ReadRecords(context.Background(), missing, nil, ignore)},
		{written, pqfile.ReadRecords(context.Background(), written, nil, func(arrow.RecordBatch) error { return stop })},
	} {
		var pe *fs.PathError
		if !errors.As(c.err, &pe) || pe.Path != c.path || !strings.Contains(c.err.Error(), c.path) {
			t.Errorf("error %v does not name %s", c.err, c.path)
		}
	}
	if err := pqfile.ReadRecords(context.Background(), written, nil, func(arrow.RecordBatch) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("the batch function's error became %v", err)
	}
}
