package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)

// store writes data through a spool and commits it as fetched from src.
func store(t *testing.T, s *Store, src string, data []byte, contentType string) *File {
	t.Helper()
	sp, err := s.NewSpool()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sp.Write(data); err != nil {
		t.Fatal(err)
	}
	f, err := s.Commit(context.Background(), sp, src, contentType, now)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

func TestAFileIsNamedByTheHashOfItsContent(t *testing.T) {
	root := t.TempDir()
	s, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("\xff\xd8 a photo \xff\xd9")
	f := store(t, s, "https://pbs.twimg.com/media/A.jpg", data, "image/jpeg")
	want := File{Key: sum(data)[:2] + "/" + sum(data) + ".jpg", SHA256: sum(data), Size: int64(len(data)), ContentType: "image/jpeg", StoredAt: now}
	if *f != want {
		t.Fatalf("stored %+v, want %+v", *f, want)
	}
	got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.Key)))
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("the file holds %q (%v), want %q", got, err, data)
	}
	looked, err := s.Lookup(context.Background(), "https://pbs.twimg.com/media/A.jpg")
	if err != nil || looked == nil || *looked != want {
		t.Fatalf("Lookup = %+v, %v; want %+v", looked, err, want)
	}
	if f, err := s.Lookup(context.Background(), "https://pbs.twimg.com/media/B.jpg"); f != nil || err != nil {
		t.Fatalf("Lookup of a URL never stored = %+v, %v", f, err)
	}
	assertNoSpools(t, root)
}

func TestTheSameFileFromTwoURLsIsStoredOnce(t *testing.T) {
	root := t.TempDir()
	s, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	data := []byte("the same bytes")
	a := store(t, s, "https://video.twimg.com/a.mp4", data, "video/mp4")
	b := store(t, s, "https://video.twimg.com/b.mp4", data, "video/mp4")
	if a.Key != b.Key {
		t.Fatalf("keys %s and %s", a.Key, b.Key)
	}
	if n := countFiles(t, root); n != 1 {
		t.Fatalf("%d files stored, want 1", n)
	}
	for _, src := range []string{"https://video.twimg.com/a.mp4", "https://video.twimg.com/b.mp4"} {
		if f, err := s.Lookup(context.Background(), src); err != nil || f == nil || f.Key != a.Key {
			t.Fatalf("Lookup(%s) = %+v, %v", src, f, err)
		}
	}
}

func TestADeletedFileIsNotLookedUp(t *testing.T) {
	s, err := OpenDir(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := store(t, s, "https://pbs.twimg.com/media/A.png", []byte("png"), "image/png")
	ctx := context.Background()
	if err := s.Delete(ctx, f.Key); err != nil {
		t.Fatal(err)
	}
	if ok, err := s.b.exists(ctx, f.Key); ok || err != nil {
		t.Fatalf("Exists after Delete = %v, %v", ok, err)
	}
	if got, err := s.Lookup(ctx, "https://pbs.twimg.com/media/A.png"); got != nil || err != nil {
		t.Fatalf("Lookup after Delete = %+v, %v", got, err)
	}
	if err := s.Delete(ctx, f.Key); err != nil {
		t.Fatalf("deleting a file that is not there: %v", err)
	}
	if err := s.Delete(ctx, "../state.json"); err == nil || !strings.Contains(err.Error(), "not a file's key") {
		t.Fatalf("Delete of a key that is not a file's: %v", err)
	}
}

func TestADiscardedSpoolLeavesNothing(t *testing.T) {
	root := t.TempDir()
	s, err := OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	sp, err := s.NewSpool()
	if err != nil {
		t.Fatal(err)
	}
	sp.Write([]byte("half a file"))
	sp.Discard()
	if n := countFiles(t, root); n != 0 {
		t.Fatalf("%d files after a discarded spool", n)
	}
	assertNoSpools(t, root)
}

func TestStaleSpoolsAreRemovedWhenTheStoreOpensAndAllByRemoveSpools(t *testing.T) {
	root := t.TempDir()
	if _, err := OpenDir(root); err != nil {
		t.Fatal(err)
	}
	stale := filepath.Join(root, spoolDir, "dead"+spoolExt)
	fresh := filepath.Join(root, spoolDir, "live"+spoolExt)
	for _, p := range []string{stale, fresh} {
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	old := time.Now().Add(-staleSpool - time.Minute)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	if _, err := OpenDir(root); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("a spool untouched for %s is still there", staleSpool)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Errorf("a spool in use was removed: %v", err)
	}
	// The exporter, under its lock, removes them all.
	if spools, err := Spools(root); err != nil || len(spools) != 1 || spools[0] != fresh {
		t.Fatalf("Spools: %v %v", spools, err)
	}
	if err := RemoveSpools(root); err != nil {
		t.Fatal(err)
	}
	if spools, err := Spools(root); err != nil || len(spools) != 0 {
		t.Errorf("after RemoveSpools: %v %v", spools, err)
	}
}

func TestOpenTakesFileURLsOfAbsoluteDirectories(t *testing.T) {
	root := t.TempDir()
	s, err := Open(context.Background(), "file://"+filepath.ToSlash(root)+"/media")
	if err != nil {
		t.Fatal(err)
	}
	store(t, s, "https://pbs.twimg.com/media/A.jpg", []byte("a"), "image/jpeg")
	if n := countFiles(t, filepath.Join(root, "media")); n != 1 {
		t.Fatalf("%d files under the URL's directory", n)
	}
	for _, bad := range []struct{ url, want string }{
		{"file://media", "not a host"},
		{"file:relative/media", "absolute path"},
		{"file:///m?x=1", "no query"},
		{"ftp://host/media", "scheme must be file, s3, gs or azblob"},
		{"s3://bucket?secret=hunter2&region=x", ""},
	} {
		_, err := Open(context.Background(), bad.url)
		if bad.want == "" {
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("Open(%q) repeats a query value: %v", bad.url, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("Open(%q) = %v, want an error saying %q", bad.url, err, bad.want)
		}
	}
}

func TestKeysAreOnlyThoseOfFiles(t *testing.T) {
	h := strings.Repeat("ab", 32)
	for key, want := range map[string]bool{
		"ab/" + h + ".jpg":                  true,
		"ab/" + h:                           true,
		"cd/" + h + ".jpg":                  false,
		"ab/" + h + "/x":                    false,
		"ab/" + strings.ToUpper(h) + ".jpg": false,
		".urls/ab/" + h + ".json":           false,
		"ab/" + h + ".JPG":                  false,
		"ab/" + h + ".exe":                  false,
	} {
		if got := IsKey(key); got != want {
			t.Errorf("IsKey(%q) = %v, want %v", key, got, want)
		}
	}
}

func countFiles(t *testing.T, root string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == spoolDir || d.Name() == indexDir) {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func assertNoSpools(t *testing.T, root string) {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(root, spoolDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) > 0 {
		t.Fatalf("%d spools left in %s", len(entries), spoolDir)
	}
}

func TestAFilesExtensionIsItsTypesWhateverTheMachine(t *testing.T) {
	for ct, want := range map[string]string{
		"image/jpeg": ".jpg", "image/png": ".png", "video/mp4": ".mp4", "image/gif": ".gif", "image/webp": ".webp",
		"video/mp4; codecs=avc1": ".mp4", "application/x-unknown": "", "text/html": "", "not a type": "",
	} {
		if got := Extension(ct); got != want {
			t.Errorf("Extension(%q) = %q, want %q", ct, got, want)
		}
	}
}
