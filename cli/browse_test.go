package cli

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// browse prints the page's address, --open opens it in the desktop's
// browser (xdg-open), and Ctrl-C stops it, exit 0.
func TestBrowse_OpenOpensThePageAndCtrlCStopsIt(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the desktop's browser is opened with xdg-open on Linux only")
	}
	bin := t.TempDir()
	opened := filepath.Join(bin, "opened")
	if err := os.WriteFile(filepath.Join(bin, "xdg-open"), []byte("#!/bin/sh\necho \"$1\" > "+opened+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	ctx, stop := context.WithCancel(context.Background())
	var stdout, stderr bytes.Buffer
	exit := make(chan int, 1)
	go func() {
		exit <- Run(ctx, []string{"browse", "--out", t.TempDir(), "--open"}, strings.NewReader(""), &stdout, &stderr)
	}()
	var url []byte
	for deadline := time.Now().Add(20 * time.Second); len(url) == 0 && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		url, _ = os.ReadFile(opened)
	}
	page := strings.TrimSpace(string(url))
	if !strings.HasPrefix(page, "http://127.0.0.1:") {
		stop()
		t.Fatalf("xdg-open got %q; stderr:\n%s", url, stderr.String())
	}
	resp, err := http.Get(page)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("%s: %v %v", page, resp, err)
	} else {
		resp.Body.Close()
	}
	stop()
	if code := <-exit; code != 0 || stdout.String() != page+"\n" {
		t.Errorf("exit %d, stdout %q, want the address %s\n%s", code, stdout.String(), page, stderr.String())
	}
}
