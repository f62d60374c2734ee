package export_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/test/synctest"
	"github.com/gofrs/flock"
)

// TestExportRoundTrip exports twice with changes in between and a third
// time after a removed post was bookmarked again: each run writes exactly
// what is new, the files read back with every column type intact, and no
// (user_id, post_id) is ever written twice.
func TestExportRoundTrip(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 500, folders: 2}, {id: "1002", bookmarks: 20}}
	tokens := seed(sim, users)
	src, err := cqspec.Parse([]byte(specYAML(sim.URL(), users, tokens, `["*"]`)), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx := context.Background()
	run := func() *export.Summary {
		t.Helper()
		clk.Advance(time.Hour)
		res, err := export.Run(ctx, export.Options{Spec: src, Out: dir, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		if f := res.Failed(); len(f) > 0 {
			t.Fatalf("failed accounts: %v", f)
		}
		return res.Summary()
	}

	// Run 1: everything.
	s1 := run()
	// A file per table: x_media_files', x_post_compliance's and
	// x_bookmark_changes' have no rows, and tell readers their columns; the
	// content tables have rows (media is on by default) or files of none.
	if s1.Totals.BookmarksWritten != 520 || len(s1.Files) != 10 || !s1.OK {
		t.Fatalf("run 1: %+v", s1)
	}
	checkArchive(t, dir, sim, users)
	checkColumns(t, parquetFiles(t, dir, "x_bookmarks")[0], sim)

	// Changes: the newest removed, an old one bookmarked again, 7 new,
	// a post added to a folder.
	newest := sim.Bookmarks("1001")[0]
	if err := sim.Unbookmark("1001", newest); err != nil {
		t.Fatal(err)
	}
	if err := sim.Bookmark("1001", sim.Bookmarks("1001")[300]); err != nil {
		t.Fatal(err)
	}
	added := sim.SeedBookmarks("1001", 7)
	sim.AddToFolder("1001", "10011", added[0])

	// Run 2: only the 7 new posts, billed for little more than that: 8
	// posts above the tail (7 new, 1 re-bookmarked), 2 to confirm it, and
	// 1 for the removed newest post the confirming run skips.
	s2 := run()
	if s2.Totals.BookmarksWritten != 7 || s2.Totals.AlreadyArchived != 0 {
		t.Errorf("run 2 wrote %d bookmarks (%d already archived), want 7", s2.Totals.BookmarksWritten, s2.Totals.AlreadyArchived)
	}
	if billed := s2.Accounts[0].Operations[0].PostsBilled; billed > 8+2+1 {
		t.Errorf("run 2 billed %d bookmark posts for 7 new", billed)
	}
	files := parquetFiles(t, dir, "x_bookmarks")
	if len(files) != 2 || len(bookmarkKeys(t, files[1:])) != 7 {
		t.Errorf("x_bookmarks files %v", files)
	}
	checkArchive(t, dir, sim, users)

	// Run 3: the removed newest post is bookmarked again, between two new
	// ones. Run 2 proved it gone, so the walk finds it as new; it is
	// already in run 1's file and is not written again, while the rows
	// beside it in the same batch are.
	before := sim.SeedBookmarks("1001", 1)
	if err := sim.Bookmark("1001", newest); err != nil {
		t.Fatal(err)
	}
	after := sim.SeedBookmarks("1001", 1)
	s3 := run()
	if s3.Totals.BookmarksWritten != 2 || s3.Totals.AlreadyArchived != 1 {
		t.Errorf("run 3 wrote %d bookmarks, %d already archived; want 2 and 1", s3.Totals.BookmarksWritten, s3.Totals.AlreadyArchived)
	}
	files = parquetFiles(t, dir, "x_bookmarks")
	if len(files) != 3 {
		t.Fatalf("x_bookmarks files after run 3: %v", files)
	}
	if keys := bookmarkKeys(t, files[2:]); len(keys) != 2 || keys[[2]string{"1001", before[0]}] != 1 || keys[[2]string{"1001", after[0]}] != 1 {
		t.Errorf("run 3's file holds %v, want the two new posts", keys)
	}
	checkArchive(t, dir, sim, users)
	checkColumns(t, files[2], sim)

	// Snapshot tables get a file per run; names sort in run order.
	for _, table := range []string{"x_bookmark_folders", "x_bookmark_folder_posts", "x_api_usage"} {
		fs := parquetFiles(t, dir, table)
		if len(fs) != 3 {
			t.Errorf("%s: %d files, want one per run", table, len(fs))
		}
		if !sort.StringsAreSorted(fs) || !strings.Contains(filepath.Base(fs[2]), s3.RunID) {
			t.Errorf("%s: files %v, run 3 is %s", table, fs, s3.RunID)
		}
	}
	// The newest folder_posts snapshot holds the folder's new post.
	fp := parquetFiles(t, dir, "x_bookmark_folder_posts")
	if bookmarkKeys(t, fp[2:])[[2]string{"1001", added[0]}] != 1 {
		t.Errorf("the newest folder snapshot lacks post %s", added[0])
	}
	info, err := archive.ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(info.Pending) != 0 || info.LastRun != s3.RunID || len(info.Archived["1001"]) != 509 {
		t.Errorf("state: pending %v, last run %s, %d written", info.Pending, info.LastRun, len(info.Archived["1001"]))
	}
}

// checkColumns reads an x_bookmarks file back: types and values as the API
// returned them.
func checkColumns(t *testing.T, path string, sim *xsim.Server) {
	t.Helper()
	sc, recs, _ := synctest.ReadParquet(t, path)
	want := map[string]arrow.DataType{
		"_cq_sync_time":          arrow.FixedWidthTypes.Timestamp_us,
		"_cq_source_name":        arrow.BinaryTypes.String,
		"_cq_id":                 arrow.BinaryTypes.String,
		"user_id":                arrow.BinaryTypes.String,
		"post_id":                arrow.BinaryTypes.String,
		"created_at":             arrow.FixedWidthTypes.Timestamp_us,
		"possibly_sensitive":     arrow.FixedWidthTypes.Boolean,
		"edit_history_tweet_ids": arrow.ListOf(arrow.BinaryTypes.String),
		"post":                   arrow.BinaryTypes.String,
		"first_seen_at":          arrow.FixedWidthTypes.Timestamp_us,
	}
	for name, typ := range want {
		f, ok := sc.FieldsByName(name)
		if !ok {
			t.Errorf("no column %s", name)
			continue
		}
		got := f[0].Type
		if l, ok := got.(*arrow.ListType); ok { // element named "element" in Parquet
			got = arrow.ListOf(l.Elem())
		}
		if !arrow.TypeEqual(got, typ) {
			t.Errorf("column %s: %s, want %s", name, f[0].Type, typ)
		}
	}
	if v, _ := sc.Metadata().GetValue(schema.MetadataTableName); v != "x_bookmarks" {
		t.Errorf("table metadata %q", v)
	}
	if v, _ := sc.Metadata().GetValue(pqfile.MetadataPrimaryKeys); v != "user_id,post_id" {
		t.Errorf("primary keys metadata %q", v)
	}
	if f, _ := sc.FieldsByName("post"); len(f) == 1 {
		if v, _ := f[0].Metadata.GetValue(pqfile.MetadataJSON); v != "true" {
			t.Errorf("post is not marked JSON: %v", f[0].Metadata)
		}
	}
	idx := func(name string) int { return sc.FieldIndices(name)[0] }
	checked := 0
	for _, r := range recs {
		posts := r.Column(idx("post_id")).(*array.String)
		texts := r.Column(idx("text")).(*array.String)
		created := r.Column(idx("created_at")).(*array.Timestamp)
		ids := r.Column(idx("_cq_id")).(*array.String)
		raw := r.Column(idx("post")).(*array.String)
		for i := 0; i < int(r.NumRows()); i++ {
			p := sim.PostContent(posts.Value(i))
			if texts.Value(i) != p.Text {
				t.Fatalf("post %s: text %q, want %q", p.ID, texts.Value(i), p.Text)
			}
			if got := created.Value(i).ToTime(arrow.Microsecond); p.CreatedAt.IsZero() || !got.Equal(p.CreatedAt.Truncate(time.Microsecond)) {
				t.Fatalf("post %s: created_at %s, want %s", p.ID, got, p.CreatedAt)
			}
			if len(ids.Value(i)) != 36 || !strings.HasPrefix(raw.Value(i), "{") || !strings.Contains(raw.Value(i), `"id":"`+p.ID+`"`) {
				t.Fatalf("post %s: _cq_id %q, post %q", p.ID, ids.Value(i), raw.Value(i))
			}
			checked++
		}
		r.Release()
	}
	if checked == 0 {
		t.Error("no rows checked")
	}
}

// TestExport_TableSelectionAndChangedAccounts: `tables` limits the files to
// the tables selected while the summary still covers every account; a
// spec whose accounts change between runs keeps each account's state (it
// is kept per user id), so an account added later gets a first sync and
// the others stay incremental.
func TestExport_TableSelectionAndChangedAccounts(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 200, folders: 1}, {id: "1002", bookmarks: 30}}
	tokens := seed(sim, users)
	dir := t.TempDir()
	run := func(us []demoUser) *export.Summary {
		t.Helper()
		src, err := cqspec.Parse([]byte(specYAML(sim.URL(), us, tokens, `["x_bookmarks"]`)), "spec.yml", os.LookupEnv, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Hour)
		res, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		return res.Summary()
	}
	s1 := run(users[:1])
	entries, _ := os.ReadDir(dir)
	var tables []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") {
			tables = append(tables, e.Name())
		}
	}
	// x_bookmark_changes (no rows yet), the archive's record of x_bookmarks
	// rows removed and added with `cq-source-x bookmarks`, goes with it.
	if strings.Join(tables, ",") != "x_bookmark_changes,x_bookmarks" || len(s1.Accounts) != 1 || s1.Accounts[0].Operations[0].Operation != "list_bookmarks" {
		t.Errorf("tables %v, summary %+v", tables, s1.Accounts)
	}
	sim.SeedBookmarks("1001", 4)
	// 1002 is added in front: accounts[0] is now another user.
	s2 := run([]demoUser{users[1], users[0]})
	byUser := map[string]export.AccountSum{}
	for _, a := range s2.Accounts {
		byUser[a.UserID] = a
	}
	if a := byUser["1002"]; a.BookmarksWritten != 30 || a.Account != "accounts[0]" {
		t.Errorf("new account: %+v", a)
	}
	if a := byUser["1001"]; a.BookmarksWritten != 4 || a.PostsBilled > 4+2 {
		t.Errorf("known account, now accounts[1]: wrote %d, billed %d; want 4 new, billed little more", a.BookmarksWritten, a.PostsBilled)
	}
	checkArchive(t, dir, sim, users)
}

