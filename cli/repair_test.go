package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// An export whose state was deleted beside its files refuses to run and
// names `cq-source-x repair --out DIR`; that command (after a dry run that
// changes nothing) rebuilds the state, says what the next export costs,
// and the export then runs, writing nothing twice.
func TestRepairCommandRebuildsALostState(t *testing.T) {
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks("1001", 12)
	spec := writeSpec(t, sim.URL(), [][2]string{{"1001", sim.IssueToken("1001")}})
	out := t.TempDir()
	if code, _, stderr := runCLI(t, "export", "--spec", spec, "--out", out, "--quiet"); code != 0 {
		t.Fatalf("first export: exit %d\n%s", code, stderr)
	}
	if err := os.Remove(filepath.Join(out, ".state", "state.json")); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(t, "export", "--spec", spec, "--out", out, "--quiet")
	if code != 1 || !strings.Contains(stderr, "Run `cq-source-x repair --out "+out+"`") {
		t.Fatalf("export with a lost state: exit %d\n%s", code, stderr)
	}

	code, stdout, stderr := runCLI(t, "repair", "--out", out, "--dry-run")
	if code != 0 || !strings.Contains(stdout, "Dry run: nothing was changed") {
		t.Fatalf("repair --dry-run: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(out, ".state", "state.json")); err == nil {
		t.Fatal("a dry run wrote a state")
	}
	code, stdout, stderr = runCLI(t, "repair", "--out", out)
	for _, want := range []string{"is missing, but the directory holds exported files", "1 x_bookmarks file(s) hold 12 post(s) of 1 account(s)",
		"The archive is repaired.", "reads every list of every account in full once", "no row is written twice"} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Fatalf("repair: exit %d, output lacks %q:\n%s%s", code, want, stdout, stderr)
		}
	}
	code, _, stderr = runCLI(t, "export", "--spec", spec, "--out", out)
	if code != 0 || !strings.Contains(stderr, "x_bookmarks rows written: 0 (12 posts read were already in the archive and not written again)") {
		t.Fatalf("export after the repair: exit %d\n%s", code, stderr)
	}
	if code, stdout, _ := runCLI(t, "repair", "--out", out); code != 0 || !strings.Contains(stdout, "Nothing to repair.") {
		t.Errorf("repair of a sound directory: exit %d\n%s", code, stdout)
	}
	if code, _, stderr := runCLI(t, "repair"); code != ExitUsage || !strings.Contains(stderr, `required flag(s) "out" not set`) {
		t.Errorf("repair without --out: exit %d\n%s", code, stderr)
	}
}

// A file of the archive cut short (its footer gone) is named by every
// export (exit 3, the accounts still exported), by `status --out` (exit 3)
// and by `repair`, each with the command that repairs it; the repair moves
// it aside, and the next export fetches again what it held.
func TestADamagedFileIsNamedWithItsRepair(t *testing.T) {
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks("1001", 12)
	spec := writeSpec(t, sim.URL(), [][2]string{{"1001", sim.IssueToken("1001")}})
	out := t.TempDir()
	if code, _, stderr := runCLI(t, "export", "--spec", spec, "--out", out, "--quiet"); code != 0 {
		t.Fatalf("first export: exit %d\n%s", code, stderr)
	}
	files, _ := filepath.Glob(filepath.Join(out, "x_bookmarks", "*.parquet"))
	if err := os.Truncate(files[0], 200); err != nil {
		t.Fatal(err)
	}
	repair := "Run `cq-source-x repair --out " + out + "`: it moves the file to " + filepath.Join(out, ".damaged", "x_bookmarks")
	sim.SeedBookmarks("1001", 2)
	code, _, stderr := runCLI(t, "export", "--spec", spec, "--out", out)
	if code != ExitSomeAccountsFailed || !strings.Contains(stderr, "DAMAGED "+files[0]+": the footer cannot be read (parquet: ") ||
		!strings.Contains(stderr, repair) || !strings.Contains(stderr, "x_bookmarks rows written: 2") {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "status", "--spec", spec, "--out", out, "--no-refresh")
	if code != ExitSomeAccountsFailed || !strings.Contains(stdout, "DAMAGED "+files[0]) || !strings.Contains(stdout, repair) {
		t.Fatalf("status: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = runCLI(t, "repair", "--out", out)
	if code != 0 || !strings.Contains(stdout, "damaged: "+files[0]) || !strings.Contains(stdout, "moved to "+filepath.Join(out, ".damaged", "x_bookmarks")) {
		t.Fatalf("repair: exit %d\n%s", code, stdout)
	}
	code, _, stderr = runCLI(t, "export", "--spec", spec, "--out", out)
	if code != 0 || !strings.Contains(stderr, "x_bookmarks rows written: 12") {
		t.Fatalf("export after the repair: exit %d\n%s", code, stderr)
	}
}
