package resources_test

import (
	"reflect"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/google/uuid"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/export/pqfile"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/test/synctest"
)

// rowsByPost maps post_id to the row's cells, by column name (the file's
// _cq_sync_time and _cq_source_name left out).
func rowsByPost(t *testing.T, recs []arrow.RecordBatch) map[string]map[string]any {
	t.Helper()
	rows := map[string]map[string]any{}
	for _, rec := range recs {
		post := rec.Schema().FieldIndices("post_id")[0]
		for i := 0; i < int(rec.NumRows()); i++ {
			row := map[string]any{}
			for c, f := range rec.Schema().Fields() {
				if f.Name != pqfile.SyncTimeColumn && f.Name != pqfile.SourceNameColumn {
					row[f.Name] = synctest.Cell(t, rec.Column(c), i)
				}
			}
			id := synctest.Cell(t, rec.Column(post), i).(string)
			if _, dup := rows[id]; dup {
				t.Fatalf("post %s emitted twice", id)
			}
			rows[id] = row
		}
	}
	return rows
}

// fieldSelections are plugin specs that fill the x_bookmarks columns
// differently: the default fields, expansions (the author and media JSON
// columns set), and no fields at all (most columns null).
var fieldSelections = map[string]map[string]any{
	"default fields": nil,
	"expansions": {"fields": map[string]any{
		"expansions":   []string{"author_id", "attachments.media_keys"},
		"media_fields": []string{"url", "width", "height"},
		"user_fields":  []string{"created_at", "verified"},
	}},
	"no fields": {"fields": map[string]any{"tweet_fields": []string{}}},
}

// The exporter writes x_bookmarks rows straight to Parquet columns from the
// column definitions; a CloudQuery sync builds Arrow records through the
// SDK's resources. Both must give the same value in every cell — _cq_id
// included, when it is deterministic — across more than one batch.
func TestDirectColumnsEqualSDKRecords(t *testing.T) {
	for name, spec := range fieldSelections {
		t.Run(name, func(t *testing.T) {
			const n = account.DirectBatchRows + 500 // two batches
			viaSDK := synctest.Sync(t, n, synctest.Options{Spec: spec, DeterministicCQID: true})
			direct := synctest.Sync(t, n, synctest.Options{Spec: spec, DeterministicCQID: true, Direct: true})
			if len(direct[resources.BookmarksTable].Columns) != 2 {
				t.Fatalf("%d batches, want 2", len(direct[resources.BookmarksTable].Columns))
			}
			sdkRows := rowsByPost(t, viaSDK[resources.BookmarksTable].Records)
			directRows := rowsByPost(t, direct[resources.BookmarksTable].ColumnRecords(t))
			if len(sdkRows) != n || len(directRows) != n {
				t.Fatalf("rows: SDK %d, direct %d, want %d", len(sdkRows), len(directRows), n)
			}
			nullable := map[string]bool{}
			for id, want := range sdkRows {
				got := directRows[id]
				if len(got) != len(want) {
					t.Fatalf("post %s: direct has %d columns, SDK %d", id, len(got), len(want))
				}
				for col, v := range want {
					if v == nil {
						nullable[col] = true
					}
					if !reflect.DeepEqual(got[col], v) {
						t.Fatalf("post %s, column %s: direct %#v, SDK %#v", id, col, got[col], v)
					}
				}
			}
			if name == "expansions" && (nullable["author"] || len(nullable) == 0) {
				t.Fatalf("the expansions case should fill author for every post; null columns: %v", nullable)
			}
			// The other tables still come through the scheduler, alike.
			for _, table := range []string{resources.FoldersTable, resources.FolderPostsTable, resources.APIUsageTable} {
				if viaSDK[table] == nil || direct[table] == nil || viaSDK[table].Rows != direct[table].Rows || direct[table].Columns != nil {
					t.Fatalf("table %s: SDK %+v, direct %+v", table, viaSDK[table], direct[table])
				}
			}
		})
	}
}

// Without deterministic_cq_id, the SDK gives each row a random UUID; so
// does the direct path.
func TestDirectColumnsHaveRandomCQIDs(t *testing.T) {
	rows := rowsByPost(t, synctest.Sync(t, 300, synctest.Options{Direct: true})[resources.BookmarksTable].ColumnRecords(t))
	seen := map[string]bool{}
	for id, row := range rows {
		cq, ok := row[schema.CqIDColumn.Name].(string)
		if !ok || len(cq) != 36 || seen[cq] {
			t.Fatalf("post %s: _cq_id %#v (missing, malformed or repeated)", id, row[schema.CqIDColumn.Name])
		}
		if u, err := uuid.Parse(cq); err != nil || u.Version() != 4 || u.Variant() != uuid.RFC4122 {
			t.Fatalf("post %s: _cq_id %s is not a random (version 4, RFC 4122) UUID", id, cq)
		}
		seen[cq] = true
		if row[schema.CqParentIDColumn.Name] != nil {
			t.Fatalf("post %s: _cq_parent_id %v, want null", id, row[schema.CqParentIDColumn.Name])
		}
	}
}

// Rows reach the sink in batches: Columns are written once they hold
// account.DirectBatchRows rows — pages are appended whole, so at the first
// page boundary at or past it — and the last holds the rest.
func TestDirectColumnsComeInBatches(t *testing.T) {
	const batch = account.DirectBatchRows
	n := 2*batch + 500
	s := synctest.Sync(t, n, synctest.Options{Direct: true})[resources.BookmarksTable]
	var sizes []int
	total := 0
	for _, c := range s.Columns {
		sizes = append(sizes, c.Len())
		total += c.Len()
	}
	if len(sizes) != 3 || total != n {
		t.Fatalf("batch sizes %v for %d rows", sizes, n)
	}
	for _, size := range sizes[:2] {
		if size < batch || size >= batch+100 {
			t.Fatalf("batch sizes %v: a full batch holds %d rows and less than a page more", sizes, batch)
		}
	}
}
