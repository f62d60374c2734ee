// Package store keeps media files by the hash of their content, in a local
// directory or in an object store (through gocloud.dev/blob), each once,
// with the index of the URL each was fetched from and the accounts' marks
// on it (docs/design/media.md#the-content-addressed-store-mediastore).
package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"maps"
	"mime"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"gocloud.dev/blob"
)

// File is a stored file.
type File struct {
	// Key names the file in the store: the SHA-256 of its content in hex,
	// under a directory named by its first two characters, with the
	// extension of its content type ("3f/3f9a…c2.jpg").
	Key         string    `json:"key"`
	SHA256      string    `json:"sha256"`
	Size        int64     `json:"size"`
	ContentType string    `json:"content_type"`
	StoredAt    time.Time `json:"stored_at"`
}

// Store is a media file store. Safe for concurrent use, by several
// processes too: files are named by their content.
type Store struct {
	b    backend
	name string            // the store's URL or directory, for messages
	step func(name string) // see OnStep
}

// backend is where the files are: a directory or a bucket.
type backend interface {
	// spool creates the temporary file a file is fetched into.
	spool() (*os.File, error)
	// commit makes the synced spool f the file key, and consumes f. A key
	// that exists already is kept as it is (its content is the same).
	commit(ctx context.Context, f *os.File, key, contentType string, step func(string)) error
	exists(ctx context.Context, key string) (bool, error)
	// read returns a small file (an index entry); os.ErrNotExist when there
	// is none.
	read(ctx context.Context, key string) ([]byte, error)
	// write writes a small file atomically.
	write(ctx context.Context, key string, data []byte, step func(string)) error
	delete(ctx context.Context, key string) error
	// hasUnder reports whether a key begins with prefix + "/".
	hasUnder(ctx context.Context, prefix string) (bool, error)
	close() error
}

// indexDir holds the index from source URLs to files, by the URLs' SHA-256.
const indexDir = ".urls"

// Open opens the store at rawURL: file:///absolute/dir (created if
// missing), or a bucket URL as gocloud.dev/blob reads it (docs/media.md).
func Open(ctx context.Context, rawURL string) (*Store, error) {
	if err := CheckURL(rawURL); err != nil {
		return nil, err
	}
	u, _ := url.Parse(rawURL)
	if u.Scheme == "file" {
		dir, _ := FilePath(u)
		return OpenDir(dir)
	}
	b, err := blob.OpenBucket(ctx, rawURL)
	if err != nil {
		// gocloud's errors repeat the URL, query values and all.
		return nil, fmt.Errorf("opening the media store %s: %s", Redacted(u), strings.ReplaceAll(err.Error(), rawURL, Redacted(u)))
	}
	return &Store{b: &bucket{b}, name: Redacted(u), step: func(string) {}}, nil
}

// CheckURL says what is wrong with a store URL, or nil; it opens nothing.
func CheckURL(rawURL string) error {
	u, err := url.Parse(rawURL)
	if err != nil { // a *url.Error, which repeats the URL
		return fmt.Errorf("media store URL does not parse: %w", errors.Unwrap(err))
	}
	switch u.Scheme {
	case "file":
		_, err := FilePath(u)
		return err
	case "s3", "gs", "azblob":
		if u.Host == "" {
			return fmt.Errorf("media store URL %s names no bucket: %s://bucket", Redacted(u), u.Scheme)
		}
		return nil
	}
	return fmt.Errorf("media store URL %s: the scheme must be file, s3, gs or azblob", Redacted(u))
}

// FilePath is the directory of a file:// URL, which must be absolute and
// have no host but localhost, query or fragment.
func FilePath(u *url.URL) (string, error) {
	switch {
	case u.Host != "" && u.Host != "localhost":
		return "", fmt.Errorf("media store URL %s: a file URL names a directory of this machine, file:///path (three slashes), not a host", Redacted(u))
	case u.RawQuery != "" || u.Fragment != "":
		return "", fmt.Errorf("media store URL %s: a file URL takes no query or fragment", Redacted(u))
	case u.Path == "" || !strings.HasPrefix(u.Path, "/"):
		return "", fmt.Errorf("media store URL %s: a file URL needs an absolute path, file:///path", Redacted(u))
	}
	return u.Path, nil
}

