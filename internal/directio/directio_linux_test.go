package directio

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// writeThrough writes data to s in pieces of random sizes and closes it.
func writeThrough(t *testing.T, s File, data []byte, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 1))
	for rest := data; len(rest) > 0; {
		k := min(len(rest), 1+r.IntN(70_000))
		if n, err := s.Write(rest[:k]); err != nil || n != k {
			t.Fatalf("write: %d of %d, %v", n, k, err)
		}
		rest = rest[k:]
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

func checkFile(t *testing.T, path string, want []byte) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s: %d bytes, want %d (or different bytes)", path, len(got), len(want))
	}
}

// A file written with direct I/O holds exactly the bytes written, whatever
// its length: whole blocks, a partial last block, a buffer's worth and a
// byte more, nothing at all.
func TestDirectFileHoldsTheBytesWritten(t *testing.T) {
	dir := t.TempDir()
	if !directFileSystem(dir) {
		t.Logf("%s is not on a file system written with direct I/O", dir)
	}
	direct := false
	for i, n := range []int{0, 1, 4095, 4096, 4097, sinkBuffer - 1, sinkBuffer, sinkBuffer + 1, 3*sinkBuffer + 12345} {
		data := make([]byte, n)
		for k := range data {
			data[k] = byte(k*7 + i)
		}
		path := filepath.Join(dir, "f"+string(rune('a'+i)))
		s, err := Create(path, os.O_EXCL)
		if err != nil {
			t.Fatal(err)
		}
		_, isDirect := s.(*directSink)
		direct = direct || isDirect
		writeThrough(t, s, data, uint64(i))
		checkFile(t, path, data)
	}
	if !direct {
		t.Logf("the file system of %s has no direct I/O: only the page cache was tested", dir)
	}
}

// A direct write the disk refuses (here: a buffer not aligned as direct
// I/O needs) is written through the page cache instead, and so is the rest
// of the file.
func TestDirectFileGoesOnThroughThePageCacheWhenRefused(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_DIRECT, 0o644)
	if err != nil {
		t.Skipf("no direct I/O here: %v", err)
	}
	s := newDirectSink(f)
	s.buf = s.buf[1:1] // misaligned: the first direct write fails with EINVAL
	data := make([]byte, 2*sinkBuffer+100)
	for k := range data {
		data[k] = byte(k * 13)
	}
	writeThrough(t, s, data, 9)
	if s.buffered == nil {
		t.Fatal("the refused write did not switch the file to the page cache")
	}
	checkFile(t, path, data)
}

// On a file system without direct I/O, where opening a file for it fails
// with EINVAL, the file is written through the page cache.
func TestFileOnAFileSystemWithoutDirectIO(t *testing.T) {
	defer func(open func(string, int) (*os.File, error)) { openDirect = open }(openDirect)
	defer func(is func(string) bool) { directFileSystem = is }(directFileSystem)
	directFileSystem = func(string) bool { return true }
	openDirect = func(string, int) (*os.File, error) {
		return nil, &os.PathError{Op: "open", Err: syscall.EINVAL}
	}
	path := filepath.Join(t.TempDir(), "f")
	s, err := Create(path, os.O_EXCL)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := s.(*bufferedSink); !ok {
		t.Fatalf("file %T", s)
	}
	data := bytes.Repeat([]byte("parquet "), 300_000)
	writeThrough(t, s, data, 3)
	checkFile(t, path, data)
}

// Files on other file systems than local disks' (tmpfs here, and network
// and FUSE file systems) are written through the page cache.
func TestFileOnTmpfsUsesThePageCache(t *testing.T) {
	dir, err := os.MkdirTemp("/dev/shm", "pqfile")
	if err != nil {
		t.Skipf("no /dev/shm: %v", err)
	}
	defer os.RemoveAll(dir)
	s, err := Create(filepath.Join(dir, "f"), os.O_EXCL)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, ok := s.(*bufferedSink); !ok {
		t.Fatalf("file %T on tmpfs", s)
	}
}

// Created with os.O_TRUNC, an existing file (a temporary file a crash left
// behind) is emptied first: it holds only what is written now.
func TestCreateTruncatesAnExistingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(path, bytes.Repeat([]byte("old "), 1_000_000), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, os.O_TRUNC)
	if err != nil {
		t.Fatal(err)
	}
	writeThrough(t, f, []byte(`{"new":true}`), 1)
	checkFile(t, path, []byte(`{"new":true}`))
	if _, err := Create(path, os.O_EXCL); !os.IsExist(err) {
		t.Fatalf("os.O_EXCL on an existing file: %v", err)
	}
}
