package resources_test

import (
	"reflect"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"testing"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/test/synctest"
)

// rowsByPost maps post_id to the row's cells, by column name, and checks
// that every record has the schema want (nil: the first record's).
func rowsByPost(t *testing.T, s *synctest.Synced, want *arrow.Schema) map[string]map[string]any {
	t.Helper()
	rows := map[string]map[string]any{}
	for _, rec := range s.Records {
		if want == nil {
			want = rec.Schema()
		}
		if !rec.Schema().Equal(want) {
			t.Fatalf("record schema differs:\nrecord: %s\nwant: %s", rec.Schema(), want)
		}
		post := rec.Schema().FieldIndices("post_id")[0]
		for i := 0; i < int(rec.NumRows()); i++ {
			row := map[string]any{}
			for c, f := range rec.Schema().Fields() {
				row[f.Name] = synctest.Cell(t, rec.Column(c), i)
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

// The exporter builds x_bookmarks records directly from the column
// definitions; a CloudQuery sync builds them through the SDK's resources.
// Both must give the same schema and the same value in every cell —
// _cq_id included, when it is deterministic.
func TestDirectRecordsEqualSDKRecords(t *testing.T) {
	for name, spec := range fieldSelections {
		t.Run(name, func(t *testing.T) {
			const n = 700 // more than one page, less than one record batch
			viaSDK := synctest.Sync(t, n, synctest.Options{Spec: spec, DeterministicCQID: true})
			direct := synctest.Sync(t, n, synctest.Options{Spec: spec, DeterministicCQID: true, Direct: true})
			sdkRows := rowsByPost(t, viaSDK[resources.BookmarksTable], nil)
			directRows := rowsByPost(t, direct[resources.BookmarksTable], viaSDK[resources.BookmarksTable].Records[0].Schema())
			if len(sdkRows) != n || len(directRows) != n {
				t.Fatalf("rows: SDK %d, direct %d, want %d", len(sdkRows), len(directRows), n)
			}
			nullable := map[string]bool{}
			for id, want := range sdkRows {
				got := directRows[id]
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
				if viaSDK[table] == nil || direct[table] == nil || viaSDK[table].Rows != direct[table].Rows {
					t.Fatalf("table %s: SDK %+v, direct %+v", table, viaSDK[table], direct[table])
				}
			}
		})
	}
}

// dirtyAllocator hands out memory full of 0xA5, as a recycling allocator's
// reused buffers are (internal/arrowmem does not zero them).
type dirtyAllocator struct{ memory.GoAllocator }

func (a *dirtyAllocator) Allocate(size int) []byte {
	b := a.GoAllocator.Allocate(size)
	for i := range b {
		b[i] = 0xA5
	}
	return b
}

func (a *dirtyAllocator) Reallocate(size int, b []byte) []byte {
	if cap(b) >= size {
		old := len(b)
		b = b[:size]
		for i := old; i < size; i++ {
			b[i] = 0xA5
		}
		return b
	}
	nb := a.Allocate(size)
	copy(nb, b)
	return nb
}

// The exporter builds its records in reused, unzeroed buffers: Arrow's
// builders must write every byte a reader sees (values, offsets, validity
// bitmaps). Records built in dirty memory equal the SDK's, cell by cell,
// across more than one record.
func TestDirectRecordsOnDirtyMemory(t *testing.T) {
	for name, spec := range fieldSelections {
		t.Run(name, func(t *testing.T) {
			const n = account.DefaultBatchRows + 500 // two records
			viaSDK := synctest.Sync(t, n, synctest.Options{Spec: spec, DeterministicCQID: true})
			direct := synctest.Sync(t, n, synctest.Options{Spec: spec, DeterministicCQID: true, Direct: true, Mem: &dirtyAllocator{}})
			if len(direct[resources.BookmarksTable].Records) != 2 {
				t.Fatalf("%d records, want 2", len(direct[resources.BookmarksTable].Records))
			}
			sdkRows := rowsByPost(t, viaSDK[resources.BookmarksTable], nil)
			directRows := rowsByPost(t, direct[resources.BookmarksTable], viaSDK[resources.BookmarksTable].Records[0].Schema())
			if len(sdkRows) != n || len(directRows) != n {
				t.Fatalf("rows: SDK %d, direct %d, want %d", len(sdkRows), len(directRows), n)
			}
			for id, want := range sdkRows {
				if got := directRows[id]; !reflect.DeepEqual(got, want) {
					t.Fatalf("post %s:\ndirect %#v\nSDK    %#v", id, got, want)
				}
			}
		})
	}
}

// Without deterministic_cq_id, the SDK gives each row a random UUID; so
// does the direct path.
func TestDirectRecordsHaveRandomCQIDs(t *testing.T) {
	rows := rowsByPost(t, synctest.Sync(t, 300, synctest.Options{Direct: true})[resources.BookmarksTable], nil)
	seen := map[string]bool{}
	for id, row := range rows {
		cq, ok := row[schema.CqIDColumn.Name].(string)
		if !ok || len(cq) != 36 || seen[cq] {
			t.Fatalf("post %s: _cq_id %#v (missing, malformed or repeated)", id, row[schema.CqIDColumn.Name])
		}
		seen[cq] = true
		if row[schema.CqParentIDColumn.Name] != nil {
			t.Fatalf("post %s: _cq_parent_id %v, want null", id, row[schema.CqParentIDColumn.Name])
		}
	}
}

// Records reach the sink in batches: a record is written once it holds the
// sink's batch size (account.DefaultBatchRows) — pages are appended whole,
// so at the first page boundary at or past it — and the last holds the rest.
func TestDirectRecordsComeInBatches(t *testing.T) {
	const batch = account.DefaultBatchRows
	n := 2*batch + 500
	s := synctest.Sync(t, n, synctest.Options{Direct: true})[resources.BookmarksTable]
	var sizes []int64
	total := int64(0)
	for _, r := range s.Records {
		sizes = append(sizes, r.NumRows())
		total += r.NumRows()
	}
	if len(sizes) != 3 || total != int64(n) {
		t.Fatalf("record sizes %v for %d rows", sizes, n)
	}
	for _, size := range sizes[:2] {
		if size < batch || size >= batch+100 {
			t.Fatalf("record sizes %v: a full record holds %d rows and less than a page more", sizes, batch)
		}
	}
}
