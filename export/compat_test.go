package export_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/bookmarks"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/test/synctest"
)

// fixtureWorld is the simulator as testdata/archive-v1 saw it (and
// plugin/testdata/state-v1.json): user 1001 with 60 bookmarks and a folder
// of 12 of them, then 5 more, on a virtual clock. The archive was written
// by the code of before the packages archive, cqspec and ids (two exports
// and a `bookmarks remove`).
func fixtureWorld(t *testing.T) (*clock.Virtual, *xsim.Server, string, string) {
	t.Helper()
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	ids := sim.SeedBookmarks("1001", 60)
	sim.CreateFolder("1001", "10011", "folder 1")
	for i := len(ids) - 1; i >= 0; i -= 5 {
		sim.AddToFolder("1001", "10011", ids[i])
	}
	token, app := sim.IssueToken("1001"), sim.IssueAppOnlyToken()
	sim.NewPostID() // the first export's compliance job took an id
	sim.SeedBookmarks("1001", 5)
	_ = sim.Unbookmark("1001", sim.Bookmarks("1001")[10]) // as `bookmarks remove` did
	return clk, sim, token, app
}

// fixtureWorldV2 is the simulator as testdata/archive-v2 saw it (and
// plugin/testdata/state-v2.json), written by main at 51419f4: user 1001
// with the content examples, 40 bookmarks and a folder of 8 of them; a
// first export (or sync) with media files and the compliance section
// (two jobs: posts, accounts); the long post deleted and 5 bookmarks
// more; a second one, which redacted the long post and removed its media
// files (two jobs more); then, for the archive, a `bookmarks remove` of
// the 11th bookmark.
func fixtureWorldV2(t *testing.T) (*clock.Virtual, *xsim.Server, xsim.ContentExamples, string, string) {
	t.Helper()
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	ex := sim.SeedContentExamples("1001")
	ids := sim.SeedBookmarks("1001", 40)
	sim.CreateFolder("1001", "10011", "folder 1")
	for i := len(ids) - 1; i >= 0; i -= 5 {
		sim.AddToFolder("1001", "10011", ids[i])
	}
	token, app := sim.IssueToken("1001"), sim.IssueAppOnlyToken()
	sim.NewPostID() // the first run's two compliance jobs took an id each
	sim.NewPostID()
	if err := sim.DeletePost(ex.LongPost); err != nil {
		t.Fatal(err)
	}
	sim.SeedBookmarks("1001", 5)
	sim.NewPostID() // and the second run's
	sim.NewPostID()
	return clk, sim, ex, token, app
}

// compatArchive is an archive written by an earlier version, and the
// simulator as it saw it.
type compatArchive struct {
	dir                         string
	archived, held, folderPosts int // the state's counts of user 1001
	world                       func(t *testing.T) (*clock.Virtual, *xsim.Server, string, string)
	spec                        string // spec lines beyond the accounts and compliance
	redacted                    string // a post the archive holds redacted
}

var compatArchives = []compatArchive{
	{dir: "archive-v1", archived: 65, held: 64, folderPosts: 12, world: fixtureWorld},
	{dir: "archive-v2", archived: 49, held: 48, folderPosts: 8, spec: allContentYAML + mediaYAML, redacted: "3101",
		world: func(t *testing.T) (*clock.Virtual, *xsim.Server, string, string) {
			clk, sim, _, token, app := fixtureWorldV2(t)
			_ = sim.Unbookmark("1001", sim.Bookmarks("1001")[10]) // as `bookmarks remove` did
			return clk, sim, token, app
		}},
}

// An archive written before reads after: its state loads, a repair finds
// nothing to repair, and the next export writes only the new bookmarks,
// billing no more than an incremental run does, with no key twice; a post
// it redacted stays redacted, and every media file its rows say stored is
// there.
func TestAnArchiveWrittenBeforeReadsAfter(t *testing.T) {
	for _, fx := range compatArchives {
		t.Run(fx.dir, func(t *testing.T) { fx.readsAfter(t) })
	}
}

func (fx compatArchive) readsAfter(t *testing.T) {
	clk, sim, token, app := fx.world(t)
	dir := filepath.Join(t.TempDir(), "archive")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", fx.dir))); err != nil {
		t.Fatal(err)
	}
	info, err := archive.ReadState(dir)
	if err != nil || len(info.Archived["1001"]) != fx.archived || len(info.HeldBookmarks["1001"]) != fx.held || len(info.HeldFolders["1001"]["10011"]) != fx.folderPosts {
		t.Fatalf("the state of before: %v", err)
	}
	if rep, err := archive.Repair(dir, archive.RepairOptions{DryRun: true, Tables: export.BookmarkTables()}); err != nil || rep.Changed || rep.StateProblem != "" {
		t.Fatalf("a repair of the archive of before: %+v, %v", rep, err)
	}
	changes, err := bookmarks.ReadChanges(dir)
	if err != nil || len(changes.Latest["1001"]) != 1 {
		t.Fatalf("the changes of before: %v", err)
	}

	sim.SeedBookmarks("1001", 3)
	clk.Set(time.Date(2026, 11, 1, 13, 0, 0, 0, time.UTC))
	spec := specYAML(sim.URL(), []demoUser{{id: "1001"}}, map[string]string{"1001": token}, `["*"]`) + fx.spec +
		fmt.Sprintf("    compliance:\n      bearer_token: %q\n      every: 0s\n", app)
	src, err := cqspec.Parse([]byte(spec), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	res, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Failed(); len(f) > 0 {
		t.Fatalf("failed: %v", f)
	}
	s := res.Summary()
	if a := s.Accounts[0]; a.BookmarksWritten != 3 || a.AlreadyArchived != 0 || a.PostsBilled > 3+2+6 {
		t.Errorf("the next export wrote %d bookmarks (%d already archived), billed %d posts; want the 3 new ones, billed as an incremental run is",
			a.BookmarksWritten, a.AlreadyArchived, a.PostsBilled)
	}
	dups, err := synctest.DuplicateKeys(dir)
	if err != nil {
		t.Fatal(err)
	}
	for table, keys := range dups {
		if len(keys) > 0 {
			t.Errorf("%s: %d keys twice", table, len(keys))
		}
	}
	if fx.redacted != "" {
		if row := rowOf(t, dir, "x_bookmarks", fx.redacted); row == nil || row["text"] != "" || row["post"] != "" {
			t.Errorf("the redacted post's row is %v", row)
		}
	}
	for _, row := range tableRows(t, dir, "x_media_files") {
		if row["status"] != "stored" {
			continue
		}
		if _, err := os.Stat(filepath.Join(archive.MediaPath(dir), filepath.FromSlash(row["file_key"]))); err != nil {
			t.Errorf("a stored file of post %s: %v", row["post_id"], err)
		}
	}
	if _, err := archive.Compact(dir, archive.CompactOptions{CurrentMonth: true}); err != nil {
		t.Errorf("compacting the archive of before: %v", err)
	}
}
