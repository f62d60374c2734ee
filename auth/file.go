package auth

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/dirsync"
	"github.com/cq-source-x/cq-source-x/internal/smallfile"
	"github.com/gofrs/flock"
	"golang.org/x/oauth2"
)

const FileFormatVersion = 1

const maxTokenFileSize = 1 << 20

// StoredToken is the content of the token file (docs/auth.md). fmt and slog never show its
// tokens; json.Marshal does (it is the file format), so never log its JSON.
type StoredToken struct {
	Version      int       `json:"version"`
	AccessToken  string    `json:"access_token"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	TokenType    string    `json:"token_type"`
	Expiry       time.Time `json:"expiry,omitzero"` // zero: unknown
	Scope        string    `json:"scope,omitempty"` // space-separated, as granted
	UserID       string    `json:"user_id,omitempty"`
	Username     string    `json:"username,omitempty"`
	ClientID     string    `json:"client_id"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// NewStoredToken converts a token from Login or a refresh, its expiry counted from now (so a
// virtual clock works). UserID and Username are left for the caller.
func NewStoredToken(tok *oauth2.Token, clientID string, now time.Time) *StoredToken {
	st := &StoredToken{Version: FileFormatVersion, AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken,
		TokenType: cmp.Or(tok.TokenType, "bearer"), Expiry: tok.Expiry, ClientID: clientID, UpdatedAt: now.UTC()}
	if tok.ExpiresIn > 0 {
		st.Expiry = now.Add(time.Duration(tok.ExpiresIn) * time.Second).UTC()
	}
	st.Scope, _ = tok.Extra("scope").(string)
	return st
}

// OAuth2 returns the access token, without the refresh token: refreshing is the source's job.
func (t *StoredToken) OAuth2() *oauth2.Token {
	return &oauth2.Token{AccessToken: t.AccessToken, TokenType: t.TokenType, Expiry: t.Expiry}
}

// String describes t without its tokens.
func (t StoredToken) String() string {
	return fmt.Sprintf("{AccessToken:%s RefreshToken:%s TokenType:%s Expiry:%s Scope:%q UserID:%s Username:%s ClientID:%s UpdatedAt:%s}",
		redactString(t.AccessToken), redactString(t.RefreshToken), t.TokenType, fmtTime(t.Expiry), t.Scope,
		t.UserID, t.Username, t.ClientID, fmtTime(t.UpdatedAt))
}

func (t StoredToken) Format(f fmt.State, verb rune) {
	formatRedacted(f, verb, "auth.StoredToken", t.String())
}

// LogValue makes slog show t without its tokens.
func (t StoredToken) LogValue() slog.Value { return slog.StringValue(t.String()) }

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "unknown"
	}
	return t.UTC().Format(time.RFC3339)
}

// TokenFile is the token file at Path, locked by Path+".lock".
type TokenFile struct {
	Path string

	renameHook func(oldpath, newpath string) error // tests only
}

// Load reads the token file; a missing or empty one wraps ErrLoginRequired. On Unix, a file
// that group or others may access is refused, as ssh refuses such a private key.
func (f TokenFile) Load() (*StoredToken, error) {
	// Only a regular file is opened: a FIFO would block until someone writes to it.
	fh, fi, err := smallfile.Open(f.Path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("auth: token file %s does not exist: %w", f.Path, ErrLoginRequired)
	case errors.Is(err, smallfile.ErrNotRegular):
		return nil, fmt.Errorf("auth: token file %w", err)
	case err != nil:
		return nil, fmt.Errorf("auth: open token file: %w", err)
	}
	defer fh.Close()
	if runtime.GOOS != "windows" && fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("auth: token file %s has mode %#o, so other users may read or change it; refusing to use it: run `chmod 600 %s` (or `cq-source-x login` again)",
			f.Path, fi.Mode().Perm(), f.Path)
	}
	data, err := smallfile.ReadAll(fh, maxTokenFileSize)
	switch {
	case errors.Is(err, smallfile.ErrTooLarge):
		return nil, fmt.Errorf("auth: token file %s is larger than %d bytes; it is not a token file", f.Path, maxTokenFileSize)
	case err != nil:
		return nil, fmt.Errorf("auth: read token file %s: %w", f.Path, err)
	}
	var t StoredToken
	if err := json.Unmarshal(data, &t); err != nil {
		// json errors carry offsets and types, never the offending value.
		return nil, fmt.Errorf("auth: token file %s is not valid JSON (%v); run `cq-source-x login` again to rewrite it", f.Path, err)
	}
	if t.Version > FileFormatVersion {
		return nil, fmt.Errorf("auth: token file %s has format version %d; this build reads up to %d: upgrade cq-source-x", f.Path, t.Version, FileFormatVersion)
	}
	if t.AccessToken == "" && t.RefreshToken == "" {
		return nil, fmt.Errorf("auth: token file %s holds no token: %w", f.Path, ErrLoginRequired)
	}
	return &t, nil
}

