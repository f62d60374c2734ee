//go:build unix

package cqspec

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A ${file:PATH} reads only a regular file: /dev/zero was read without end
// (10 GB in a minute) and a FIFO blocked the export forever. (/dev/null
// stands for every device here: it is one, and reading it ends.)
func TestParse_AFileReferenceReadsOnlyARegularFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/null", fifo} {
		text := strings.Replace(minimalSpec, `"tok-1001"`, `"${file:`+path+`}"`, 1)
		done := make(chan error, 1)
		go func() {
			_, err := Parse([]byte(text), "spec.yml", envOf(nil), specNow)
			done <- err
		}()
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "${file:"+path+"}: "+path+" is not a regular file") {
				t.Errorf("${file:%s}: %v", path, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("${file:%s} still reading after 10s", path)
		}
	}
}

// The spec file is read only if it is a regular file of at most 1 MiB:
// `--spec /dev/zero` ran out of memory, and `--spec FIFO` waited forever.
func TestRead_ReadsOnlyARegularFileOfAtMost1MiB(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	large := filepath.Join(dir, "large.yml")
	if err := os.WriteFile(large, []byte(minimalSpec+strings.Repeat("#", 1<<20)), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:        fifo + " is not a regular file",
		"/dev/zero": "/dev/zero is not a regular file",
		large:       large + " is larger than 1 MiB",
	} {
		_, err := Read(path)
		if err == nil || err.Error() != "reading the spec file: "+want {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}
