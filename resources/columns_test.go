package resources

import (
	"context"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/client"
)

// A list column gives a nil list as null and an empty one as empty, as
// the SDK's list scalar has them.
func TestAnEmptyListIsNotANull(t *testing.T) {
	table := Bookmarks()
	schema.AddCqIDs(table)
	seen := time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC)
	col := table.Columns.Get("edit_history_tweet_ids")
	for _, c := range []struct {
		name     string
		ids      []string
		null     bool
		valueLen int64
	}{
		{"empty", []string{}, false, 0},
		{"nil", nil, true, 0},
		{"one", []string{"3"}, false, 1},
	} {
		r := schema.NewResourceData(table, nil, &bookmark{userID: "1", post: &client.Post{ID: "1", EditHistoryTweetIDs: c.ids}, firstSeenAt: seen})
		if err := col.Resolver(context.Background(), nil, r, *col); err != nil {
			t.Fatal(err)
		}
		rec := r.GetValues().ToArrowRecord(table.ToArrowSchema())
		list := rec.Column(table.Columns.Index(col.Name)).(*array.List)
		start, end := list.ValueOffsets(0)
		if list.IsNull(0) != c.null || end-start != c.valueLen {
			t.Errorf("%s list: null %v with %d values, want null %v with %d", c.name, list.IsNull(0), end-start, c.null, c.valueLen)
		}
		rec.Release()
	}
}