// Save replaces the token file atomically with t. It does not take the lock: hold Lock.
func (f TokenFile) Save(t *StoredToken) error {
	st := *t
	st.Version = cmp.Or(st.Version, FileFormatVersion)
	data, err := json.MarshalIndent(&st, "", "  ")
	if err != nil {
		return fmt.Errorf("auth: encode token file: %w", err)
	}
	return f.writeAtomic(f.realPath(), append(data, '\n'))
}

// realPath is Path with symlinks resolved: a process given the symlink and one given the real
// path replace one file and take one lock.
func (f TokenFile) realPath() string {
	if real, err := filepath.EvalSymlinks(f.Path); err == nil {
		return real
	}
	return f.Path
}

// writeAtomic writes a temporary file, fsyncs it, renames it over path, fsyncs the dir.
func (f TokenFile) writeAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("auth: create directory for %s: %w", path, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("auth: write %s: %w", path, err)
	}
	_, err = tmp.Write(data) // CreateTemp made it 0600
	if err == nil {
		err = tmp.Sync()
	}
	rename := os.Rename
	if f.renameHook != nil {
		rename = f.renameHook
	}
	if err = errors.Join(err, tmp.Close()); err == nil {
		err = rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("auth: write %s: %w", path, err)
	}
	if err := dirsync.Sync(dir); err != nil {
		return fmt.Errorf("auth: write %s: fsync directory: %w", path, err)
	}
	return nil
}

// Lock takes the cross-process exclusive lock on Path+".lock", waiting until ctx is done. The
// lock file is never removed (two processes would lock different files).
func (f TokenFile) Lock(ctx context.Context) (unlock func() error, err error) {
	path := f.realPath()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("auth: lock token file: %w", err)
	}
	fl := flock.New(path+".lock", flock.SetPermissions(0o600))
	if _, err := fl.TryLockContext(ctx, 20*time.Millisecond); err != nil { // not locked only with an error
		return nil, fmt.Errorf("auth: lock %s: %w", fl.Path(), err)
	}
	return fl.Unlock, nil
}

// refreshIntent is Path+".refreshing", written before a refresh is sent and removed once its
// result is saved: still there, it says a refresh of that token was interrupted.
type refreshIntent struct {
	StartedAt   time.Time `json:"started_at"`
	Fingerprint string    `json:"refresh_token_sha256_prefix"`
	PID         int       `json:"pid"`
	Host        string    `json:"host,omitempty"`
}

func fingerprint(secret string) string {
	h := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(h[:8])
}

func (f TokenFile) intentPath() string { return f.realPath() + ".refreshing" }

func (f TokenFile) readIntent() *refreshIntent {
	var in refreshIntent
	data, err := os.ReadFile(f.intentPath())
	if err != nil || json.Unmarshal(data, &in) != nil {
		return nil
	}
	return &in
}

func (f TokenFile) writeIntent(in *refreshIntent) error {
	data, _ := json.Marshal(in) // a time of this clock, strings and an int: it cannot fail
	return f.writeAtomic(f.intentPath(), append(data, '\n'))
}

func (f TokenFile) removeIntent() { _ = os.Remove(f.intentPath()) }
