// Package dirsync makes a directory's entries durable: a file created,
// renamed or removed in it survives a power loss only once the directory
// itself is synced, which the token file, the archive and the media store
// each do after a rename.
package dirsync

import (
	"errors"
	"os"
	"runtime"
)

// Sync makes the entries of dir (creations, renames, removals) durable.
// Windows cannot fsync a directory (NTFS journals its metadata), nor can
// some file systems: it is a no-op there.
func Sync(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, errors.ErrUnsupported) {
		err = nil
	}
	return errors.Join(err, d.Close())
}
