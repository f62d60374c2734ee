package resources

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/cloudquery/plugin-sdk/v4/schema"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/export/pqfile"
)

// A list column stores a nil list as null and an empty one as empty, in
// the exporter's Columns as in the SDK's list scalar, so that both paths
// give the same value for any row.
func TestAnEmptyListIsNotANull(t *testing.T) {
	table := Bookmarks()
	schema.AddCqIDs(table)
	cb, err := newColumnsBuilder(table, bookmarkColumns, false)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := pqfile.NewColumns(table)
	if err != nil {
		t.Fatal(err)
	}
	seen := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	cb.Append(cols, []*bookmark{
		{userID: "1", post: &client.Post{ID: "1", EditHistoryTweetIDs: []string{}}, firstSeenAt: seen},
		{userID: "1", post: &client.Post{ID: "2"}, firstSeenAt: seen},
		{userID: "1", post: &client.Post{ID: "3", EditHistoryTweetIDs: []string{"3"}}, firstSeenAt: seen},
	})
	conv, err := pqfile.NewConverter(table, seen, "x", nil)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "b.parquet")
	w, err := pqfile.CreateColumns(path, conv, pqfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteColumns(cols); err != nil {
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
	fr, err := pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	list := tbl.Column(tbl.Schema().FieldIndices("edit_history_tweet_ids")[0]).Data().Chunk(0).(*array.List)
	valueLen := func(i int) int64 { start, end := list.ValueOffsets(i); return end - start }
	if list.IsNull(0) || valueLen(0) != 0 {
		t.Errorf("an empty list reads back as null %v, %d values", list.IsNull(0), valueLen(0))
	}
	if !list.IsNull(1) {
		t.Error("a nil list is not null")
	}
	if list.IsNull(2) || valueLen(2) != 1 {
		t.Error("a list of one reads back wrong")
	}
}