// An interrupted run (its context ends: Ctrl-C) reads no more from X and
// commits what it read: the rows of the walk it cut off are written, the
// walk is recorded as interrupted, and the next run reads the list from the
// top again, writing only what is new and billing none of the posts again
// on the same UTC day.
func TestExport_AnInterruptedRunKeepsWhatItRead(t *testing.T) {
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 900}}
	tokens := seed(sim, users)
	src, err := cqspec.Parse([]byte(specYAML(sim.URL(), users, tokens, `["*"]`)), "spec.yml", os.LookupEnv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	sim.OnRequest(func(r xsim.RequestInfo) {
		if r.Operation == xsim.OpListBookmarks && r.Seq == 4 {
			interrupt()
		}
	})
	res, err := export.Run(ctx, export.Options{Spec: src, Out: dir})
	if err != nil {
		t.Fatalf("interrupted run: %v", err)
	}
	s1 := res.Summary()
	kept := len(bookmarkKeys(t, parquetFiles(t, dir, "x_bookmarks")))
	if !s1.Interrupted || kept == 0 || kept >= 900 || kept != s1.Totals.BookmarksWritten {
		t.Fatalf("interrupted: %v, %d bookmarks in the files, summary %+v", s1.Interrupted, kept, s1.Totals)
	}
	if a := s1.Accounts[0]; !a.OK || len(a.Interrupted) == 0 || a.Interrupted[0].List != "bookmarks" || a.Interrupted[0].BilledPosts != kept {
		t.Errorf("account %+v", a)
	}
	line := s1.InterruptedLine()
	for _, want := range []string{fmt.Sprintf("%d bookmarks written", kept), fmt.Sprintf("from the top accounts[0] bookmarks (%d posts)", kept)} {
		if !strings.Contains(line, want) {
			t.Errorf("%q lacks %q", line, want)
		}
	}

	res, err = export.Run(context.Background(), export.Options{Spec: src, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	s2 := res.Summary()
	if s2.Interrupted || s2.Totals.BookmarksWritten != 900-kept || s2.Totals.AlreadyArchived != kept {
		t.Errorf("next run: %+v", s2.Totals)
	}
	if billed, distinct := s1.Totals.PostsBilled+s2.Totals.PostsBilled, len(sim.BilledToday("")); billed != distinct {
		t.Errorf("the two runs counted %d posts billed; X billed %d: a post the interrupted run read was counted twice", billed, distinct)
	}
	checkArchive(t, dir, sim, users)
}

// TestExport_LockKeepsTwoExportsApart: while one export holds DIR's lock,
// another in the same DIR fails at once.
func TestExport_LockKeepsTwoExportsApart(t *testing.T) {
	dir := t.TempDir()
	lock := flock.New(filepath.Join(dir, ".lock"))
	if ok, err := lock.TryLock(); !ok || err != nil {
		t.Fatal(ok, err)
	}
	defer lock.Unlock()
	src, err := cqspec.Parse([]byte(specYAML("http://127.0.0.1:9", []demoUser{{id: "1"}}, map[string]string{"1": "t"}, `["*"]`)), "spec.yml", os.LookupEnv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir}); err == nil || !strings.Contains(err.Error(), "another export is running") {
		t.Errorf("second export: %v", err)
	}
}

// An export of several records (4,096 rows each) and row groups (16,384
// rows) keeps every value its post's own. The files are in the codec asked
// for (snappy by default); an unknown codec is refused before anything is
// touched.
func TestExport_LargeExportKeepsEveryValue(t *testing.T) {
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 20_000}}
	tokens := seed(sim, users)
	src, err := cqspec.Parse([]byte(specYAML(sim.URL(), users, tokens, `["x_bookmarks"]`)), "spec.yml", os.LookupEnv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		want compress.Compression
	}{{"", compress.Codecs.Snappy}, {"zstd", compress.Codecs.Zstd}} {
		dir := t.TempDir()
		res, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Compression: c.name})
		if err != nil {
			t.Fatal(err)
		}
		if f := res.Failed(); len(f) > 0 {
			t.Fatalf("failed accounts: %v", f)
		}
		checkArchive(t, dir, sim, users)
		path := parquetFiles(t, dir, "x_bookmarks")[0]
		checkColumns(t, path, sim)
		pf, err := file.OpenParquetFile(path, false)
		if err != nil {
			t.Fatal(err)
		}
		md := pf.MetaData()
		if md.NumRowGroups() != 2 || md.RowGroup(0).NumRows() < pqfile.DefaultRowGroupRows {
			t.Errorf("%d row groups for 20,000 rows, the first of %d", md.NumRowGroups(), md.RowGroup(0).NumRows())
		}
		for g := range md.NumRowGroups() {
			for col := range md.Schema.NumColumns() {
				cc, err := md.RowGroup(g).ColumnChunk(col)
				if err != nil {
					t.Fatal(err)
				}
				if cc.Compression() != c.want {
					t.Fatalf("compression %q: row group %d, column %d is %s, want %s", c.name, g, col, cc.Compression(), c.want)
				}
			}
		}
		pf.Close()
	}
	dir := t.TempDir()
	_, err = export.Run(context.Background(), export.Options{Spec: src, Out: dir, Compression: "brotli"})
	if err == nil || !strings.Contains(err.Error(), `unknown compression "brotli"`) {
		t.Fatalf("unknown codec: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("a refused export left %v", entries)
	}
}

