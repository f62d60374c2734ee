package export_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/media"
	"github.com/cq-source-x/cq-source-x/plan"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

var bookmarkContentTables = []string{"x_bookmark_authors", "x_bookmark_media", "x_bookmark_referenced_posts", "x_media_files"}

// reportedExport is an archive of the content examples whose second run's
// compliance check finds one bookmark deleted.
type reportedExport struct {
	dir    string
	post   string
	before map[string]string // its x_bookmarks row before
	res    *export.Result
	// files are the stored media files before, by key, with the posts that
	// use them.
	files map[string][]string
}

// examplesSpec starts the simulator with the content examples bookmarked by
// user 1001, and returns the spec of an archive of them with every kind of
// content, media files and the compliance section (on_change: onChange).
func examplesSpec(t *testing.T, onChange string) (*clock.Virtual, *xsim.Server, xsim.ContentExamples, *cqspec.Source) {
	t.Helper()
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	ex := sim.SeedContentExamples("1001")
	users := []demoUser{{id: "1001"}}
	text := specYAML(sim.URL(), users, seed(sim, users), `["*"]`) + allContentYAML + mediaYAML +
		fmt.Sprintf("    compliance:\n      bearer_token: %q\n      on_change: %s\n", sim.IssueAppOnlyToken(), onChange)
	src, err := cqspec.Parse([]byte(text), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	return clk, sim, ex, src
}

func exportDeletedExample(t *testing.T, onChange string) reportedExport {
	t.Helper()
	clk, sim, ex, src := examplesSpec(t, onChange)
	e := reportedExport{dir: t.TempDir(), post: ex.LongPost}
	for run := range 3 {
		if run == 1 {
			e.before = rowOf(t, e.dir, "x_bookmarks", e.post)
			e.files = storedFiles(t, e.dir)
			_ = sim.DeletePost(e.post)
			// A compaction retires a set of files that holds the post too.
			if _, err := archive.Compact(e.dir, archive.CompactOptions{CurrentMonth: true, Now: clk.Now}); err != nil {
				t.Fatal(err)
			}
			sim.SeedBookmarks("1001", 1)
			clk.Advance(time.Hour)
			if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: e.dir, Clock: clk}); err != nil {
				t.Fatal(err)
			}
			if _, err := archive.Compact(e.dir, archive.CompactOptions{CurrentMonth: true, Now: clk.Now}); err != nil {
				t.Fatal(err)
			}
		}
		clk.Advance(24 * time.Hour)
		res, err := export.Run(context.Background(), export.Options{Spec: src, Out: e.dir, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		if run == 1 {
			e.res = res
		} else if res.ComplianceRows != 0 {
			t.Errorf("run %d changed %d rows; only the run after the report acts", run+1, res.ComplianceRows)
		}
	}
	return e
}

// rowOf is the table's row of the post (nil: none); a second one fails.
func rowOf(t *testing.T, dir, table, post string) map[string]string {
	t.Helper()
	var out map[string]string
	for _, r := range tableRows(t, dir, table) {
		if r["post_id"] == post {
			if out != nil {
				t.Fatalf("%s holds post %s twice", table, post)
			}
			out = r
		}
	}
	return out
}

// The exporter redacts, in the files, a bookmark X reports deleted: its
// x_bookmarks row keeps its key and dates and nothing else, its rows of the
// content tables are gone, its tombstone stays, and no file the old rows
// were in is left on disk (a compaction's retired files neither). The next run changes nothing (applied once).
func TestExportRedactsAReportedBookmarkInPlace(t *testing.T) {
	e := exportDeletedExample(t, "redact")
	row := rowOf(t, e.dir, "x_bookmarks", e.post)
	if row == nil || e.before["full_text"] == "" {
		t.Fatalf("row before %v, after %v", e.before, row)
	}
	for col, v := range row {
		if !(plan.Edit{Keeps: keptWhenRedacted()}).Kept(col) {
			t.Errorf("the redacted row keeps %s = %.40q", col, v)
		}
	}
	for _, col := range []string{"user_id", "post_id", "created_at", "first_seen_at", "found_position", "_cq_id"} {
		if row[col] != e.before[col] {
			t.Errorf("%s is %q, was %q", col, row[col], e.before[col])
		}
	}
	for _, table := range bookmarkContentTables {
		if r := rowOf(t, e.dir, table, e.post); r != nil {
			t.Errorf("%s still holds %v", table, r)
		}
	}
	if rowOf(t, e.dir, "x_post_compliance", e.post) == nil || rowOf(t, e.dir, "x_bookmarks", "3102")["article_text"] == "" {
		t.Error("the tombstone, or another bookmark's content, is gone")
	}
	if e.res.ComplianceRows == 0 {
		t.Error("the result counts no row changed")
	}
	var summary strings.Builder
	e.res.Summary().WriteText(&summary)
	if want := fmt.Sprintf("compliance: %d rows of posts X reported redacted or removed in the files", e.res.ComplianceRows); !strings.Contains(summary.String(), want) {
		t.Errorf("the summary does not say %q:\n%s", want, summary.String())
	}
	noOldContent(t, e.dir, e.before["full_text"])
	mediaOfPostRemoved(t, e)
}

// storedFiles are the media files the committed state says stored, by
// key, with the posts that use them.
func storedFiles(t *testing.T, dir string) map[string][]string {
	t.Helper()
	info, err := archive.ReadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := archived.Unmarshal(info.Keys[account.RecordKey("1001")], "record")
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, f := range rec.Files {
		if f.Status == media.Stored && !slices.Contains(out[f.FileKey], f.PostID) {
			out[f.FileKey] = append(out[f.FileKey], f.PostID)
		}
	}
	return out
}

// mediaOfPostRemoved fails unless the files only the reported post used
// are gone from DIR/media, and every other one is there.
func mediaOfPostRemoved(t *testing.T, e reportedExport) {
	t.Helper()
	own := 0
	for key, posts := range e.files {
		_, err := os.Stat(filepath.Join(archive.MediaPath(e.dir), filepath.FromSlash(key)))
		switch {
		case len(posts) == 1 && posts[0] == e.post:
			own++
			if err == nil {
				t.Errorf("media file %s of the reported post is still stored", key)
			}
		case err != nil:
			t.Errorf("media file %s of posts %v: %v", key, posts, err)
		}
	}
	if own == 0 {
		t.Fatalf("the reported post had no media file of its own: %v", e.files)
	}
	for key, posts := range storedFiles(t, e.dir) {
		if slices.Contains(posts, e.post) {
			t.Errorf("the state still records file %s of the reported post", key)
		}
	}
}

// With on_change: delete, the exporter removes the bookmark's row too.
func TestExportDeletesAReportedBookmarkWhenAsked(t *testing.T) {
	e := exportDeletedExample(t, "delete")
	for _, table := range append([]string{"x_bookmarks"}, bookmarkContentTables...) {
		if r := rowOf(t, e.dir, table, e.post); r != nil {
			t.Errorf("%s still holds %v", table, r)
		}
	}
	if rowOf(t, e.dir, "x_post_compliance", e.post) == nil {
		t.Error("the tombstone is gone")
	}
}

// noOldContent fails when a file anywhere under dir holds text.
func noOldContent(t *testing.T, dir, text string) {
	t.Helper()
	_ = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || filepath.Ext(path) != ".parquet" {
			return err
		}
		for _, table := range append([]string{"x_bookmarks"}, bookmarkContentTables...) {
			if filepath.Base(filepath.Dir(path)) == table || filepath.Base(filepath.Dir(filepath.Dir(path))) == table {
				for _, r := range tableRowsOf(t, path) {
					if r["full_text"] == text {
						t.Errorf("%s still holds the redacted post's text", path)
					}
				}
			}
		}
		return nil
	})
}

