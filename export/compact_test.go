package export_test

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/test/synctest"
)

// rowSet reads every row of the files, each as the text of all its columns,
// and counts them.
func rowSet(t testing.TB, files []string) map[string]int {
	t.Helper()
	rows := map[string]int{}
	for _, path := range files {
		_, recs, _ := synctest.ReadParquet(t, path)
		for _, r := range recs {
			for i := range int(r.NumRows()) {
				var b strings.Builder
				for c := range int(r.NumCols()) {
					b.WriteString(r.Column(c).ValueStr(i))
					b.WriteByte('\x00')
				}
				rows[b.String()]++
			}
			r.Release()
		}
	}
	return rows
}

// everyTablesRows is rowSet of every table of dir, read as readers read it:
// DIR/<table>/*.parquet.
func everyTablesRows(t testing.TB, dir string) map[string]map[string]int {
	t.Helper()
	out := map[string]map[string]int{}
	for _, table := range export.TableNames() {
		out[table] = rowSet(t, parquetFiles(t, dir, table))
	}
	return out
}

func sameRows(t testing.TB, what string, got, want map[string]map[string]int) {
	t.Helper()
	for table, rows := range want {
		if !maps.Equal(got[table], rows) {
			n, m := 0, 0
			for _, c := range rows {
				n += c
			}
			for _, c := range got[table] {
				m += c
			}
			t.Errorf("%s: %s holds %d rows (%d distinct), want the same %d (%d distinct)", what, table, m, len(got[table]), n, len(rows))
		}
	}
}

// exportMonths exports at the given days, with a new bookmark before each.
func (e *exporter) exportAt(days ...time.Time) {
	e.t.Helper()
	for _, d := range days {
		e.clk.Set(d)
		e.sim.SeedBookmarks("1001", 3)
		e.run()
	}
}

func day(month time.Month, d int) time.Time { return time.Date(2026, month, d, 9, 0, 0, 0, time.UTC) }

