//go:build !linux && !darwin

package archive

import (
	"fmt"
	"runtime"
)

// exchange would swap the directory entries a and b atomically; this
// system offers no call for it.
func exchange(a, b string) error {
	return fmt.Errorf("%s has no atomic exchange of two directory entries, which compacting a table for the first time needs (Linux and macOS have one)", runtime.GOOS)
}
