package archive_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// archiveOf returns an archive in a new directory and a function that
// adds n bookmarks to the list and exports it a day later, calling step at
// each step of the export's protocol.
func archiveOf(t *testing.T) (dir string, export1 func(n int, step func(string))) {
	t.Helper()
	clk := clock.NewVirtual(time.Date(2026, 9, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	spec := fmt.Sprintf("kind: source\nspec:\n  name: x\n  path: ./x\n  registry: local\n  version: v0.0.0\n  tables: [\"*\"]\n  destinations: [\"file\"]\n"+
		"  spec:\n    base_url: %q\n    accounts:\n      - {user_id: \"1001\", access_token: %q}\n", sim.URL(), sim.IssueToken("1001"))
	src, err := cqspec.Parse([]byte(spec), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir = t.TempDir()
	return dir, func(n int, step func(string)) {
		t.Helper()
		sim.SeedBookmarks("1001", n)
		clk.Advance(24 * time.Hour)
		if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk, Step: step}); err != nil {
			t.Fatal(err)
		}
	}
}

// posts reads the post ids of a snapshot's x_bookmarks, with the times
// each is read.
func posts(t *testing.T, snap *archive.Snapshot) map[string]int {
	t.Helper()
	out := map[string]int{}
	err := snap.Read("x_bookmarks", []string{"post_id"}, func(rec arrow.RecordBatch) error {
		ids, ok := archive.Column[*array.String](rec, "post_id")
		if !ok {
			t.Fatal("no post_id column")
		}
		for i := range ids.Len() {
			out[ids.Value(i)]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func snapshot(t *testing.T, dir string) *archive.Snapshot {
	t.Helper()
	snap, err := archive.OpenSnapshot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(snap.Close)
	return snap
}

// A snapshot taken before a compaction reads, after it, the set of files
// it listed, each row once: it holds the table's directory open, which
// the compaction retires.
func TestASnapshotReadsTheFilesItListedAcrossACompaction(t *testing.T) {
	dir, exportDay := archiveOf(t)
	exportDay(30, nil)
	exportDay(20, nil)
	snap := snapshot(t, dir)
	if n := snap.Files("x_bookmarks"); n != 2 {
		t.Fatalf("%d files of x_bookmarks, want 2", n)
	}
	if _, err := archive.Compact(dir, archive.CompactOptions{CurrentMonth: true}); err != nil {
		t.Fatal(err)
	}
	exportDay(5, nil)
	got := posts(t, snap)
	if len(got) != 50 || slices.Max(slices.Collect(maps.Values(got))) != 1 {
		t.Errorf("read %d posts (%v), want the 50 of the snapshot once each", len(got), got)
	}
	if n := len(posts(t, snapshot(t, dir))); n != 55 {
		t.Errorf("a new snapshot reads %d posts, want 55", n)
	}
}

// A snapshot reads a run once it is committed, whole, whether its files
// are still staged or published, and not a run committed after the state
// it was taken of.
func TestASnapshotReadsTheCommittedRunsWhole(t *testing.T) {
	dir, exportDay := archiveOf(t)
	exportDay(10, nil)
	state := filepath.Join(dir, ".state", "state.json")
	before, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	steps := 0
	exportDay(5, func(step string) {
		switch step {
		case "committed", "published x_bookmarks", "marked published":
			steps++
			if n := len(posts(t, snapshot(t, dir))); n != 15 {
				t.Errorf("%s: a snapshot reads %d posts, want 15", step, n)
			}
		}
	})
	if steps != 3 {
		t.Fatalf("%d of the steps seen", steps)
	}
	// A snapshot that read the state before the second run committed, and
	// listed the files after it published them, reads the first run only.
	if err := os.WriteFile(state, before, 0o644); err != nil {
		t.Fatal(err)
	}
	if n := len(posts(t, snapshot(t, dir))); n != 10 {
		t.Errorf("a snapshot of the state before the second run reads %d posts, want 10", n)
	}
}
