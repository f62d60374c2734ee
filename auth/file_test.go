package auth

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

func sampleToken() *StoredToken {
	return &StoredToken{
		AccessToken: "AT-sample-access-token", RefreshToken: "RT-sample-refresh-token", TokenType: "bearer",
		Expiry: t0.Add(2 * time.Hour), Scope: "tweet.read users.read bookmark.read offline.access",
		UserID: "42", Username: "alice", ClientID: "app", UpdatedAt: t0,
	}
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	return names
}

func TestTokenFileSaveLoadRoundTrip(t *testing.T) {
	f := TokenFile{Path: filepath.Join(t.TempDir(), "sub", "token.json")} // directory is created
	want := sampleToken()
	if err := f.Save(want); err != nil {
		t.Fatal(err)
	}
	got, err := f.Load()
	if err != nil {
		t.Fatal(err)
	}
	want.Version = FileFormatVersion
	if *got != *want {
		t.Errorf("round trip:\n got %#v\nwant %#v", got, want)
	}
	data, _ := os.ReadFile(f.Path)
	for _, key := range []string{`"version": 1`, `"access_token"`, `"refresh_token"`, `"expiry": "2026-03-01T14:00:00Z"`, `"client_id": "app"`, `"user_id": "42"`, `"updated_at"`} {
		if !strings.Contains(string(data), key) {
			t.Errorf("file lacks %s:\n%s", key, data)
		}
	}
	if runtime.GOOS != "windows" {
		fi, _ := os.Stat(filepath.Dir(f.Path))
		if fi.Mode().Perm() != 0o700 {
			t.Errorf("created directory mode %#o, want 0700", fi.Mode().Perm())
		}
	}
}

func TestTokenFileSaveIsMode0600AndLeavesNoTempFiles(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix permissions")
	}
	dir := t.TempDir()
	f := TokenFile{Path: filepath.Join(dir, "token.json")}
	// A pre-existing world-readable file is replaced by a 0600 one.
	if err := os.WriteFile(f.Path, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := f.Save(sampleToken()); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(f.Path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %#o, want 0600", fi.Mode().Perm())
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"token.json"}) {
		t.Errorf("directory holds %v, want only token.json", names)
	}
}

func TestTokenFileSaveKeepsOldContentWhenRenameFails(t *testing.T) {
	dir := t.TempDir()
	f := TokenFile{Path: filepath.Join(dir, "token.json")}
	if err := f.Save(sampleToken()); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(f.Path)

	var tmpSeen string
	f.renameHook = func(oldpath, newpath string) error {
		tmpSeen = oldpath
		data, err := os.ReadFile(oldpath)
		if err != nil || !strings.Contains(string(data), "AT-new") {
			t.Errorf("temporary file not complete before rename: %v", err)
		}
		return errors.New("simulated rename failure")
	}
	next := sampleToken()
	next.AccessToken, next.RefreshToken = "AT-new", "RT-new"
	err := f.Save(next)
	if err == nil || !strings.Contains(err.Error(), "simulated rename failure") {
		t.Fatalf("Save: %v", err)
	}
	if strings.Contains(err.Error(), "AT-new") || strings.Contains(err.Error(), "RT-new") {
		t.Errorf("token in error: %v", err)
	}
	if realDir, _ := filepath.EvalSymlinks(dir); filepath.Dir(tmpSeen) != realDir {
		t.Errorf("temporary file %s not in the token file's directory", tmpSeen)
	}
	after, _ := os.ReadFile(f.Path)
	if string(after) != string(before) {
		t.Errorf("old content changed:\n%s\n---\n%s", before, after)
	}
	if names := dirNames(t, dir); !slices.Equal(names, []string{"token.json"}) {
		t.Errorf("directory holds %v, want only token.json", names)
	}
}

func TestTokenFileLoadMissingSaysRunLogin(t *testing.T) {
	_, err := TokenFile{Path: filepath.Join(t.TempDir(), "token.json")}.Load()
	if !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "cq-source-x login") || !strings.Contains(err.Error(), "token.json") {
		t.Fatalf("err = %v", err)
	}
}