// exportExamples archives the content examples in three runs a day apart,
// change called before the second, and fails unless only the second
// changes rows of the files.
func exportExamples(t *testing.T, change func(dir string, sim *xsim.Server, ex xsim.ContentExamples)) (string, xsim.ContentExamples) {
	t.Helper()
	clk, sim, ex, src := examplesSpec(t, "redact")
	dir := t.TempDir()
	for run := range 3 {
		if run == 1 {
			change(dir, sim, ex)
		}
		clk.Advance(24 * time.Hour)
		res, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk})
		if err != nil {
			t.Fatal(err)
		}
		if (run == 1) != (res.ComplianceRows > 0) {
			t.Errorf("run %d changed %d rows; only the run after the report acts", run+1, res.ComplianceRows)
		}
	}
	return dir, ex
}

// rowsWhere are the table's rows whose column holds value.
func rowsWhere(t *testing.T, dir, table, column, value string) []map[string]string {
	var out []map[string]string
	for _, r := range tableRows(t, dir, table) {
		if r[column] == value {
			out = append(out, r)
		}
	}
	return out
}

// The exporter removes from the files a post a bookmark quotes once its
// author deletes it: its rows of x_bookmark_referenced_posts, its media's
// rows of x_media_files and their files in DIR/media; the bookmark that
// quotes it keeps all of its own, and the post's tombstone lands in
// x_post_compliance. The run after changes nothing (applied once).
func TestExportRemovesAReferencedPostItsAuthorDeleted(t *testing.T) {
	var files []map[string]string
	dir, ex := exportExamples(t, func(dir string, sim *xsim.Server, ex xsim.ContentExamples) {
		files = rowsWhere(t, dir, "x_media_files", "media_post_id", ex.Quoted)
		if len(files) == 0 || len(rowsWhere(t, dir, "x_bookmark_referenced_posts", "referenced_post_id", ex.Quoted)) != 1 {
			t.Fatal("the first run archived no referenced row or media file of the quoted post")
		}
		_ = sim.DeletePost(ex.Quoted)
	})
	for _, q := range [][2]string{{"x_bookmark_referenced_posts", "referenced_post_id"}, {"x_media_files", "media_post_id"}} {
		if rows := rowsWhere(t, dir, q[0], q[1], ex.Quoted); len(rows) != 0 {
			t.Errorf("%s still holds the deleted post: %v", q[0], rows)
		}
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(archive.MediaPath(dir), filepath.FromSlash(f["file_key"]))); err == nil {
			t.Errorf("media file %s of the deleted post is still stored", f["file_key"])
		}
	}
	noOldContent(t, dir, "the quoted post, with a photo")
	if row := rowOf(t, dir, "x_bookmarks", ex.LongPost); row == nil || row["full_text"] != ex.LongText || rowOf(t, dir, "x_post_compliance", ex.Quoted) == nil {
		t.Errorf("the quoting bookmark's row %v, or the tombstone, is not there", row)
	}
}