// Redacted is u without its user info and query values, which may hold
// credentials, for messages.
func Redacted(u *url.URL) string {
	c := *u
	c.User = nil
	if c.RawQuery != "" {
		q := c.Query()
		for k := range q {
			q[k] = []string{"redacted"}
		}
		c.RawQuery = q.Encode()
	}
	return c.String()
}

// OnStep makes step be called at each step of a commit that matters when
// the process is killed ("spool synced", "file renamed", "file stored",
// "index renamed", "indexed"): the kill tests stop the process there.
func (s *Store) OnStep(step func(name string)) { s.step = step }

func (s *Store) Close() error { return s.b.close() }

// Spool is a file being fetched: what is written to it goes to a temporary
// file, through a SHA-256 hash. Commit stores it, Discard drops it.
type Spool struct {
	f *os.File
	h hash.Hash
	n int64
}

func (s *Store) NewSpool() (*Spool, error) {
	f, err := s.b.spool()
	if err != nil {
		return nil, fmt.Errorf("media store %s: creating a temporary file: %w", s.name, err)
	}
	return &Spool{f: f, h: sha256.New()}, nil
}

func (sp *Spool) Write(p []byte) (int, error) {
	n, err := sp.f.Write(p)
	sp.h.Write(p[:n])
	sp.n += int64(n)
	return n, err
}

func (sp *Spool) Size() int64 { return sp.n }

// Discard removes the temporary file. It does nothing after Commit.
func (sp *Spool) Discard() {
	if sp.f == nil {
		return
	}
	sp.f.Close()
	os.Remove(sp.f.Name())
	sp.f = nil
}

// Commit stores the spooled file under its hash, unless the store holds it
// already, and records that sourceURL is that file. The spool is consumed
// either way.
func (s *Store) Commit(ctx context.Context, sp *Spool, sourceURL, contentType string, now time.Time) (*File, error) {
	sum := hex.EncodeToString(sp.h.Sum(nil))
	file := &File{Key: ContentKey(sum, contentType), SHA256: sum, Size: sp.n, ContentType: contentType, StoredAt: now.UTC()}
	if err := sp.f.Sync(); err != nil {
		sp.Discard()
		return nil, fmt.Errorf("media store %s: %w", s.name, err)
	}
	f := sp.f
	sp.f = nil
	s.step("spool synced")
	if err := s.b.commit(ctx, f, file.Key, contentType, s.step); err != nil {
		return nil, fmt.Errorf("media store %s: storing %s: %w", s.name, file.Key, err)
	}
	s.step("file stored")
	entry, err := json.Marshal(indexEntry{URL: sourceURL, File: *file})
	if err != nil {
		return nil, err
	}
	if err := s.b.write(ctx, indexKey(sourceURL), entry, s.step); err != nil {
		return nil, fmt.Errorf("media store %s: recording the file of %s: %w", s.name, sourceURL, err)
	}
	s.step("indexed")
	return file, nil
}

// indexEntry records which file a URL was fetched as.
type indexEntry struct {
	URL string `json:"url"`
	File
}

// Lookup returns the file fetched from sourceURL, or nil when there is
// none (never fetched, or since deleted).
func (s *Store) Lookup(ctx context.Context, sourceURL string) (*File, error) {
	data, err := s.b.read(ctx, indexKey(sourceURL))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("media store %s: reading the file of %s: %w", s.name, sourceURL, err)
	}
	var e indexEntry
	if err := json.Unmarshal(data, &e); err != nil || e.URL != sourceURL || !IsKey(e.Key) {
		// Not what Commit writes: fetch the file again, which rewrites it.
		return nil, nil
	}
	ok, err := s.b.exists(ctx, e.Key)
	if err != nil {
		return nil, fmt.Errorf("media store %s: %w", s.name, err)
	}
	if !ok {
		return nil, nil
	}
	return &e.File, nil
}

