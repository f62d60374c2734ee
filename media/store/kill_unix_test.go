//go:build unix

package store

import (
	"bytes"
	"context"
	"crypto/rand"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// The kill tests run a child process (this test binary, TestKillChild)
// that stores a file and is killed with SIGKILL at one step of it; the
// parent then checks what a reader sees, and that the next store finishes
// the job.

const (
	envKillAt  = "MEDIA_STORE_KILL_AT"
	envKillURL = "MEDIA_STORE_KILL_URL"
	envKillSrc = "MEDIA_STORE_KILL_SOURCE"
	// midWrite kills the child with half the file written to its spool.
	midWrite = "mid-write"
	source   = "https://video.twimg.com/ext_tw_video/1/pu/vid/1280x720/a.mp4"
)

func TestKillChild(t *testing.T) {
	at := os.Getenv(envKillAt)
	if at == "" {
		t.Skip("run by the kill tests")
	}
	s, err := Open(context.Background(), os.Getenv(envKillURL))
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(os.Getenv(envKillSrc))
	if err != nil {
		t.Fatal(err)
	}
	kill := func() { syscall.Kill(os.Getpid(), syscall.SIGKILL); select {} }
	s.step = func(name string) {
		if name == at {
			kill()
		}
	}
	sp, err := s.NewSpool()
	if err != nil {
		t.Fatal(err)
	}
	sp.Write(data[:len(data)/2])
	if at == midWrite {
		kill()
	}
	sp.Write(data[len(data)/2:])
	if _, err := s.Commit(context.Background(), sp, source, "video/mp4", now); err != nil {
		t.Fatal(err)
	}
	t.Fatalf("step %q never came", at)
}

// killAt runs the child, which must die by SIGKILL.
func killAt(t *testing.T, storeURL, src, step string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKillChild$")
	// A killed child cannot remove its spool: it is left in a directory the test removes.
	cmd.Env = append(os.Environ(), envKillAt+"="+step, envKillURL+"="+storeURL, envKillSrc+"="+src, "TMPDIR="+t.TempDir())
	out, err := cmd.CombinedOutput()
	ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Fatalf("the child was not killed at %q: %v\n%s", step, err, out)
	}
}

func testFile(t *testing.T) (path string, data []byte) {
	data = make([]byte, 3<<20)
	rand.Read(data)
	path = filepath.Join(t.TempDir(), "source")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path, data
}

func TestAKillAtAnyStepLeavesNoPartialFileInADirectory(t *testing.T) {
	src, data := testFile(t)
	key := sum(data)[:2] + "/" + sum(data) + ".mp4"
	for _, step := range []string{midWrite, "spool synced", "file renamed", "file stored", "index renamed", "indexed"} {
		t.Run(step, func(t *testing.T) {
			root := t.TempDir()
			killAt(t, "file://"+filepath.ToSlash(root), src, step)
			// A reader sees the whole file or none.
			err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() || strings.Contains(p, string(filepath.Separator)+spoolDir+string(filepath.Separator)) || strings.Contains(p, indexDir) {
					return err
				}
				got, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				if rel, _ := filepath.Rel(root, p); filepath.ToSlash(rel) != key || !bytes.Equal(got, data) {
					t.Errorf("after a kill at %q, %s holds %d bytes, not the whole file", step, rel, len(got))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			// The next store finishes the job.
			s, err := OpenDir(root)
			if err != nil {
				t.Fatal(err)
			}
			f, err := s.Lookup(context.Background(), source)
			if err != nil {
				t.Fatal(err)
			}
			if f == nil {
				f = store(t, s, source, data, "video/mp4")
			}
			if f.Key != key {
				t.Fatalf("stored as %s, want %s", f.Key, key)
			}
			got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(key)))
			if err != nil || !bytes.Equal(got, data) {
				t.Fatalf("after the next store the file holds %d bytes (%v)", len(got), err)
			}
		})
	}
}

func TestAKillBeforeAnUploadClosesLeavesNoObject(t *testing.T) {
	src, data := testFile(t)
	key := sum(data)[:2] + "/" + sum(data) + ".mp4"
	for _, step := range []string{midWrite, "spool synced", "uploaded", "file stored"} {
		t.Run(step, func(t *testing.T) {
			u, backend := fakeS3(t, "")
			killAt(t, u, src, step)
			obj, err := backend.GetObject("media", key, nil)
			switch {
			case step == "file stored":
				if err != nil {
					t.Fatalf("the upload closed, yet there is no object: %v", err)
				}
				got := new(bytes.Buffer)
				got.ReadFrom(obj.Contents)
				if !bytes.Equal(got.Bytes(), data) {
					t.Fatalf("the object holds %d bytes, not the whole file", got.Len())
				}
			case err == nil:
				t.Fatalf("a kill at %q left an object of %d bytes", step, obj.Size)
			}
			s, err := Open(context.Background(), u)
			if err != nil {
				t.Fatal(err)
			}
			if f := store(t, s, source, data, "video/mp4"); f.Key != key {
				t.Fatalf("stored as %s", f.Key)
			}
		})
	}
}
