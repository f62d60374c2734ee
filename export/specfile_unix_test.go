//go:build unix

package export

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A ${file:PATH} reads only a regular file: /dev/zero was read without end
// (10 GB in a minute) and a FIFO blocked the export forever. (/dev/null
// stands for every device here: it is one, and reading it ends.)
func TestParseSpec_AFileReferenceReadsOnlyARegularFile(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/dev/null", fifo} {
		text := strings.Replace(minimalSpec, `"tok-1001"`, `"${file:`+path+`}"`, 1)
		done := make(chan error, 1)
		go func() {
			_, err := ParseSpec([]byte(text), "spec.yml", envOf(nil), specNow)
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
