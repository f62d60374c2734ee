//go:build !linux

package pqfile

import "os"

// startWriteback does nothing here: Close's fsync writes the whole file.
func startWriteback(*os.File) {}
