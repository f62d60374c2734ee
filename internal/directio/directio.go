// Package directio writes files that are written once, from start to end,
// and not read back by the program that writes them (Parquet files, the
// exporter's state): with direct I/O (O_DIRECT) where the file system takes
// it, else through the page cache, and synced to disk when closed.
//
// Such a file gains nothing from the page cache: it only fills memory with
// pages that must be written out anyway, and copying into the page cache,
// with the pages it needs, was the largest cost of writing a file after
// compression — more than snappy itself — on a virtual machine whose
// memory is handed back to its host as it is freed (docs/parquet.md).
package directio

import (
	"bufio"
	"errors"
	"os"
)

// File is a file being written. Write gathers what it is given; Close
// writes the rest, syncs the file to disk and closes it.
type File interface {
	Write(p []byte) (int, error)
	// PartDone tells the file that a part of it is written (a Parquet
	// row group): written through the page cache, the kernel then starts
	// writing it to disk, so that Close's fsync waits for the last part
	// only.
	PartDone()
	Close() error
}

// sinkBuffer is how much a File gathers before it writes: a Parquet
// writer makes many small writes.
const sinkBuffer = 1 << 20

// bufferedSink writes through the page cache.
type bufferedSink struct {
	f  *os.File
	bw *bufio.Writer
}

func newBufferedSink(f *os.File) *bufferedSink {
	return &bufferedSink{f: f, bw: bufio.NewWriterSize(f, sinkBuffer)}
}

func (s *bufferedSink) Write(p []byte) (int, error) { return s.bw.Write(p) }

// PartDone starts writing what the file holds so far to disk: the final
// fsync then waits for the last part only, rather than for the whole file
// (hundreds of MB for a large first export).
func (s *bufferedSink) PartDone() { startWriteback(s.f) }

func (s *bufferedSink) Close() error {
	if err := s.bw.Flush(); err != nil {
		s.f.Close()
		return err
	}
	return errors.Join(s.f.Sync(), s.f.Close())
}