// The exporter removes all an account wrote once X's job of accounts
// reports it, even when the jobs of posts say nothing of its posts: its
// bookmarked posts are redacted, its posts that bookmarks reference leave
// x_bookmark_referenced_posts, and no file keeps its profile.
func TestExportRemovesWhatAnAccountReportedByTheJobOfAccountsWrote(t *testing.T) {
	dir, ex := exportExamples(t, func(_ string, sim *xsim.Server, ex xsim.ContentExamples) {
		if err := sim.SetUserCompliance(ex.Authors[1], "suspended"); err != nil {
			t.Fatal(err)
		}
	})
	for _, table := range []string{"x_bookmark_authors", "x_bookmark_referenced_posts"} {
		if rows := rowsWhere(t, dir, table, "author_id", ex.Authors[1]); len(rows) != 0 {
			t.Errorf("%s still holds what the account wrote: %v", table, rows)
		}
	}
	for _, post := range []string{ex.ArticlePost, ex.ReplyToDeleted} {
		if row := rowOf(t, dir, "x_bookmarks", post); row == nil || row["text"] != "" || row["author"] != "" {
			t.Errorf("bookmark %s of the account: %v", post, row)
		}
	}
	if row := rowOf(t, dir, "x_bookmarks", ex.LongPost); row == nil || row["full_text"] != ex.LongText {
		t.Errorf("another author's bookmark changed: %v", row)
	}
}

// An archive written before the runs recorded the posts bookmarks reference
// and the authors of all (its record holds its bookmarks alone, as the
// record made from an earlier version's state does) has them read from its
// files by its next run with the compliance section: a quoted post its
// author deleted since is removed all the same.
func TestAnArchiveFromBeforeTheRecordsHasItsReferencedPostsChecked(t *testing.T) {
	key := account.RecordKey("1001")
	dir, ex := exportExamples(t, func(dir string, sim *xsim.Server, ex xsim.ContentExamples) {
		st, err := archive.Load(dir)
		if err != nil {
			t.Fatal(err)
		}
		rec, err := archived.Unmarshal(st.Keys[key], "record")
		if err != nil || len(rec.Referenced()) == 0 {
			t.Fatalf("the first run recorded no referenced post: %v", err)
		}
		before, err := archived.Migrate(archived.Legacy{Bookmarks: rec.Bookmarks()}, "record")
		if err == nil {
			st.Keys[key], err = before.Marshal()
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := archive.SaveState(dir, st, func(string) {}, "test"); err != nil {
			t.Fatal(err)
		}
		_ = sim.DeletePost(ex.Quoted)
	})
	if rows := rowsWhere(t, dir, "x_bookmark_referenced_posts", "referenced_post_id", ex.Quoted); len(rows) != 0 {
		t.Errorf("x_bookmark_referenced_posts still holds the deleted post: %v", rows)
	}
	st, err := archive.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := archived.Unmarshal(st.Keys[key], "record"); err != nil || !rec.AuthorsKept() || len(rec.Referenced()) == 0 {
		t.Errorf("the record was not kept whole after the run that read it from the files: %v", err)
	}
}

// keptWhenRedacted are the columns x_bookmarks declares a redacted row keeps.
func keptWhenRedacted() []string {
	for _, h := range resources.Holdings() {
		if h.Table == resources.BookmarksTable {
			return h.Keeps
		}
	}
	return nil
}
