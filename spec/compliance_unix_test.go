//go:build unix

package spec

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// bearer_token_file is read only if it is a regular file of at most 1 MiB:
// /dev/zero was read without end, and a FIFO blocked the sync forever,
// deaf to SIGTERM.
func TestBearerTokenFileIsReadOnlyIfARegularFileOfAtMost1MiB(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	large := filepath.Join(dir, "large")
	if err := os.WriteFile(large, []byte(strings.Repeat("A", 1<<20+1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]string{
		fifo:        fifo + " is not a regular file",
		"/dev/zero": "/dev/zero is not a regular file",
		large:       large + " is larger than 1 MiB",
	} {
		_, err := (&Compliance{BearerTokenFile: path}).ReadBearerToken()
		if err == nil || err.Error() != "compliance.bearer_token_file: "+want {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
}
