package directio

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Create creates path for direct I/O (O_DIRECT) on a local disk's file
// system (ext4, XFS, btrfs) that takes it, else for writing through the
// page cache: on network and FUSE file systems a direct write waits for
// the server, and tmpfs is memory either way. flag is os.O_EXCL (path must
// not exist) or os.O_TRUNC (an existing file is emptied). Direct writes go
// from the File's own aligned buffer to the disk.
func Create(path string, flag int) (File, error) {
	if !directFileSystem(filepath.Dir(path)) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|flag, 0o644)
		if err != nil {
			return nil, err
		}
		return newBufferedSink(f), nil
	}
	f, err := openDirect(path, flag)
	if errors.Is(err, syscall.EINVAL) {
		// The file system has no direct I/O (some FUSE file systems):
		// the file was not created.
		f, err = os.OpenFile(path, os.O_WRONLY|os.O_CREATE|flag, 0o644)
		if err != nil {
			return nil, err
		}
		return newBufferedSink(f), nil
	}
	if err != nil {
		return nil, err
	}
	return newDirectSink(f), nil
}

// directFileSystem reports whether dir is on a file system files are
// written to with direct I/O (a variable for tests).
var directFileSystem = func(dir string) bool {
	var st unix.Statfs_t
	if unix.Statfs(dir, &st) != nil {
		return false
	}
	switch st.Type {
	case unix.EXT4_SUPER_MAGIC, unix.XFS_SUPER_MAGIC, unix.BTRFS_SUPER_MAGIC:
		return true
	}
	return false
}

// openDirect creates path for direct I/O (a variable for tests).
var openDirect = func(path string, flag int) (*os.File, error) {
	return os.OpenFile(path, os.O_WRONLY|os.O_CREATE|flag|syscall.O_DIRECT, 0o644)
}

// directBlock is the alignment direct I/O asks of buffers, file offsets
// and lengths: 4 KiB serves disks of 512-byte and of 4 KiB sectors.
const directBlock = 4096

// directSink writes whole aligned blocks with O_DIRECT, and the file's last
// partial block through the page cache. If a direct write is refused, it
// goes on through the page cache: the bytes written are the same.
type directSink struct {
	f        *os.File
	buf      []byte        // aligned; sinkBuffer bytes of room
	buffered *bufferedSink // set once direct writes are given up
}

func newDirectSink(f *os.File) *directSink {
	raw := make([]byte, sinkBuffer+directBlock)
	off := (directBlock - int(uintptr(unsafe.Pointer(unsafe.SliceData(raw))))%directBlock) % directBlock
	return &directSink{f: f, buf: raw[off : off : off+sinkBuffer]}
}

func (s *directSink) Write(p []byte) (int, error) {
	if s.buffered != nil {
		return s.buffered.Write(p)
	}
	n := 0
	for len(p) > 0 {
		k := copy(s.buf[len(s.buf):cap(s.buf)], p)
		s.buf = s.buf[:len(s.buf)+k]
		n, p = n+k, p[k:]
		if len(s.buf) == cap(s.buf) {
			if err := s.writeBlocks(len(s.buf)); err != nil {
				return n, err
			}
			if s.buffered != nil {
				k, err := s.buffered.Write(p)
				return n + k, err
			}
		}
	}
	return n, nil
}

// writeBlocks writes the first n bytes of the buffer, a multiple of
// directBlock, and keeps the rest.
func (s *directSink) writeBlocks(n int) error {
	if n == 0 {
		return nil
	}
	written, err := s.f.Write(s.buf[:n])
	if errors.Is(err, syscall.EINVAL) {
		// Refused (an alignment this disk does not take), after written
		// bytes: go on through the page cache from there.
		if err := s.stopDirect(); err != nil {
			return err
		}
		s.buffered = newBufferedSink(s.f)
		_, err = s.buffered.Write(s.buf[written:])
		s.buf = s.buf[:0]
		return err
	}
	if err != nil {
		return err
	}
	s.buf = s.buf[:copy(s.buf, s.buf[n:])]
	return nil
}

// stopDirect turns direct I/O off for the rest of the file.
func (s *directSink) stopDirect() error {
	fd := int(s.f.Fd())
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		return err
	}
	_, err = unix.FcntlInt(uintptr(fd), unix.F_SETFL, flags&^syscall.O_DIRECT)
	return err
}

// PartDone does nothing: direct writes leave nothing for the kernel to
// write back.
func (s *directSink) PartDone() {
	if s.buffered != nil {
		s.buffered.PartDone()
	}
}

func (s *directSink) Close() error {
	if s.buffered == nil {
		whole := len(s.buf) / directBlock * directBlock
		err := s.writeBlocks(whole)
		if err == nil && s.buffered == nil && len(s.buf) > 0 {
			// The last partial block, at an aligned offset, through
			// the page cache.
			if err = s.stopDirect(); err == nil {
				s.buffered = newBufferedSink(s.f)
				_, err = s.buffered.Write(s.buf)
			}
		}
		if err != nil {
			s.f.Close()
			return err
		}
		if s.buffered == nil {
			return errors.Join(s.f.Sync(), s.f.Close())
		}
	}
	return s.buffered.Close()
}

// startWriteback asks the kernel to start writing f's dirty pages to disk,
// without waiting (sync_file_range with SYNC_FILE_RANGE_WRITE). It is only a
// head start for the fsync at Close, which is what makes the file durable;
// an error here changes nothing and is ignored.
func startWriteback(f *os.File) {
	_ = unix.SyncFileRange(int(f.Fd()), 0, 0, unix.SYNC_FILE_RANGE_WRITE)
}
