package export_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/test/synctest"
)

// archiveTables are the tables every archive has a file of.
var archiveTables = []string{"x_bookmarks", "x_bookmark_folders", "x_bookmark_folder_posts", "x_post_compliance", "x_api_usage", "x_bookmark_changes"}

// exporter runs exports of users against a simulator on a virtual clock.
type exporter struct {
	t   *testing.T
	sim *xsim.Server
	clk *clock.Virtual
	src *cqspec.Source
	dir string
}

func newExporter(t *testing.T, users []demoUser) *exporter {
	t.Helper()
	clk := clock.NewVirtual(time.Date(2026, 8, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	tokens := seed(sim, users)
	src, err := cqspec.Parse([]byte(specYAML(sim.URL(), users, tokens, `["*"]`)), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	return &exporter{t: t, sim: sim, clk: clk, src: src, dir: t.TempDir()}
}

func (e *exporter) run() *export.Result {
	e.t.Helper()
	e.clk.Advance(time.Hour)
	res, err := export.Run(context.Background(), export.Options{Spec: e.src, Out: e.dir, Clock: e.clk})
	if err != nil {
		e.t.Fatal(err)
	}
	if f := res.Failed(); len(f) > 0 {
		e.t.Fatalf("failed accounts: %v", f)
	}
	return res
}

// fileRows counts the rows of each of the run's files, by table.
func fileRows(res *export.Result) map[string]int64 {
	m := map[string]int64{}
	for _, f := range res.Summary().Files {
		m[f.Table] += f.Rows
	}
	return m
}

// An archive has a file of every table from its first export on, even of a
// table with no row yet, so that a reader's DIR/<table>/*.parquet always
// matches a file with the table's columns.
func TestEveryTableHasAFileFromTheFirstExport(t *testing.T) {
	e := newExporter(t, []demoUser{{id: "1001"}})
	res := e.run()
	for _, table := range archiveTables {
		files := parquetFiles(t, e.dir, table)
		if len(files) != 1 {
			t.Fatalf("%s: %d files after the first export, want 1", table, len(files))
		}
		sc, _, _ := synctest.ReadParquet(t, files[0])
		if !sc.HasField("_cq_sync_time") || sc.NumFields() < 4 {
			t.Errorf("%s: the file has no table columns: %v", table, sc)
		}
	}
	if rows := fileRows(res); rows["x_api_usage"] == 0 || rows["x_bookmarks"] != 0 {
		t.Errorf("rows written: %v", rows)
	}
}

// A run that finds nothing new writes no file of no rows: only its cost, in
// x_api_usage, and the snapshots of tables that have rows (an account's
// folders).
func TestAnExportThatFindsNothingNewWritesNoEmptyFile(t *testing.T) {
	e := newExporter(t, []demoUser{{id: "1001", bookmarks: 30}, {id: "1002", bookmarks: 5, folders: 1}})
	e.run()
	res := e.run()
	tables := map[string]bool{}
	for _, f := range res.Summary().Files {
		tables[f.Table] = true
		if f.Rows == 0 {
			t.Errorf("%s: a file of no rows", f.Path)
		}
	}
	want := map[string]bool{"x_api_usage": true, "x_bookmark_folders": true, "x_bookmark_folder_posts": true}
	if len(tables) != len(want) || !tables["x_api_usage"] || !tables["x_bookmark_folders"] || !tables["x_bookmark_folder_posts"] {
		t.Errorf("the second run wrote files of %v, want %v", tables, want)
	}

	// Without folders at all, nothing but the usage.
	e = newExporter(t, []demoUser{{id: "1001", bookmarks: 30}})
	e.run()
	files := e.run().Summary().Files
	if len(files) != 1 || files[0].Table != "x_api_usage" || files[0].Rows == 0 {
		t.Errorf("the second run wrote %+v, want one x_api_usage file", files)
	}
}

// found_position keeps each post's place in the list when a sync found it,
// so that newest-first is first_seen_at descending, then found_position,
// in any archive: a first sync's posts all have one first_seen_at.
func TestFoundPositionKeepsTheListOrder(t *testing.T) {
	e := newExporter(t, []demoUser{{id: "1001", bookmarks: 250}})
	e.run()
	rows := positions(t, e.dir)
	list := e.sim.Bookmarks("1001")
	for i, id := range list {
		if rows[id].position != int64(i) {
			t.Fatalf("post %s is at %d of the list, found_position %d", id, i, rows[id].position)
		}
	}
	e.sim.SeedBookmarks("1001", 3)
	if err := e.sim.Bookmark("1001", list[100]); err != nil { // saved again: not a new row
		t.Fatal(err)
	}
	e.sim.SeedBookmarks("1001", 2)
	e.run()
	rows = positions(t, e.dir)
	ids := make([]string, 0, len(rows))
	for id := range rows {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := rows[ids[i]], rows[ids[j]]
		if !a.firstSeen.Equal(b.firstSeen) {
			return a.firstSeen.After(b.firstSeen)
		}
		return a.position < b.position
	})
	want := slices.DeleteFunc(e.sim.Bookmarks("1001"), func(id string) bool { return id == list[100] })
	want = slices.Insert(want, 5+100, list[100]) // where the first sync found it
	if !slices.Equal(ids, want) {
		t.Errorf("newest first by (first_seen_at desc, found_position) is not the list's order:\n got %v\nwant %v", ids[:8], want[:8])
	}
}

type foundAt struct {
	firstSeen time.Time
	position  int64
}

// positions reads first_seen_at and found_position of every x_bookmarks row.
func positions(t *testing.T, dir string) map[string]foundAt {
	t.Helper()
	out := map[string]foundAt{}
	for _, path := range parquetFiles(t, dir, "x_bookmarks") {
		sc, recs, _ := synctest.ReadParquet(t, path)
		pi, fi, si := sc.FieldIndices("post_id"), sc.FieldIndices("found_position"), sc.FieldIndices("first_seen_at")
		if len(fi) != 1 {
			t.Fatalf("%s has no found_position column", filepath.Base(path))
		}
		for _, r := range recs {
			posts, pos, seen := r.Column(pi[0]).(*array.String), r.Column(fi[0]).(*array.Int64), r.Column(si[0]).(*array.Timestamp)
			for i := range int(r.NumRows()) {
				out[posts.Value(i)] = foundAt{firstSeen: seen.Value(i).ToTime(arrow.Microsecond), position: pos.Value(i)}
			}
			r.Release()
		}
	}
	return out
}
