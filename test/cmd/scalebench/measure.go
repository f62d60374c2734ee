package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// process is one child process's run.
type process struct {
	Wall   time.Duration
	CPU    time.Duration // user + system
	SimCPU time.Duration // this process's CPU meanwhile: the simulator's
	RSS    int64         // peak resident set, bytes
	Stdout []byte
}

// runProcess runs bin with args, its stderr to stderr, and measures it.
//
// The peak RSS is the child's VmHWM, read from /proc while it runs. Its
// rusage (ru_maxrss) would not do: Go starts a child with vfork, and the
// exec records the parent's high-water mark as the child's, so every child
// would weigh at least what this process's simulator holds.
func runProcess(bin string, args, env []string, stderr io.Writer) (*process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	start, startCPU := time.Now(), selfCPU()
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	hwm := make(chan int64, 1)
	done := make(chan struct{})
	go func() { hwm <- watchHighWaterMark(cmd.Process.Pid, done) }()
	err := cmd.Wait()
	close(done)
	p := &process{Wall: time.Since(start), SimCPU: selfCPU() - startCPU, Stdout: stdout.Bytes(), RSS: <-hwm}
	p.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if p.RSS == 0 {
		p.RSS = peakRSS(cmd.ProcessState) // no /proc: an upper bound
	}
	if err != nil {
		return p, fmt.Errorf("%s %v: %w", bin, args, err)
	}
	return p, nil
}

// watchHighWaterMark reads the process's VmHWM (its peak RSS so far) every
// 10 ms until done, and returns the last value read, in bytes; 0 without
// /proc.
func watchHighWaterMark(pid int, done <-chan struct{}) int64 {
	path := "/proc/" + strconv.Itoa(pid) + "/status"
	var peak int64
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		if v := readHighWaterMark(path); v > peak {
			peak = v
		}
		select {
		case <-done:
			return peak
		case <-t.C:
		}
	}
}

func readHighWaterMark(path string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				return 0
			}
			return kb << 10
		}
	}
	return 0
}
