package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/test/interruptloop"
)

// writeSimSpec writes a spec file for user 1001 of sim and returns its path.
func writeSimSpec(t *testing.T, dir string, sim *xsim.Server) string {
	t.Helper()
	spec := filepath.Join(dir, "x.yml")
	text := "kind: source\nspec:\n  name: x\n  path: ./cq-source-x\n  registry: local\n  tables: [\"*\"]\n  destinations: [\"file\"]\n  spec:\n" +
		"    base_url: " + sim.URL() + "\n    accounts:\n      - user_id: \"1001\"\n        access_token: \"" + sim.IssueToken("1001") + "\"\n"
	if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return spec
}

// waitExit waits for cmd to end, at most d, and returns its exit code.
func waitExit(t *testing.T, cmd *exec.Cmd, d time.Duration, stderr *bytes.Buffer) int {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(d):
		cmd.Process.Signal(syscall.SIGQUIT)
		<-done
		t.Fatalf("still running %s after the signal:\n%s", d, stderr.String())
		return -1
	}
}

// The first Ctrl-C of an export stops its reads and commits what it read:
// it exits within seconds, 130, with a line saying what it kept and what
// the next run reads, and the files hold the bookmarks it read.
func TestTheFirstCtrlCOfAnExportKeepsWhatItRead(t *testing.T) {
	sim := xsim.New(xsim.Options{DisableRateLimits: true, Faults: xsim.Faults{Latency: 20 * time.Millisecond}})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks("1001", 3000)
	dir := t.TempDir()
	spec, out := writeSimSpec(t, dir, sim), filepath.Join(dir, "archive")
	reading := make(chan struct{})
	sim.OnRequest(func(r xsim.RequestInfo) {
		if r.Operation == xsim.OpListBookmarks && r.Seq == 5 {
			close(reading)
		}
	})
	cmd := exec.Command(binary, "export", "--spec", spec, "--out", out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	<-reading
	cmd.Process.Signal(os.Interrupt)
	code := waitExit(t, cmd, 30*time.Second, &stderr)
	text := stderr.String()
	if code != 130 || strings.Contains(text, "panic") || !strings.Contains(text, "Interrupted: reading no more from X") ||
		!strings.Contains(text, "Error: export interrupted; kept what was read") ||
		!strings.Contains(text, "The next run reads again from the top accounts[0] bookmarks") {
		t.Fatalf("exit %d:\n%s", code, text)
	}
	files, _ := filepath.Glob(filepath.Join(out, "x_bookmarks", "*.parquet"))
	if len(files) != 1 {
		t.Errorf("x_bookmarks files %v, want the one of the interrupted run", files)
	}
}

// A second Ctrl-C exits at once, whatever the command is doing (here,
// `bookmarks add` reading ids from a stdin that never ends).
func TestASecondCtrlCExitsAtOnce(t *testing.T) {
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks("1001", 5)
	dir := t.TempDir()
	spec, out := writeSimSpec(t, dir, sim), filepath.Join(dir, "archive")
	if code, _, stderr := run(t, "export", "--spec", spec, "--out", out, "--quiet"); code != 0 {
		t.Fatalf("export: %d %s", code, stderr)
	}
	// A signal that comes before the program took its signals kills it
	// (exit -1): on a loaded machine, start again and wait longer.
	for wait := time.Second; ; wait *= 3 {
		cmd := exec.Command(binary, "bookmarks", "add", "--spec", spec, "--out", out, "--ids", "-")
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		defer stdin.Close()
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(wait)
		cmd.Process.Signal(os.Interrupt)
		time.Sleep(200 * time.Millisecond)
		cmd.Process.Signal(os.Interrupt)
		code := waitExit(t, cmd, 10*time.Second, &stderr)
		if code == -1 && wait < 10*time.Second {
			continue
		}
		if code != 130 || !strings.Contains(stderr.String(), "Interrupted again: exiting at once") {
			t.Errorf("exit %d:\n%s", code, stderr.String())
		}
		return
	}
}

// The interrupt loop, short (test/cmd/interruptloop runs hundreds): runs
// signalled at random moments, first syncs and incremental ones, neither
// hang nor panic, lose no bookmark, write no key twice, and every post an
// interrupted run read is counted billed once, by that run.
func TestInterruptsAtRandomMomentsKeepWhatWasRead(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rep, err := interruptloop.Run(context.Background(), interruptloop.Options{
		Binary: binary, Dir: t.TempDir(), Interrupts: 8, Accounts: 2, Bookmarks: 600,
		CheckEvery: 4, FreshEvery: 4, Seed: seed,
	})
	if err != nil {
		t.Fatalf("seed %d: %v", seed, err)
	}
	if !rep.OK() || rep.Interrupted == 0 {
		var b strings.Builder
		rep.WriteText(&b)
		t.Errorf("seed %d:\n%s", seed, b.String())
	}
}
