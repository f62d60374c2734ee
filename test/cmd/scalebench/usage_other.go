//go:build !unix

package main

import (
	"os"
	"time"
)

// peakRSS is not measured here: getrusage is Unix's.
func peakRSS(*os.ProcessState) int64 { return 0 }

// selfCPU is not measured here.
func selfCPU() time.Duration { return 0 }
