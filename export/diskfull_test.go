package export_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/cq-source-x/cq-source-x/archive"
)

// The disk-full tests have the kernel answer ENOSPC, as a full disk does,
// through Linux's /dev/full: a file being written is swapped for it under
// its descriptor, a file about to be written is a symbolic link to it.

// fillOpenFile makes every later write to the open file whose path ends in
// suffix fail with ENOSPC.
func fillOpenFile(t *testing.T, suffix string) {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil || !strings.HasSuffix(target, suffix) {
			continue
		}
		full, err := syscall.Open("/dev/full", syscall.O_WRONLY, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer syscall.Close(full)
		fd, err := strconv.Atoi(e.Name())
		if err != nil {
			t.Fatal(err)
		}
		if err := syscall.Dup3(full, fd, syscall.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Fatalf("no open file ends in %s", suffix)
}

// fillNextFile makes the writes to path, once opened, fail with ENOSPC.
func fillNextFile(t *testing.T, path string) {
	t.Helper()
	if err := os.Symlink("/dev/full", path); err != nil {
		t.Fatal(err)
	}
}

// A full disk, while x_bookmarks is written, while the state is committed
// or while the run is marked published, is said as such, naming the file;
// a run that did not commit leaves the state and the files as they were
// (and no temporary file taking space), a committed one is published by
// the next run; once there is space again, the next run completes the
// archive with no row twice.
func TestAFullDiskIsSaidAndTheNextRunCompletesTheArchive(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs Linux's /dev/full")
	}
	for _, c := range []struct {
		name, at  string
		fill      func(t *testing.T, dir string)
		file      string
		committed bool
	}{
		{"writing x_bookmarks", "write x_bookmarks", func(t *testing.T, _ string) { fillOpenFile(t, "/x_bookmarks.parquet") }, "/x_bookmarks.parquet", false},
		{"committing", "staging synced", func(t *testing.T, dir string) { fillNextFile(t, filepath.Join(dir, ".state", "state.json.tmp")) }, "/.state/state.json.tmp", false},
		{"marking published", "published files synced", func(t *testing.T, dir string) { fillNextFile(t, filepath.Join(dir, ".state", "state.json.tmp")) }, "/.state/state.json.tmp", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			a := newExportDir(t, demoUser{id: "1001", bookmarks: 20_000, folders: 1}, demoUser{id: "1002", bookmarks: 30})
			a.mustRun()
			added := a.sim.SeedBookmarks("1001", 5000)
			before := a.readState()
			filesBefore := parquetFiles(t, a.dir, "x_bookmarks")
			filled := false
			_, err := a.run(func(step string) {
				if step == c.at && !filled {
					filled = true
					c.fill(t, a.dir)
				}
			})
			var full *archive.DiskFullError
			if !errors.As(err, &full) || !errors.Is(err, syscall.ENOSPC) || full.Committed != c.committed ||
				!strings.HasPrefix(err.Error(), "the disk is full (no space left on device) writing "+a.dir) || !strings.Contains(err.Error(), c.file) {
				t.Fatalf("got %v; want the disk full, writing %s", err, c.file)
			}
			t.Log(err)
			if _, err := os.Lstat(filepath.Join(a.dir, ".state", "state.json.tmp")); err == nil {
				t.Error("the temporary state file is left, taking space")
			}
			if !c.committed {
				if !bytes.Equal(a.readState(), before) || len(parquetFiles(t, a.dir, "x_bookmarks")) != len(filesBefore) {
					t.Error("a run that did not commit changed the state or the files")
				}
				if entries, _ := os.ReadDir(filepath.Join(a.dir, ".staging")); len(entries) > 0 {
					t.Errorf("a run that did not commit left staged files: %v", entries)
				}
			}
			s := a.mustRun()
			want := 5000
			if c.committed {
				want = 0 // the committed run wrote them; this one published it
				if s.Recovered == nil || s.Recovered.PublishedRun == "" {
					t.Error("the next run did not finish publishing the committed run")
				}
			}
			if s.Totals.BookmarksWritten != want {
				t.Errorf("the next run wrote %d rows, want %d", s.Totals.BookmarksWritten, want)
			}
			if keys := checkArchive(t, a.dir, a.sim, a.users); keys[[2]string{"1001", added[0]}] != 1 {
				t.Errorf("post %s is not archived", added[0])
			}
		})
	}
}
