//go:build unix

package auth

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A token file that is a FIFO is refused: opening it blocked until someone
// wrote to it, and SIGTERM did not end the wait.
func TestTokenFileLoadRefusesAFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "token.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := TokenFile{Path: fifo}.Load()
		done <- err
	}()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "token file "+fifo+" is not a regular file") {
			t.Errorf("err = %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Load still blocked on the FIFO after 10s")
	}
}