func TestTokenFileLoadBadJSONNamesFile(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token.json")
	if err := os.WriteFile(p, []byte(`{"access_token": "AT-leaky-value", `), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := TokenFile{Path: p}.Load()
	if err == nil || !strings.Contains(err.Error(), p) || !strings.Contains(err.Error(), "not valid JSON") {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "AT-leaky-value") {
		t.Errorf("file content in error: %v", err)
	}
	// Wrong type: still no value in the message.
	if err := os.WriteFile(p, []byte(`{"access_token": 12345678}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (TokenFile{Path: p}).Load(); err == nil || strings.Contains(err.Error(), "12345678") {
		t.Errorf("err = %v", err)
	}
}

func TestTokenFileLoadRefusesGroupOrOtherAccess(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("Unix permissions")
	}
	f := TokenFile{Path: filepath.Join(t.TempDir(), "token.json")}
	if err := f.Save(sampleToken()); err != nil {
		t.Fatal(err)
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o620} {
		if err := os.Chmod(f.Path, mode); err != nil {
			t.Fatal(err)
		}
		_, err := f.Load()
		if err == nil || !strings.Contains(err.Error(), "chmod 600") {
			t.Errorf("mode %#o: err = %v", mode, err)
		}
	}
	_ = os.Chmod(f.Path, 0o400)
	if _, err := f.Load(); err != nil {
		t.Errorf("mode 0400: %v", err)
	}
}

func TestTokenFileLoadRejectsEmptyAndNewerFormat(t *testing.T) {
	p := filepath.Join(t.TempDir(), "token.json")
	_ = os.WriteFile(p, []byte(`{"version":1,"client_id":"app"}`), 0o600)
	if _, err := (TokenFile{Path: p}).Load(); !errors.Is(err, ErrLoginRequired) {
		t.Errorf("no tokens: err = %v", err)
	}
	_ = os.WriteFile(p, []byte(`{"version":2,"access_token":"a"}`), 0o600)
	if _, err := (TokenFile{Path: p}).Load(); err == nil || !strings.Contains(err.Error(), "version 2") {
		t.Errorf("newer format: err = %v", err)
	}
}

func TestTokenFileLockIsExclusive(t *testing.T) {
	f := TokenFile{Path: filepath.Join(t.TempDir(), "token.json")}
	unlock, err := f.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// A second lock on the same file (another open file description, as in another process)
	// waits and gives up with its context.
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	if _, err := (TokenFile{Path: f.Path}).Lock(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Lock while held: err = %v", err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := TokenFile{Path: f.Path}.Lock(t.Context())
		if err == nil {
			err = u()
		}
		got <- err
	}()
	time.Sleep(50 * time.Millisecond)
	select {
	case <-got:
		t.Fatal("second Lock acquired while the first is held")
	default:
	}
	if err := unlock(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("second Lock not acquired after unlock")
	}
}

func TestTokenFileSaveThroughSymlinkKeepsSymlink(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks")
	}
	dir := t.TempDir()
	real := filepath.Join(dir, "secrets", "token.json")
	if err := (TokenFile{Path: real}).Save(sampleToken()); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "token.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	next := sampleToken()
	next.AccessToken = "AT-through-link"
	if err := (TokenFile{Path: link}).Save(next); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(link); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("symlink replaced: %v", err)
	}
	got, err := TokenFile{Path: real}.Load()
	if err != nil || got.AccessToken != "AT-through-link" {
		t.Fatalf("target not updated: %v", err)
	}
}

// A process given a symlink to the token file and one given the file
// itself take the same lock (and see the same refresh marker): the lock
// sits beside the file the symlink points to, which Save replaces.
func TestTokenFileLockThroughASymlinkIsTheFilesLock(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("symlinks")
	}
	dir := t.TempDir()
	real := filepath.Join(dir, "secrets", "token.json")
	if err := (TokenFile{Path: real}).Save(sampleToken()); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "token.json")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	unlock, err := TokenFile{Path: real}.Lock(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 200*time.Millisecond)
	defer cancel()
	if unlock2, err := (TokenFile{Path: link}).Lock(ctx); err == nil {
		unlock2()
		t.Fatal("the lock through the symlink was granted while the file's lock was held")
	}
	if (TokenFile{Path: link}).intentPath() != (TokenFile{Path: real}).intentPath() {
		t.Fatal("the refresh marker through the symlink is not the file's")
	}
}
