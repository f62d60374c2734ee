//go:build !linux

package pqfile

import "os"

// openSink creates path (which must not exist), written through the page
// cache.
func openSink(path string) (fileSink, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	return newBufferedSink(f), nil
}

// startWriteback does nothing here: Close's fsync writes the whole file.
func startWriteback(*os.File) {}
