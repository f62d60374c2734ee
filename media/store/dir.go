package store

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/dirsync"
)

// dir is a store in a local directory: spool in dir/.tmp, sync, rename,
// sync the directory (docs/design/media.md).
type dir string // its root

// spoolDir holds the files being fetched; a spool left by a process that
// was killed is removed by the next OpenDir once it is staleSpool old, and
// at once by RemoveSpools.
const (
	spoolDir   = ".tmp"
	spoolExt   = ".part"
	staleSpool = 24 * time.Hour
)

// OpenDir opens the store in the local directory root, creating it if
// missing.
func OpenDir(root string) (*Store, error) {
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(root, spoolDir), 0o755); err != nil {
		return nil, fmt.Errorf("media store %s: %w", root, err)
	}
	// A fetch writes to its spool until it ends, within its timeout.
	if err := removeSpools(root, staleSpool); err != nil {
		return nil, fmt.Errorf("media store %s: %w", root, err)
	}
	return ReadDir(root), nil
}

// ReadDir is the store in the local directory root, to read: unlike
// OpenDir, it creates nothing and removes nothing.
func ReadDir(root string) *Store {
	return &Store{b: dir(root), name: root, step: func(string) {}}
}

// Spools lists the spools in the directory store root: the files of
// fetches in progress, or left by a process stopped while it fetched.
func Spools(root string) ([]string, error) {
	return filepath.Glob(filepath.Join(root, spoolDir, "*"+spoolExt))
}

// RemoveSpools removes every spool of the directory store root. Only for a
// store no other process writes to: the exporter's, under its lock.
func RemoveSpools(root string) error { return removeSpools(root, 0) }

// removeSpools removes the spools of root last written longer ago than
// age.
func removeSpools(root string, age time.Duration) error {
	paths, err := Spools(root)
	if err != nil {
		return err
	}
	for _, p := range paths {
		info, err := os.Stat(p)
		if err != nil || time.Since(info.ModTime()) < age {
			continue
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

func (d dir) spool() (*os.File, error) {
	var b [12]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, err
	}
	name := filepath.Join(string(d), spoolDir, hex.EncodeToString(b[:])+spoolExt)
	return os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
}

func (d dir) path(key string) string { return filepath.Join(string(d), filepath.FromSlash(key)) }

func (d dir) commit(_ context.Context, f *os.File, key, _ string, step func(string)) error {
	name := f.Name()
	if err := f.Close(); err != nil {
		os.Remove(name)
		return err
	}
	return d.rename(name, key, false, func(s string) { step("file " + s) })
}

// rename moves the synced file tmp to key and makes it durable. A key that
// exists is kept unless replace: files are named by their content.
func (d dir) rename(tmp, key string, replace bool, step func(string)) error {
	final := d.path(key)
	if err := dirsync.Mkdir(string(d), filepath.Dir(filepath.FromSlash(key))); err != nil {
		os.Remove(tmp)
		return err
	}
	if _, err := os.Stat(final); err == nil && !replace {
		return os.Remove(tmp)
	}
	if err := os.Rename(tmp, final); err != nil {
		os.Remove(tmp)
		return err
	}
	step("renamed")
	return dirsync.Sync(filepath.Dir(final))
}

func (d dir) exists(_ context.Context, key string) (bool, error) {
	_, err := os.Stat(d.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

func (d dir) read(_ context.Context, key string) ([]byte, error) {
	return os.ReadFile(d.path(key))
}

func (d dir) write(_ context.Context, key string, data []byte, step func(string)) error {
	f, err := d.spool()
	if err != nil {
		return err
	}
	name := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if err := errors.Join(err, f.Close()); err != nil {
		os.Remove(name)
		return err
	}
	return d.rename(name, key, true, func(s string) { step("index " + s) })
}

func (d dir) delete(_ context.Context, key string) error {
	path := d.path(key)
	if err := os.Remove(path); err != nil {
		return err
	}
	return dirsync.Sync(filepath.Dir(path))
}

func (d dir) hasUnder(_ context.Context, prefix string) (bool, error) {
	entries, err := os.ReadDir(d.path(prefix))
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return len(entries) > 0, err
}

func (dir) close() error { return nil }
