package archived

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cq-source-x/cq-source-x/ids"
	"github.com/cq-source-x/cq-source-x/media"
)

// File is one file of one media object of one archived post, from the
// moment the walk that read the post ends, and what became of it: the
// record of which posts each stored file belongs to, and of the files the
// next sync fetches.
type File struct {
	PostID string `json:"post"`
	// MediaPostID is the post the media is attached to, when it is not
	// PostID: a post PostID quotes, replies to or reposts.
	MediaPostID string `json:"media_post,omitempty"`
	MediaKey    string `json:"key"`
	MediaType   string `json:"type,omitempty"`
	File        string `json:"file"` // media.FilePhoto, FileStill or FileVideo
	URL         string `json:"url"`
	// Status is the last status sent in a row; "" until the file is tried.
	Status  media.Status `json:"status,omitempty"`
	FileKey string       `json:"file_key,omitempty"` // Stored
	Limit   int64        `json:"limit,omitempty"`    // the largest file size when it was found too large
	// Refetch: the stored file was found lost or damaged by a repair, and
	// the next sync fetches it again (MarkLost).
	Refetch bool      `json:"refetch,omitempty"`
	SeenAt  time.Time `json:"seen"` // when the bookmark was found: files are tried oldest first
}

func (f *File) id() [3]string { return [3]string{f.PostID, f.MediaKey, f.URL} }

// Of is the post the file's media is attached to.
func (f *File) Of() string { return cmp.Or(f.MediaPostID, f.PostID) }

// due reports whether a sync that stores files no larger than maxSize
// tries the file.
func (f *File) due(maxSize int64) bool {
	if f.Refetch {
		return true
	}
	switch f.Status {
	case "", media.Transient, media.OverBudget:
		return true
	case media.TooLarge:
		return f.Limit < maxSize
	}
	return false
}

// AddFiles records the files that are not recorded yet, and reports how
// many it added.
func (r *Record) AddFiles(files []File) int {
	known := make(map[[3]string]bool, len(r.Files))
	for i := range r.Files {
		known[r.Files[i].id()] = true
	}
	n := 0
	for _, f := range files {
		if !known[f.id()] {
			known[f.id()] = true
			r.Files = append(r.Files, f)
			n++
		}
	}
	return n
}

// DueFiles are the indexes of the files a sync tries, oldest first.
func (r *Record) DueFiles(maxSize int64) []int {
	var out []int
	for i := range r.Files {
		if r.Files[i].due(maxSize) {
			out = append(out, i)
		}
	}
	slices.SortStableFunc(out, func(a, b int) int { return r.Files[a].SeenAt.Compare(r.Files[b].SeenAt) })
	return out
}

// DropFiles forgets the files, and their rows in the outbox, for which drop
// is true of the archived post and the post the media is attached to, and
// returns the keys of the stored files they named.
func (r *Record) DropFiles(drop func(postID, mediaPostID string) bool) (stored []string, err error) {
	kept := r.Files[:0]
	for _, f := range r.Files {
		switch {
		case !drop(f.PostID, f.Of()):
			kept = append(kept, f)
		case f.Status == media.Stored && !slices.Contains(stored, f.FileKey):
			stored = append(stored, f.FileKey)
		}
	}
	r.Files = kept
	r.Outbox, err = r.Outbox.Rewrite(func(line []byte) ([]byte, error) {
		var row struct {
			PostID      string `json:"post_id"`
			MediaPostID string `json:"media_post_id"`
		}
		if err := json.Unmarshal(line, &row); err != nil || drop(row.PostID, cmp.Or(row.MediaPostID, row.PostID)) {
			return nil, err
		}
		return line, nil
	})
	return stored, err
}

// MarkLost marks the files a repair found lost for the next sync, and
// reports whether it marked any: a file whose last row was lost (rowLost)
// is tried again as one never tried (a file still stored is not fetched:
// the store's index has it); a stored file lost from the store (fileLost)
// is fetched again, and gets a row only if it is not stored as the same.
func (r *Record) MarkLost(rowLost, fileLost func(*File) bool) bool {
	marked := false
	for i := range r.Files {
		f := &r.Files[i]
		switch {
		case rowLost(f):
			f.Status, f.FileKey, f.Limit, f.Refetch = "", "", 0, false
		case fileLost(f):
			f.Refetch = true
		default:
			continue
		}
		marked = true
	}
	return marked
}

// StoredFiles are the keys of the files the record says are stored.
func (r *Record) StoredFiles() []string {
	var out []string
	for _, f := range r.Files {
		if f.Status == media.Stored {
			out = append(out, f.FileKey)
		}
	}
	return out
}

// packFiles encodes files as JSON lines, gzipped, in base64 ("" for none).
func packFiles(files []File) (string, error) {
	if len(files) == 0 {
		return "", nil
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw)
	for i := range files {
		if err := enc.Encode(&files[i]); err != nil {
			return "", err
		}
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// unpackFiles decodes what packFiles wrote.
func unpackFiles(text string) ([]File, error) {
	if text == "" {
		return nil, nil
	}
	data, err := ids.Unpack([]byte(text), "files")
	if err != nil {
		return nil, err
	}
	var out []File
	for line := range bytes.Lines(data) {
		var v File
		if err := json.Unmarshal(line, &v); err != nil {
			return nil, fmt.Errorf("files: %w", err)
		}
		out = append(out, v)
	}
	return out, nil
}
