package e2e

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox"
)

// The sandbox demo's deleted bookmark is redacted in a destination as in
// its Parquet files: the demo's own spec (the one `cq-source-x sandbox`
// writes, with its compliance section), synced over gRPC into a destination
// that applies inserts by primary key and DeleteRecord messages, once
// before the demo's changes (Sandbox.Mutate) and once after. The bookmark's
// row keeps its key and dates, its content rows and the media files only it
// used are gone, and its tombstone is there.
func TestGRPCRedactsTheSandboxDemosDeletedBookmark(t *testing.T) {
	dir, err := os.MkdirTemp("", "cqx") // unix socket paths must be short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	t.Chdir(dir) // the demo's spec stores media files under the working directory
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC))
	sb, err := sandbox.Start(sandbox.Options{Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sb.Close)
	src, err := cqspec.Parse([]byte(sb.Spec("cq-source-x", true)), "sandbox.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	_, backend := startStateBackend(t, dir)
	dest := &destination{rows: map[string]map[string]map[string]string{}}
	sync := func() {
		clk.Advance(time.Hour)
		c, stop := servePlugin(t, dir, clk)
		defer stop()
		dest.archiveSync(t, c, src.PluginSpec, backend)
	}
	sync()
	deleted := sb.Mutate().Deleted
	before := dest.rowsOf("x_bookmarks", deleted)
	files := dest.rowsOf("x_media_files", deleted)
	if len(before) != 1 || before[0]["text"] == "" || len(dest.rowsOf("x_bookmark_authors", deleted)) != 1 || len(files) == 0 {
		t.Fatalf("first sync: the bookmark the demo deletes has rows %v and %d media files", before, len(files))
	}
	sync()
	after := dest.rowsOf("x_bookmarks", deleted)
	if len(after) != 1 {
		t.Fatalf("x_bookmarks rows of the deleted bookmark: %v", after)
	}
	for col, v := range after[0] {
		if _, kept := map[string]bool{"user_id": true, "post_id": true, "created_at": true, "first_seen_at": true,
			"bookmarked_after": true, "found_position": true, "_cq_id": true, "_cq_parent_id": true}[col]; !kept {
			t.Errorf("the redacted row keeps %s = %.40q", col, v)
		}
	}
	for _, table := range []string{"x_bookmark_authors", "x_bookmark_media", "x_bookmark_referenced_posts", "x_media_files"} {
		if rows := dest.rowsOf(table, deleted); len(rows) != 0 {
			t.Errorf("%s still holds %v", table, rows)
		}
	}
	used := map[string]bool{}
	for _, row := range dest.rows["x_media_files"] {
		used[row["file_key"]] = true
	}
	for _, f := range files {
		_, err := os.Stat(filepath.Join(dir, "cq-file-output", "media", filepath.FromSlash(f["file_key"])))
		if stored := err == nil; stored != used[f["file_key"]] {
			t.Errorf("media file %s of the deleted bookmark: stored %v, used by another row %v", f["file_key"], stored, used[f["file_key"]])
		}
	}
	if tomb := dest.rowsOf("x_post_compliance", deleted); len(tomb) != 1 || tomb[0]["reason"] != "deleted" {
		t.Errorf("tombstone %v", tomb)
	}
}
