package export_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// TestKill9AcrossTheComplianceRewrite kills the exporter at every step of
// the rewrite that redacts a bookmark X reported deleted (each table's new
// generation staged, switched to, its old files removed, the state saved).
// After each kill a reader sees every bookmark once, the post's row
// redacted or not, never twice nor missing; the next run finishes: the row
// redacted, its content rows gone, in no file on disk.
func TestKill9AcrossTheComplianceRewrite(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a few dozen processes")
	}
	sim := xsim.New(xsim.Options{DisableRateLimits: true, Compliance: xsim.ComplianceOptions{Delay: 50 * time.Millisecond}})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	ex := sim.SeedContentExamples("1001")
	users := []demoUser{{id: "1001", bookmarks: 20}}
	spec := filepath.Join(t.TempDir(), "spec.yml")
	text := specYAML(sim.URL(), users, seed(sim, users), `["*"]`) + allContentYAML +
		fmt.Sprintf("    compliance:\n      bearer_token: %q\n      every: 0s\n", sim.IssueAppOnlyToken())
	if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	template := filepath.Join(t.TempDir(), "template")
	if c := runChild(t, spec, template, 0, 0); c.killed || c.code != 0 {
		t.Fatal(c.output)
	}
	post := ex.LongPost
	text0 := rowOf(t, template, "x_bookmarks", post)["full_text"]
	if err := sim.DeletePost(post); err != nil {
		t.Fatal(err)
	}

	probe := filepath.Join(t.TempDir(), "probe")
	copyDir(t, template, probe)
	clean := runChild(t, spec, probe, 0, 0)
	if clean.killed || clean.code != 0 {
		t.Fatalf("clean run: %s", clean.output)
	}
	first, last := -1, -1
	for i, s := range clean.steps {
		if strings.HasPrefix(s, "compliance staged ") || (first > 0 && strings.HasPrefix(s, "compliance ")) {
			if first < 0 {
				first = i + 1
			}
			last = i + 1
		}
	}
	if first < 0 || clean.steps[last-1] != "compliance applied" {
		t.Fatalf("no rewrite steps in %v", clean.steps)
	}
	t.Logf("killing at each of %v", clean.steps[first-1:last])
	redacted(t, probe, post, text0)

	for k := first; k <= last; k++ {
		dir := filepath.Join(t.TempDir(), "out")
		copyDir(t, template, dir)
		c := runChild(t, spec, dir, k, 0)
		if !c.killed {
			t.Fatalf("not killed at step %d: %s", k, c.output)
		}
		at := c.steps[len(c.steps)-1]
		keys := bookmarkKeys(t, parquetFiles(t, dir, "x_bookmarks"))
		for key, n := range keys {
			if n != 1 {
				t.Errorf("after a kill at %q: bookmark %v is in %d files", at, key, n)
			}
		}
		if keys[[2]string{"1001", post}] != 1 {
			t.Errorf("after a kill at %q: the reported bookmark is in no file", at)
		}
		checkNotAhead(t, dir, users)
		if again := runChild(t, spec, dir, 0, 0); again.killed || again.code != 0 {
			t.Fatalf("re-run after a kill at %q: %s", at, again.output)
		}
		redacted(t, dir, post, text0)
		checkArchive(t, dir, sim, users)
	}
}

// redacted fails unless the post's x_bookmarks row is redacted, its
// content rows are gone, and no file under dir holds its text.
func redacted(t *testing.T, dir, post, text string) {
	t.Helper()
	if r := rowOf(t, dir, "x_bookmarks", post); r == nil || r["full_text"] != "" || r["post"] != "" {
		t.Errorf("x_bookmarks row %v, want it redacted", r)
	}
	for _, table := range bookmarkContentTables {
		if r := rowOf(t, dir, table, post); r != nil {
			t.Errorf("%s still holds %v", table, r)
		}
	}
	noOldContent(t, dir, text)
}
