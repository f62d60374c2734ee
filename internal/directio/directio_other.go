//go:build !linux

package directio

import "os"

// Create creates path for writing, through the page cache. flag is
// os.O_EXCL (path must not exist) or os.O_TRUNC (an existing file is
// emptied).
func Create(path string, flag int) (File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|flag, 0o644)
	if err != nil {
		return nil, err
	}
	return newBufferedSink(f), nil
}

// startWriteback does nothing here: Close's fsync writes the whole file.
func startWriteback(*os.File) {}
