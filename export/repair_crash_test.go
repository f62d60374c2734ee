package export_test

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/media"
)

// storedRowKeys are the rows of x_media_files that say stored, as "file
// key, user, post, media key", sorted: a row written twice is there twice.
func storedRowKeys(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	for _, r := range tableRows(t, dir, "x_media_files") {
		if r["status"] == string(media.Stored) {
			out = append(out, strings.Join([]string{r["file_key"], r["user_id"], r["post_id"], r["media_key"]}, " "))
		}
	}
	sort.Strings(out)
	return out
}

// TestKill9Repair kills `cq-source-x repair` at each of its steps (each file
// moved aside, each media file removed, the state written, the stopped
// run's leftovers removed) on an archive with a damaged file, a file of
// x_media_files removed, media files removed and overwritten, one no post
// uses and what a stopped run left. After each kill, repairing again and
// exporting leave it whole, as `check --read-data` finds it: every bookmark
// once, every row of x_media_files that said stored there once with its
// file, and DIR/media/.tmp empty.
func TestKill9Repair(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a few dozen processes")
	}
	users := []demoUser{{id: "1001", bookmarks: 30}, {id: "1002", bookmarks: 10}}
	sim, spec, _ := mediaSim(t, users)
	base := t.TempDir()
	n := 0
	newDir := func() string { n++; return filepath.Join(base, strconv.Itoa(n)) }

	template := newDir()
	for i := range 2 {
		sim.SeedBookmarks("1001", 20*i)
		if c := runChild(t, spec, template, 0, 0); c.killed || c.code != 0 {
			t.Fatal(c.output)
		}
	}
	whole := storedRowKeys(t, template)
	damage(t, template)
	repair := func(dir string) []string { return []string{"repair", "--out", dir, "--read-data"} }

	probe := newDir()
	copyDir(t, template, probe)
	clean := runCommand(t, repair(probe), 0, 0)
	if clean.killed || clean.code != 0 {
		t.Fatalf("clean repair: %s", clean.output)
	}
	kinds := map[string]bool{}
	for _, s := range clean.steps {
		kinds[strings.Fields(s)[1]] = true
	}
	for _, k := range []string{"moved", "removed", "temporary", "renamed", "uncommitted"} {
		if !kinds[k] {
			t.Fatalf("the repair took no %q step: %v", k, clean.steps)
		}
	}
	for k := 0; k <= len(clean.steps); k++ {
		dir := newDir()
		t.Run(fmt.Sprintf("kill-at-%d", k), func(t *testing.T) {
			t.Parallel()
			copyDir(t, template, dir)
			if k > 0 {
				if c := runCommand(t, repair(dir), k, 0); !c.killed {
					t.Fatalf("not killed at step %d: %s", k, c.output)
				}
			}
			if c := runCommand(t, repair(dir), 0, 0); c.killed || c.code != 0 {
				t.Fatalf("repair after a kill at step %d: %s", k, c.output)
			}
			if c := runChild(t, spec, dir, 0, 0); c.killed || c.code != 0 {
				t.Fatalf("export after the repair: %s", c.output)
			}
			if c := runCommand(t, []string{"check", "--out", dir, "--read-data"}, 0, 0); c.code != 0 {
				t.Fatalf("check after the repair and the export: %s", c.output)
			}
			if got := storedRowKeys(t, dir); !slices.Equal(got, whole) {
				t.Fatalf("%d rows say stored, want those of the whole archive, each once (%d)", len(got), len(whole))
			}
			checkArchive(t, dir, sim, users)
		})
	}
	t.Logf("killed the repair at each of its %d steps (%v)", len(clean.steps), clean.steps)
}

// damage does to the archive in dir what a hand or a stopped run may do:
// a file of x_api_usage cut short, the first file of x_media_files
// removed, a media file of each of its files removed and overwritten, a
// file no post uses, a media file being fetched and a run that did not
// commit left behind.
func damage(t *testing.T, dir string) {
	t.Helper()
	rows := parquetFiles(t, dir, "x_media_files")
	usage := parquetFiles(t, dir, "x_api_usage")
	keyOf := func(path string) string {
		for _, r := range tableRowsOf(t, path) {
			if r["status"] == string(media.Stored) {
				return filepath.Join(archive.MediaPath(dir), filepath.FromSlash(r["file_key"]))
			}
		}
		t.Fatalf("%s names no stored file", path)
		return ""
	}
	removed, overwritten := keyOf(rows[1]), keyOf(rows[0])
	unused := filepath.Join(archive.MediaPath(dir), "ab", "ab"+strings.Repeat("0", 62)+".jpg")
	data, err := os.ReadFile(overwritten)
	if err != nil {
		t.Fatal(err)
	}
	copy(data, "not the photo")
	for _, err := range []error{
		os.Remove(rows[0]), os.Remove(removed), os.Truncate(usage[0], 100), os.WriteFile(overwritten, data, 0o644),
		os.MkdirAll(filepath.Dir(unused), 0o755), os.WriteFile(unused, []byte("?"), 0o644),
		os.WriteFile(filepath.Join(archive.MediaPath(dir), ".tmp", "0123.part"), []byte("?"), 0o644),
		os.MkdirAll(filepath.Join(dir, ".staging", "0badc0de"), 0o755),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
}
