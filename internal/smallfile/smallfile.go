// Package smallfile reads the small files a user names — a spec file, a
// token file, a secret behind ${file:PATH} or bearer_token_file — so that a
// wrong name can neither hang the program nor exhaust its memory: only a
// regular file is read (opening a FIFO blocks until someone writes to it,
// and a signal does not end the wait; a device such as /dev/zero never
// ends), and only up to a limit.
package smallfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ErrNotRegular is the error of a path that is not a regular file (a FIFO,
// a device, a directory, a socket).
var ErrNotRegular = errors.New("is not a regular file")

// ErrTooLarge is the error of a file larger than the limit it is read with.
var ErrTooLarge = errors.New("is larger than the limit")

// Open opens path for reading if it is a regular file, checked before and
// after an open that does not block (a file replaced by a FIFO in between
// cannot block it). A path that is not a regular file gives an error that
// names it and wraps ErrNotRegular.
func Open(path string) (*os.File, fs.FileInfo, error) {
	if fi, err := os.Stat(path); err != nil {
		return nil, nil, err
	} else if !fi.Mode().IsRegular() {
		return nil, nil, notRegular(path)
	}
	f, err := os.OpenFile(path, openFlags, 0)
	if err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = notRegular(path)
	}
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// ReadAll reads f to its end; a file of more than limit bytes gives an
// error that names it and wraps ErrTooLarge, having read limit+1 bytes.
func ReadAll(f *os.File, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s %w", f.Name(), &tooLarge{limit})
	}
	return data, nil
}

// Read reads path, a regular file of at most limit bytes (see Open and
// ReadAll).
func Read(path string, limit int64) ([]byte, error) {
	f, _, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadAll(f, limit)
}

func notRegular(path string) error { return fmt.Errorf("%s %w", path, ErrNotRegular) }

// tooLarge says the limit (in MiB when it is a whole number of them).
type tooLarge struct{ limit int64 }

func (e *tooLarge) Error() string {
	if e.limit >= 1<<20 && e.limit%(1<<20) == 0 {
		return fmt.Sprintf("is larger than %d MiB", e.limit>>20)
	}
	return fmt.Sprintf("is larger than %d bytes", e.limit)
}

func (e *tooLarge) Is(target error) bool { return target == ErrTooLarge }
