// Package dirsync makes a directory's entries durable: a file created,
// renamed or removed in it survives a power loss only once the directory
// itself is synced.
package dirsync

import (
	"bufio"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
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

// WriteFile writes name in dir (its content by write) via a synced
// temporary file renamed over it, then syncs dir so the rename is durable.
func WriteFile(dir, name string, write func(io.Writer) error, step func(string)) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	buf := bufio.NewWriterSize(f, 1<<20)
	err = write(buf)
	if err == nil {
		err = buf.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if err := errors.Join(err, f.Close()); err != nil {
		os.Remove(tmp) // on a full disk, the space it holds is what the next run needs
		return err
	}
	step("temporary file synced")
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	step("renamed")
	return Sync(dir)
}

// Mkdir creates parent/name if needed, and any directory above it that is
// missing, syncing the parent of each one it creates.
func Mkdir(parent, name string) error { return mkdir(filepath.Join(parent, name)) }

func mkdir(path string) error {
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	parent := filepath.Dir(path)
	if parent != path {
		if err := mkdir(parent); err != nil {
			return err
		}
	}
	if err := os.Mkdir(path, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return Sync(parent)
}