// With deterministic_cq_id the scheduler announces each table with _cq_id
// as its only primary key (for destinations that upsert on it); the files
// still record the key the table declares, which docs/tables/ documents,
// and _cq_id is the SDK's hash of it.
func TestFilesRecordTheDeclaredPrimaryKeyWithDeterministicCQIDs(t *testing.T) {
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 30, folders: 1}}
	tokens := seed(sim, users)
	text := strings.Replace(specYAML(sim.URL(), users, tokens, `["*"]`), "  destinations:", "  deterministic_cq_id: true\n  destinations:", 1)
	src, err := cqspec.Parse([]byte(text), "spec.yml", os.LookupEnv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !src.DeterministicCQID {
		t.Fatal("the spec's deterministic_cq_id was not read")
	}
	dir := t.TempDir()
	if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir}); err != nil {
		t.Fatal(err)
	}
	for table, want := range map[string]string{"x_bookmarks": "user_id,post_id", "x_bookmark_folder_posts": "user_id,folder_id,post_id"} {
		sc, _, _ := synctest.ReadParquet(t, parquetFiles(t, dir, table)[0])
		if v, _ := sc.Metadata().GetValue(pqfile.MetadataPrimaryKeys); v != want {
			t.Errorf("%s: primary keys metadata %q, want %q", table, v, want)
		}
	}
}
