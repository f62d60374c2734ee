package pqfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// startWriteback asks the kernel to start writing f's dirty pages to disk,
// without waiting (sync_file_range with SYNC_FILE_RANGE_WRITE). It is only a
// head start for the fsync at Close, which is what makes the file durable;
// an error here changes nothing and is ignored.
func startWriteback(f *os.File) {
	_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}
