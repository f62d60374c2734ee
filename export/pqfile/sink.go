package pqfile

import (
	"bufio"
	"errors"
	"os"
)

// fileSink is the file a Writer made by Create writes to.
type fileSink interface {
	Write(p []byte) (int, error)
	// rowGroupDone is called after each row group but the last.
	rowGroupDone()
	// close writes what is buffered, syncs the file to disk and closes it.
	close() error
}

// sinkBuffer is how much a file sink gathers before it writes: the Parquet
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

// rowGroupDone starts writing what the file holds so far to disk: the
// final fsync then waits for the last row group only, rather than for the
// whole file (hundreds of MB for a large first export).
func (s *bufferedSink) rowGroupDone() { startWriteback(s.f) }

func (s *bufferedSink) close() error {
	if err := s.bw.Flush(); err != nil {
		s.f.Close()
		return err
	}
	return errors.Join(s.f.Sync(), s.f.Close())
}
