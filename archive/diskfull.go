package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
)

// DiskFullError is a write that failed because the disk holding the output
// directory (or the user's quota on it) is full.
type DiskFullError struct {
	// Path is the file being written.
	Path string
	// Committed says whether the run was committed before: then the next
	// run finishes publishing it, else the run left nothing behind.
	Committed bool
	Err       error
}

func (e *DiskFullError) Error() string {
	what := "no space left on device"
	if errors.Is(e.Err, syscall.EDQUOT) {
		what = "disk quota exceeded"
	}
	next := "nothing was committed: free space on that disk and run the export again (it fetches this run's posts again)"
	if e.Committed {
		next = "the run is committed: free space on that disk and run the export again to finish publishing it"
	}
	return fmt.Sprintf("the disk is full (%s) writing %s; %s", what, e.Path, next)
}

func (e *DiskFullError) Unwrap() error { return e.Err }

// DiskFull turns a write that failed for want of space into a DiskFullError;
// other errors are returned as they are.
func DiskFull(err error, committed bool) error {
	var full *DiskFullError
	if err == nil || errors.As(err, &full) || !(errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT)) {
		return err
	}
	path := "the output directory"
	var pe *fs.PathError
	if errors.As(err, &pe) {
		path = pe.Path
	}
	return &DiskFullError{Path: path, Committed: committed, Err: err}
}
