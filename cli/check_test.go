package cli

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/sandbox"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// storedRows are the rows of x_media_files that say stored, as (file key,
// user id, post id), sorted: a row written twice is there twice.
func storedRows(t *testing.T, out string) []string {
	t.Helper()
	files, err := sandbox.StoredFiles(out)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for key, uses := range files {
		for _, u := range uses {
			rows = append(rows, key+" "+u[0]+" "+u[1])
		}
	}
	sort.Strings(rows)
	return rows
}

// mediaFileOf is the path of a media file a row of the x_media_files file
// at path says stored.
func mediaFileOf(t *testing.T, out, path string) string {
	t.Helper()
	before, err := sandbox.StoredFiles(out)
	if err != nil {
		t.Fatal(err)
	}
	moved := filepath.Join(t.TempDir(), "moved")
	if err := os.Rename(path, moved); err != nil {
		t.Fatal(err)
	}
	after, err := sandbox.StoredFiles(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(moved, path); err != nil {
		t.Fatal(err)
	}
	for _, key := range slices.Sorted(maps.Keys(before)) {
		if len(after[key]) < len(before[key]) {
			return filepath.Join(archive.MediaPath(out), filepath.FromSlash(key))
		}
	}
	t.Fatalf("%s says no file stored", path)
	return ""
}

// check runs `check --out out args...` and returns its exit code and
// problem lines.
func check(t *testing.T, out string, args ...string) (int, string) {
	t.Helper()
	code, stdout, stderr := runCLI(t, append([]string{"check", "--out", out}, args...)...)
	if code != ExitOK && code != ExitSomeAccountsFailed {
		t.Fatalf("check: exit %d\n%s%s", code, stdout, stderr)
	}
	return code, stdout
}

// `check` names each thing of an archive that is not whole, on a line with
// the command that fixes it, and exits 3: a damaged file, the rows of a
// removed file of x_media_files, a media file removed, one overwritten
// (with --read-data), one no row names, what a stopped run left. `repair`
// fixes it all, the next export fetches again what it marked, and the
// archive is whole again: every row of x_media_files that says stored is
// there once, as before, with its file.
func TestCheckNamesWhatIsNotWholeAndRepairThenExportMakesItWhole(t *testing.T) {
	sim := startSim(t)
	sim.SeedBookmarks("1001", 30)
	dir, out := t.TempDir(), t.TempDir()
	spec := specFile(t, dir, sim.URL(), "media_files: {}", "accounts:", fmt.Sprintf("  - {user_id: \"1001\", access_token: %q}", sim.IssueToken("1001")))
	for i := range 2 {
		sim.SeedBookmarks("1001", 10*i)
		if code, _, stderr := runCLI(t, "export", "--spec", spec, "--out", out, "--quiet"); code != ExitOK {
			t.Fatalf("export: exit %d\n%s", code, stderr)
		}
	}
	if code, stdout := check(t, out, "--read-data"); code != ExitOK || !strings.Contains(stdout, "no problem") {
		t.Fatalf("a whole archive: exit %d\n%s", code, stdout)
	}
	whole := storedRows(t, out)

	rows, _ := filepath.Glob(filepath.Join(out, "x_media_files", "*.parquet"))
	usage, _ := filepath.Glob(filepath.Join(out, "x_api_usage", "*.parquet"))
	removed, overwritten := mediaFileOf(t, out, rows[1]), mediaFileOf(t, out, rows[0])
	unused := filepath.Join(archive.MediaPath(out), "ab", "ab"+strings.Repeat("0", 62)+".jpg")
	spool := filepath.Join(archive.MediaPath(out), ".tmp", "0123.part")
	for _, err := range []error{
		os.Remove(rows[0]), os.Remove(removed), os.Truncate(usage[0], 100),
		os.WriteFile(overwritten, append([]byte("not the photo"), make([]byte, fileSize(t, overwritten)-13)...), 0o644),
		os.MkdirAll(filepath.Dir(unused), 0o755), os.WriteFile(unused, []byte("?"), 0o644), os.WriteFile(spool, []byte("?"), 0o644),
		os.MkdirAll(filepath.Join(out, ".staging", "0badc0de"), 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	repair := "Fix: `cq-source-x repair --out " + out + "`"
	code, stdout := check(t, out)
	mustContain(t, stdout,
		usage[0]+": the footer cannot be read (", removed+": missing, which the archive says stored. "+repair,
		filepath.Join(out, "x_media_files")+": ", " media files have no row of their last status (a file of the table removed?). "+repair,
		unused+": no row of x_media_files names it, and no post of the state uses it. "+repair+", which removes it",
		filepath.Join(out, "media", ".tmp")+": 1 partial file a stopped run was fetching. "+repair,
		filepath.Join(out, ".staging", "0badc0de")+" holds the files of a run that did not commit. "+repair,
		"and the state of "+out+": 6 problems\n")
	if code != ExitSomeAccountsFailed || strings.Contains(stdout, overwritten) {
		t.Fatalf("check: exit %d\n%s", code, stdout)
	}
	code, stdout = check(t, out, "--read-data", "--json")
	var rep archive.CheckReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil || code != ExitSomeAccountsFailed || len(rep.Problems) != 7 ||
		!slices.ContainsFunc(rep.Problems, func(p archive.Problem) bool {
			return p.Where == overwritten && strings.Contains(p.What, "SHA-256") && strings.Contains(p.Fix, "repair --out "+out+" --read-data`")
		}) {
		t.Fatalf("check --read-data --json: exit %d, %v\n%s", code, err, stdout)
	}

	if code, stdout, stderr := runCLI(t, "repair", "--out", out, "--read-data"); code != ExitOK || !strings.Contains(stdout, "The archive is repaired.") {
		t.Fatalf("repair: exit %d\n%s%s", code, stdout, stderr)
	}
	// What is left is the next export's to do, and check says so.
	code, stdout = check(t, out, "--read-data")
	mustContain(t, stdout, removed+": missing, which the archive says stored. Fix: the next `cq-source-x export --spec FILE --out "+out+"`, which fetches it again")
	if code != ExitSomeAccountsFailed || strings.Contains(stdout, "cq-source-x repair") {
		t.Fatalf("check after the repair: exit %d\n%s", code, stdout)
	}
	if code, _, stderr := runCLI(t, "export", "--spec", spec, "--out", out, "--quiet"); code != ExitOK {
		t.Fatalf("export after the repair: exit %d\n%s", code, stderr)
	}
	if code, stdout := check(t, out, "--read-data"); code != ExitOK {
		t.Fatalf("check after the export: exit %d\n%s", code, stdout)
	}
	if again := storedRows(t, out); !slices.Equal(again, whole) {
		t.Fatalf("the stored rows are not those of the whole archive, each once:\n%d rows\nwant %d", len(again), len(whole))
	}
	if code, stdout, _ := runCLI(t, "repair", "--out", out); code != ExitOK || !strings.Contains(stdout, "Nothing to repair.") {
		t.Fatalf("repair of a whole archive: exit %d\n%s", code, stdout)
	}
}

func fileSize(t *testing.T, path string) int {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Size())
}

// check refuses a directory that holds no export (exit 1), and needs --out.
func TestCheckNeedsAnArchive(t *testing.T) {
	if code, _, stderr := runCLI(t, "check", "--out", t.TempDir()); code != ExitError || !strings.Contains(stderr, "holds no export: nothing to check") {
		t.Errorf("an empty directory: exit %d\n%s", code, stderr)
	}
	if code, _, stderr := runCLI(t, "check"); code != ExitUsage || !strings.Contains(stderr, `required flag(s) "out" not set`) {
		t.Errorf("no --out: exit %d\n%s", code, stderr)
	}
}

// A state lost beside its files is rebuilt by `repair` with the media files
// the rows of x_media_files say: the next export writes none of their rows
// again.
func TestARepairedLostStateWritesNoMediaRowTwice(t *testing.T) {
	_, spec, out := exportedWithMedia(t, "media_files: {}")
	whole := storedRows(t, out)
	repairLostState(t, out)
	if code, _, stderr := runCLI(t, "export", "--spec", spec, "--out", out, "--quiet"); code != ExitOK {
		t.Fatalf("export after the repair: exit %d\n%s", code, stderr)
	}
	if got := storedRows(t, out); !slices.Equal(got, whole) {
		t.Errorf("after the repair and an export, %d rows say stored, want the %d of before", len(got), len(whole))
	}
	if code, stdout := check(t, out, "--read-data"); code != ExitOK {
		t.Errorf("check after the repair and an export: exit %d\n%s", code, stdout)
	}
}

// A file too large for max_file_size is not requested again after a lost
// state.json is repaired, while max_file_size is what it was: the repair
// learns from its row's size the sizes it was refused under.
func TestARepairedLostStateRequestsNoTooLargeFileAgain(t *testing.T) {
	sim, spec, out := exportedWithMedia(t, "media_files: {max_file_size: 20KB}")
	tooLarge := tooLargePaths(t, out)
	if len(tooLarge) == 0 {
		t.Fatal("no file was too large: the test needs one")
	}
	repairLostState(t, out)
	before := len(sim.MediaRequests())
	if code, _, stderr := runCLI(t, "export", "--spec", spec, "--out", out, "--quiet"); code != ExitOK {
		t.Fatalf("export after the repair: exit %d\n%s", code, stderr)
	}
	for _, r := range sim.MediaRequests()[before:] {
		if tooLarge[r.Path] {
			t.Errorf("the export after the repair requested %s again, too large for the same max_file_size", r.Path)
		}
	}
}

// exportedWithMedia is an export to a new directory, of an account of 30
// bookmarks on a new simulator, with the media_files settings given.
func exportedWithMedia(t *testing.T, mediaFiles string) (*xsim.Server, string, string) {
	t.Helper()
	sim := startSim(t)
	sim.SeedBookmarks("1001", 30)
	dir, out := t.TempDir(), t.TempDir()
	spec := specFile(t, dir, sim.URL(), mediaFiles, "accounts:", fmt.Sprintf("  - {user_id: \"1001\", access_token: %q}", sim.IssueToken("1001")))
	if code, _, stderr := runCLI(t, "export", "--spec", spec, "--out", out, "--quiet"); code != ExitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	return sim, spec, out
}

// repairLostState deletes out's state.json and runs repair.
func repairLostState(t *testing.T, out string) {
	t.Helper()
	if err := os.Remove(filepath.Join(out, ".state", "state.json")); err != nil {
		t.Fatal(err)
	}
	if code, stdout, stderr := runCLI(t, "repair", "--out", out); code != ExitOK {
		t.Fatalf("repair: exit %d\n%s%s", code, stdout, stderr)
	}
}

// tooLargePaths are the URL paths of the rows of x_media_files in out of
// status too_large.
func tooLargePaths(t *testing.T, out string) map[string]bool {
	t.Helper()
	paths := map[string]bool{}
	err := archive.ReadRows(out, "x_media_files", []string{"status", "url"}, nil, func(c *archive.Cols, i int) {
		if c.Raw("status", i) == "too_large" {
			u, err := url.Parse(c.Str("url", i))
			if err != nil {
				t.Fatal(err)
			}
			paths[u.Path] = true
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return paths
}