// Compaction merges each month's files of each table into one, once the
// month is over, and every row stays: the same rows, each once, read as
// readers read the table, DIR/<table>/*.parquet. The archive goes on as
// before: the next export writes into the compacted table, repair finds
// nothing to repair, and a second compaction has nothing to do.
func TestCompactMergesEachMonthsFilesAndKeepsEveryRow(t *testing.T) {
	e := newExporter(t, []demoUser{{id: "1001", bookmarks: 120, folders: 1}, {id: "1002", bookmarks: 9}})
	e.exportAt(day(9, 28), day(9, 29), day(9, 30), day(10, 1), day(10, 15), day(10, 31), day(11, 2), day(11, 3))
	before := everyTablesRows(t, e.dir)
	now := func() time.Time { return day(11, 4) }

	dry, err := archive.Compact(e.dir, archive.CompactOptions{DryRun: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(parquetFiles(t, e.dir, "x_api_usage")); n != 8 {
		t.Fatalf("a dry run changed the files: %d x_api_usage files", n)
	}
	rep, err := archive.Compact(e.dir, archive.CompactOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	if !equalReports(dry, rep) {
		t.Errorf("the dry run said %+v, the compaction did %+v", dry.Tables, rep.Tables)
	}
	sameRows(t, "after compaction", everyTablesRows(t, e.dir), before)
	months := func(table string) []string {
		var ms []string
		for _, f := range parquetFiles(t, e.dir, table) {
			ms = append(ms, filepath.Base(f)[:6])
		}
		return ms
	}
	// September and October merged; November's two files left alone.
	if got := strings.Join(months("x_api_usage"), ","); got != "202609,202610,202611,202611" {
		t.Errorf("x_api_usage files by month: %s", got)
	}
	if got := strings.Join(months("x_bookmarks"), ","); got != "202609,202610,202611,202611" {
		t.Errorf("x_bookmarks files by month: %s", got)
	}
	checkArchive(t, e.dir, e.sim, []demoUser{{id: "1001"}, {id: "1002"}})

	// The archive goes on: an export writes into the compacted tables.
	e.exportAt(day(11, 5))
	checkArchive(t, e.dir, e.sim, []demoUser{{id: "1001"}, {id: "1002"}})
	if got := len(parquetFiles(t, e.dir, "x_api_usage")); got != 5 {
		t.Errorf("%d x_api_usage files after one more export, want 5", got)
	}
	if rep, err := archive.Repair(e.dir, archive.RepairOptions{Tables: export.BookmarkTables()}); err != nil || rep.Changed {
		t.Errorf("repair after compaction: %+v, %v", rep, err)
	}
	again, err := archive.Compact(e.dir, archive.CompactOptions{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range again.Tables {
		if len(tc.Merged) > 0 {
			t.Errorf("a second compaction merged %s again: %+v", tc.Table, tc.Merged)
		}
	}

	// --current-month merges November too, through the generation the
	// table links to already.
	before = everyTablesRows(t, e.dir)
	if _, err := archive.Compact(e.dir, archive.CompactOptions{Now: now, CurrentMonth: true}); err != nil {
		t.Fatal(err)
	}
	sameRows(t, "after compacting the current month", everyTablesRows(t, e.dir), before)
	if got := strings.Join(months("x_bookmarks"), ","); got != "202609,202610,202611" {
		t.Errorf("x_bookmarks files by month: %s", got)
	}
	if gens := generations(e.dir, "x_bookmarks"); len(gens) != 1 {
		t.Errorf("generations %v of x_bookmarks left beside the retired set, want the current one", gens)
	}

	if os.Getenv("CQX_DUCKDB_DIR") != "" {
		got := duckdb(t, "SELECT count(*) AS n, count(DISTINCT (user_id, post_id)) AS d FROM '"+filepath.Join(e.dir, "x_bookmarks", "*.parquet")+"'")
		want := len(e.sim.Bookmarks("1001")) + len(e.sim.Bookmarks("1002"))
		if asInt(t, got[0]["n"]) != want || asInt(t, got[0]["d"]) != want {
			t.Errorf("DuckDB reads %v rows of the compacted x_bookmarks, want %d once each", got, want)
		}
	}
}

// generations lists the generations of table, the retired set aside.
func generations(dir, table string) []string {
	entries, _ := os.ReadDir(filepath.Join(dir, ".tables", table))
	var gens []string
	for _, e := range entries {
		if e.Name() != "retired" {
			gens = append(gens, e.Name())
		}
	}
	return gens
}

func equalReports(a, b *archive.CompactReport) bool {
	if len(a.Tables) != len(b.Tables) {
		return false
	}
	for i := range a.Tables {
		x, y := a.Tables[i], b.Tables[i]
		if x.Table != y.Table || x.FilesBefore != y.FilesBefore || x.FilesAfter != y.FilesAfter || len(x.Merged) != len(y.Merged) {
			return false
		}
		for j := range x.Merged {
			if x.Merged[j].Rows != y.Merged[j].Rows || x.Merged[j].Files != y.Merged[j].Files {
				return false
			}
		}
	}
	return true
}

// Files of different columns (written by different versions of the
// program) are merged apart: a merged file has one set of columns.
func TestFilesOfDifferentColumnsAreMergedApart(t *testing.T) {
	e := newExporter(t, []demoUser{{id: "1001", bookmarks: 30}})
	e.exportAt(day(9, 1), day(9, 2), day(9, 3))
	// A file as a version without found_position wrote it, in September
	// (before the last run, as every file of the directory is).
	files := parquetFiles(t, e.dir, "x_bookmarks")
	dropColumn(t, files[1], "found_position", filepath.Join(e.dir, "x_bookmarks", "20260902T090000.000Z-0badc0de.parquet"))
	if err := os.Remove(files[1]); err != nil {
		t.Fatal(err)
	}
	before := everyTablesRows(t, e.dir)
	rep, err := archive.Compact(e.dir, archive.CompactOptions{Now: func() time.Time { return day(10, 1) }, Tables: []string{"x_bookmarks"}})
	if err != nil {
		t.Fatal(err)
	}
	if tc := rep.Tables[0]; tc.FilesBefore != 3 || tc.FilesAfter != 2 || len(tc.Merged) != 1 || tc.Merged[0].Files != 2 {
		t.Errorf("compaction: %+v", rep.Tables)
	}
	sameRows(t, "after compaction", everyTablesRows(t, e.dir), before)
}

// dropColumn writes the file at from, without column, to to.
func dropColumn(t *testing.T, from, column, to string) {
	t.Helper()
	sc, recs, _ := synctest.ReadParquet(t, from)
	i := sc.FieldIndices(column)[0]
	fields := slices.Delete(slices.Clone(sc.Fields()), i, i+1)
	md := sc.Metadata()
	out := arrow.NewSchema(fields, &md)
	w, err := pqfile.CreateWritten(to, out, pqfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		r2 := array.NewRecordBatch(out, slices.Delete(slices.Clone(r.Columns()), i, i+1), r.NumRows())
		if err := w.Write(r2); err != nil {
			t.Fatal(err)
		}
		r2.Release()
		r.Release()
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// A reader that runs while the archive is compacted (and exported to) sees
// every row of the table once, whenever it lists DIR/<table>/*.parquet: it
// lists either the old files or the new ones. A reader that listed the old
// files and opens one after the switch finds it gone ("no such file"),
// and reads again; it never reads a row twice nor misses one.
func TestReadersDuringCompactionSeeEveryRowOnce(t *testing.T) {
	e := newExporter(t, []demoUser{{id: "1001", bookmarks: 200}})
	e.exportAt(day(9, 1), day(9, 2))
	baseline := bookmarkKeys(t, parquetFiles(t, e.dir, "x_bookmarks"))

	var stop atomic.Bool
	var reads, gone atomic.Int64
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				keys, err := readKeys(filepath.Join(e.dir, "x_bookmarks", "*.parquet"))
				if errors.Is(err, fs.ErrNotExist) {
					gone.Add(1)
					continue
				}
				if err != nil {
					t.Errorf("a reader failed: %v", err)
					return
				}
				reads.Add(1)
				for k, n := range keys {
					if n > 1 {
						t.Errorf("a reader read %v %d times", k, n)
						return
					}
				}
				for k := range baseline {
					if keys[k] == 0 {
						t.Errorf("a reader missed %v", k)
						return
					}
				}
			}
		}()
	}
	for i := range 12 {
		e.exportAt(day(9, 3+i))
		if _, err := archive.Compact(e.dir, archive.CompactOptions{CurrentMonth: true, Now: func() time.Time { return day(9, 20) }}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(50 * time.Millisecond)
	stop.Store(true)
	wg.Wait()
	checkArchive(t, e.dir, e.sim, []demoUser{{id: "1001"}})
	t.Logf("%d whole reads, %d that found a listed file gone", reads.Load(), gone.Load())
	if reads.Load() == 0 {
		t.Error("no reader read the table")
	}
}

// A reader that opened DIR/<table> before a compaction's switch lists it
// after the switch: it still lists the whole old set. The set a compaction
// replaces stays, retired, until the next compaction, so that a listing
// running across the switch is never cut short (an empty listing is an
// empty table to DuckDB, with no error). A later export keeps it too.
func TestAListingStartedBeforeTheSwitchListsTheWholeOldSet(t *testing.T) {
	e := newExporter(t, []demoUser{{id: "1001", bookmarks: 50}})
	e.exportAt(day(9, 1), day(9, 2))
	compact := func() {
		t.Helper()
		if _, err := archive.Compact(e.dir, archive.CompactOptions{CurrentMonth: true, Now: func() time.Time { return day(9, 20) }}); err != nil {
			t.Fatal(err)
		}
	}
	for i, what := range []string{"the plain directory", "a generation"} {
		old := parquetFiles(t, e.dir, "x_bookmarks")
		d, err := os.Open(filepath.Join(e.dir, "x_bookmarks"))
		if err != nil {
			t.Fatal(err)
		}
		compact()
		e.exportAt(day(9, 3+i))
		names, err := d.Readdirnames(-1)
		d.Close()
		if err != nil {
			t.Fatal(err)
		}
		var listed []string
		for _, n := range names {
			if strings.HasSuffix(n, ".parquet") {
				listed = append(listed, n)
			}
		}
		slices.Sort(listed)
		var want []string
		for _, f := range old {
			want = append(want, filepath.Base(f))
		}
		if !slices.Equal(listed, want) {
			t.Errorf("%s listed across the switch: %v, want the old set %v", what, listed, want)
		}
	}
	// The second compaction removed the set the first retired.
	if gens := generations(e.dir, "x_bookmarks"); len(gens) != 1 {
		t.Errorf("generations %v beside the retired set, want the current one", gens)
	}
	if _, err := os.Lstat(filepath.Join(e.dir, ".x_bookmarks.swap")); err == nil {
		t.Error("the plain directory the first compaction replaced is left")
	}
}

// readKeys reads (user_id, post_id) of the files matching pattern, as a
// reader does: list, then open each file by its path.
func readKeys(pattern string) (map[[2]string]int, error) {
	paths, err := filepath.Glob(pattern)
	if err != nil {
		return nil, err
	}
	keys := map[[2]string]int{}
	for _, path := range paths {
		err := pqfile.ReadRecords(context.Background(), path, []string{"user_id", "post_id"}, func(rec arrow.RecordBatch) error {
			users := rec.Column(rec.Schema().FieldIndices("user_id")[0])
			posts := rec.Column(rec.Schema().FieldIndices("post_id")[0])
			for i := range int(rec.NumRows()) {
				keys[[2]string{users.ValueStr(i), posts.ValueStr(i)}]++
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return keys, nil
}
