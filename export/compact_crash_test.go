package export_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// TestKill9Compact kills `cq-source-x compact` at every crash-safety step
// (each merged file written, each table's new generation staged, switched
// to, and its old files removed) and while the next run removes what the
// killed one left. After each kill, a reader of DIR/<table>/*.parquet sees
// every row of every table exactly once, as before the compaction, and the
// state is intact; compacting again finishes the job, and the export after
// it archives every bookmark once.
func TestKill9Compact(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns about a hundred processes")
	}
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 150, folders: 2}, {id: "1002", bookmarks: 20}}
	tokens := seed(sim, users)
	spec := filepath.Join(t.TempDir(), "spec.yml")
	if err := os.WriteFile(spec, []byte(specYAML(sim.URL(), users, tokens, `["*"]`)), 0o644); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	var n atomic.Int64
	newDir := func() string { return filepath.Join(base, strconv.FormatInt(n.Add(1), 10)) }

	// An archive of three runs, the template of every kill.
	template := newDir()
	for i := range 3 {
		sim.SeedBookmarks("1001", 5+i)
		if c := runChild(t, spec, template, 0, 0); c.killed || c.code != 0 {
			t.Fatal(c.output)
		}
	}
	before := everyTablesRows(t, template)
	compact := func(dir string) []string { return []string{"compact", "--out", dir, "--current-month"} }

	probe := newDir()
	copyDir(t, template, probe)
	clean := runCommand(t, compact(probe), 0, 0)
	if clean.killed || clean.code != 0 {
		t.Fatalf("clean compaction: %s", clean.output)
	}
	sameRows(t, "clean compaction", everyTablesRows(t, probe), before)
	steps := len(clean.steps)
	if steps < 12 {
		t.Fatalf("a compaction of 5 tables took only %d steps: %v", steps, clean.steps)
	}

	// afterKill checks what a reader sees right after a kill, then finishes
	// the compaction and exports once more.
	afterKill := func(t *testing.T, dir, what string) {
		sameRows(t, "a reader, "+what, everyTablesRows(t, dir), before)
		checkNotAhead(t, dir, users)
		if c := runCommand(t, compact(dir), 0, 0); c.killed || c.code != 0 {
			t.Fatalf("compacting again %s: %s", what, c.output)
		}
		sameRows(t, "compacted again "+what, everyTablesRows(t, dir), before)
		for _, table := range export.TableNames() {
			if files := parquetFiles(t, dir, table); len(files) != len(parquetFiles(t, probe, table)) {
				t.Errorf("%s: %d files after compacting again, the clean compaction left %d", table, len(files), len(parquetFiles(t, probe, table)))
			}
			if gens := generations(dir, table); len(gens) > 1 {
				t.Errorf("%s: generations %v left beside the retired set", table, gens)
			}
		}
		if _, err := os.Lstat(filepath.Join(dir, ".x_bookmarks.swap")); err == nil {
			t.Error("the switch's link is left")
		}
		if c := runChild(t, spec, dir, 0, 0); c.killed || c.code != 0 {
			t.Fatalf("export after compacting %s: %s", what, c.output)
		}
		checkArchive(t, dir, sim, users)
	}

	kinds := map[string]bool{}
	t.Run("kills", func(t *testing.T) {
		for k := 1; k <= steps; k++ {
			dir := newDir()
			copyDir(t, template, dir)
			c := runCommand(t, compact(dir), k, 0)
			if !c.killed {
				t.Fatalf("not killed at step %d of %d: %s", k, steps, c.output)
			}
			at := c.steps[len(c.steps)-1]
			kinds[strings.Fields(at)[1]] = true
			t.Run(fmt.Sprintf("kill-at-%d", k), func(t *testing.T) { afterKill(t, dir, "after a kill at "+at) })
		}
	})
	for _, k := range []string{"merged", "staged", "committed", "retired"} {
		if !kinds[k] {
			t.Errorf("no kill at a %q step (%v)", k, kinds)
		}
	}

	// A kill right after a switch, then kills of the next compaction at
	// each of its steps while it removes the rest, and goes on.
	for _, at := range []string{"compact staged x_bookmarks", "compact committed x_bookmarks"} {
		k := 0
		for i, s := range clean.steps {
			if s == at {
				k = i + 1
			}
		}
		dir := newDir()
		copyDir(t, template, dir)
		if c := runCommand(t, compact(dir), k, 0); !c.killed {
			t.Fatalf("not killed at %q", at)
		}
		for j := 1; j <= 3; j++ {
			c := runCommand(t, compact(dir), j, 0)
			if !c.killed {
				break
			}
			sameRows(t, fmt.Sprintf("a reader, after a kill at %q and one at step %d of the next run", at, j), everyTablesRows(t, dir), before)
		}
		afterKill(t, dir, "after kills at "+at+" and in the next runs")
	}
	t.Logf("killed at each of %d steps (%v)", steps, kinds)
}
