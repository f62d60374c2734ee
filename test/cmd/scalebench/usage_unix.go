//go:build unix

package main

import (
	"os"
	"runtime"
	"syscall"
	"time"
)

// peakRSS is the process's peak resident set size (getrusage ru_maxrss).
func peakRSS(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" || runtime.GOOS == "ios" {
		return ru.Maxrss // bytes there, kilobytes elsewhere
	}
	return ru.Maxrss * 1024
}

// selfCPU is this process's CPU time so far (user + system): the
// simulator's, while a child runs.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
