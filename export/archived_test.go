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

	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
)

// An export keeps no record of archived post ids in its state: its written
// ids are that record. Its compliance check covers every post it wrote, the
// run's own (read once their rows are written) and those whose bookmark was
// removed since.
func TestTheComplianceCheckOfAnExportReadsItsWrittenIDs(t *testing.T) {
	clk, sim := startVirtualSim(t)
	users := []demoUser{{id: "1001", bookmarks: 12}}
	tokens := seed(sim, users)
	compliance := fmt.Sprintf("    compliance:\n      bearer_token: %q\n      every: 0s\n", sim.IssueAppOnlyToken())
	src, err := cqspec.Parse([]byte(specYAML(sim.URL(), users, tokens, `["*"]`)+compliance), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	first := sim.Bookmarks("1001")
	removed := first[3]
	for run := range 2 {
		if run == 1 {
			_ = sim.Unbookmark("1001", removed)
			sim.SeedBookmarks("1001", 2)
		}
		clk.Advance(time.Hour)
		if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk}); err != nil {
			t.Fatal(err)
		}
		state, err := os.ReadFile(filepath.Join(dir, ".state", "state.json"))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(state), "x_post_compliance/archived/") {
			t.Errorf("run %d: the state keeps archived post ids", run+1)
		}
	}
	jobs := sim.ComplianceJobsOf("tweets")
	if len(jobs) != 2 {
		t.Fatalf("%d compliance jobs, want one a run", len(jobs))
	}
	want := append(slices.Clone(first), sim.Bookmarks("1001")[:2]...)
	for i, n := range []int{12, 14} {
		if got := slices.Sorted(slices.Values(jobs[i].IDs)); !slices.Equal(got, slices.Sorted(slices.Values(want[:n]))) {
			t.Errorf("run %d checked %v, want the %d posts written", i+1, got, n)
		}
	}
}
