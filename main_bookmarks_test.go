package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// The archive's commands through the binary: export, a dry-run and a real
// bookmarks remove, a bookmarks add that restores the removal, compact,
// and an export after them.
func TestTheArchiveCommandsThroughTheBinary(t *testing.T) {
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks("1001", 50)
	dir := t.TempDir()
	spec := filepath.Join(dir, "x.yml")
	text := "kind: source\nspec:\n  name: x\n  path: ./cq-source-x\n  registry: local\n  tables: [\"*\"]\n  destinations: [\"file\"]\n  spec:\n" +
		"    base_url: " + sim.URL() + "\n    accounts:\n      - user_id: \"1001\"\n        access_token: \"" + sim.IssueToken("1001") + "\"\n"
	if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "archive")
	must := func(want string, args ...string) string {
		t.Helper()
		code, stdout, stderr := run(t, args...)
		if code != 0 || !strings.Contains(stdout+stderr, want) {
			t.Fatalf("%v: exit %d, want %q in:\n%s\n%s", args, code, want, stdout, stderr)
		}
		return stdout
	}
	must("", "export", "--spec", spec, "--out", out, "--quiet")
	removed := sim.Bookmarks("1001")[40:]
	ids := filepath.Join(dir, "ids.txt")
	os.WriteFile(ids, []byte(strings.Join(removed, "\n")), 0o644)

	must("Dry run: nothing was removed", "bookmarks", "remove", "--spec", spec, "--out", out, "--ids", ids)
	if len(sim.Bookmarks("1001")) != 50 {
		t.Fatal("the dry run removed bookmarks")
	}
	must("removed 10 of 10, recorded in x_bookmark_changes", "bookmarks", "remove", "--spec", spec, "--out", out, "--ids", ids, "--yes")
	for _, id := range removed {
		if slices.Contains(sim.Bookmarks("1001"), id) {
			t.Errorf("%s is still bookmarked", id)
		}
	}
	must("added 10 of 10", "bookmarks", "add", "--spec", spec, "--out", out, "--ids", ids, "--yes")
	must("", "export", "--spec", spec, "--out", out, "--quiet")
	must("Compacted:", "compact", "--out", out, "--current-month")
	must("", "export", "--spec", spec, "--out", out, "--quiet")
	if fi, err := os.Lstat(filepath.Join(out, "x_api_usage")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("x_api_usage is not a link to its generation after compact: %v", err)
	}

	code, _, stderr := run(t, "bookmarks", "remvoe")
	if code != 2 || !strings.Contains(stderr, "Did you mean this?\n\tremove") {
		t.Errorf("bookmarks remvoe: exit %d: %s", code, stderr)
	}
}
