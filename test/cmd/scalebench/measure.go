package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
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
func runProcess(bin string, args, env []string, stderr io.Writer) (*process, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	start, startCPU := time.Now(), selfCPU()
	err := cmd.Run()
	p := &process{Wall: time.Since(start), SimCPU: selfCPU() - startCPU, Stdout: stdout.Bytes()}
	if cmd.ProcessState != nil {
		p.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
		p.RSS = peakRSS(cmd.ProcessState)
	}
	if err != nil {
		return p, fmt.Errorf("%s %v: %w", bin, args, err)
	}
	return p, nil
}