// Delete removes the file key; a file that is not there is not an error.
// The index entries that name it stay, and Lookup ignores them: a URL whose
// file was deleted is fetched again if asked for.
func (s *Store) Delete(ctx context.Context, key string) error {
	if !IsKey(key) {
		return fmt.Errorf("media store %s: %q is not a file's key", s.name, key)
	}
	if err := s.b.delete(ctx, key); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("media store %s: deleting %s: %w", s.name, key, err)
	}
	return nil
}

// usersDir holds the marks of the accounts whose records use each file, one
// empty object each (docs/design/media.md#marks-restics-prune-mark-and-sweep).
const usersDir = ".users"

func markKey(key, user string) string { return usersDir + "/" + key + "/" + user }

// Mark records that the account user's record uses the file key. A record
// names a stored file only once the file is marked.
func (s *Store) Mark(ctx context.Context, key, user string) error {
	if !IsKey(key) || !validUser(user) {
		return fmt.Errorf("media store %s: cannot mark %q for %q", s.name, key, user)
	}
	if err := s.b.write(ctx, markKey(key, user), nil, func(string) {}); err != nil {
		return fmt.Errorf("media store %s: marking %s: %w", s.name, key, err)
	}
	return nil
}

// Release removes the mark of user on the file key, and deletes the file
// when no mark is left: it reports whether it did.
func (s *Store) Release(ctx context.Context, key, user string) (deleted bool, err error) {
	if !IsKey(key) || !validUser(user) {
		return false, fmt.Errorf("media store %s: cannot release %q for %q", s.name, key, user)
	}
	if err := s.b.delete(ctx, markKey(key, user)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("media store %s: releasing %s: %w", s.name, key, err)
	}
	if used, err := s.b.hasUnder(ctx, usersDir+"/"+key); err != nil || used {
		return false, err
	}
	return true, s.Delete(ctx, key)
}

// validUser reports whether user is an X user id: it becomes a key.
func validUser(user string) bool { return user != "" && strings.Trim(user, "0123456789") == "" }

// ContentKey is the key of a file of SHA-256 sum (hex) and content type.
func ContentKey(sum, contentType string) string {
	return sum[:2] + "/" + sum + Extension(contentType)
}

// IsKey reports whether key is of ContentKey's form: nothing else is
// read or deleted.
func IsKey(key string) bool {
	dir, name, ok := strings.Cut(key, "/")
	if !ok || len(name) < 64 || dir != name[:2] {
		return false
	}
	if _, err := hex.DecodeString(name[:64]); err != nil || strings.ToLower(name[:64]) != name[:64] {
		return false
	}
	ext := name[64:]
	return ext == "" || slices.Contains(slices.Collect(maps.Values(extensions)), ext)
}

func indexKey(sourceURL string) string {
	sum := sha256.Sum256([]byte(sourceURL))
	h := hex.EncodeToString(sum[:])
	return indexDir + "/" + h[:2] + "/" + h + ".json"
}

// extensions of the content types of X's media, and a few more. A type
// not here is stored without one: the name must not depend on the
// machine's MIME tables, so that every machine names a file alike.
var extensions = map[string]string{
	"image/jpeg":      ".jpg",
	"image/png":       ".png",
	"image/gif":       ".gif",
	"image/webp":      ".webp",
	"image/avif":      ".avif",
	"image/heic":      ".heic",
	"video/mp4":       ".mp4",
	"video/quicktime": ".mov",
	"video/webm":      ".webm",
}

// Extension is the file extension of a content type ("" when unknown).
func Extension(contentType string) string {
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return ""
	}
	return extensions[mt]
}
