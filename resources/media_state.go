package resources

import (
	"bytes"
	"cmp"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/internal/outbox"
	"github.com/cq-source-x/cq-source-x/media"
)

// What the media files keep in the state backend, per account
// (x_media_files/<user>): a record of every file of the account's posts'
// media, from the moment the bookmarks walk that read the post ends: the
// file's post and media key, its URL, and what became of it — which is
// the record of which posts each stored file belongs to (the compliance
// actions remove a deleted post's files by it) and of the files the next
// sync fetches (new, transient, over budget, or too large for a limit since
// raised). The rows a CloudQuery sync sent are kept with them in an outbox
// (package outbox), as the compliance findings are.

func init() {
	account.RegisterDecoder(account.MediaFiles, func(key, value string) error { _, err := decodeMediaState(key, value); return err })
}

// MediaFileUse is one file of a post's media, as an account's media state
// records it: which posts each stored file belongs to (the compliance
// actions remove a deleted post's files by it, keeping a file another post
// uses).
type MediaFileUse struct {
	// PostID is the archived post; MediaPostID the post the media is
	// attached to, when it is another (a post PostID quotes, ...).
	PostID, MediaPostID, MediaKey, URL string
	// Status is the file's last status sent in a row ("" until tried), and
	// FileKey, for Stored, the file's key in the store.
	Status  media.Status
	FileKey string
	// Refetch: the stored file was found missing or damaged, and the next
	// sync fetches it again (MarkMediaFiles).
	Refetch bool
}

// MediaFileUses reads the value of the state key account.MediaFilesKey(user):
// every file of the account's posts' media.
func MediaFileUses(key, value string) ([]MediaFileUse, error) {
	st, err := decodeMediaState(key, value)
	if err != nil {
		return nil, err
	}
	out := make([]MediaFileUse, len(st.records))
	for i, r := range st.records {
		out[i] = r.use()
	}
	return out, nil
}

// MarkMediaFiles returns value, the state of the key
// account.MediaFilesKey(user), with the files a repair found lost marked
// for the next sync: a file whose last row was lost is tried again as a
// file never tried, and gets a row whatever becomes of it (a file still
// stored is not fetched: the store's index has it); a stored file lost
// from the store is fetched again, and gets a row only if it is not
// stored again as the same file.
func MarkMediaFiles(key, value string, rowLost, fileLost func(MediaFileUse) bool) (string, error) {
	st, err := decodeMediaState(key, value)
	if err != nil {
		return "", err
	}
	for i := range st.records {
		r := &st.records[i]
		switch {
		case rowLost(r.use()):
			r.Status, r.FileKey, r.Limit, r.Refetch = "", "", 0, false
		case fileLost(r.use()):
			r.Refetch = true
		}
	}
	return st.marshal()
}

// DropMediaFilesOfPosts returns value, the state of the key
// account.MediaFilesKey(user), without the files for which drop is true —
// given the archived post and the post the media is attached to (the same,
// or a post it references) — nor their rows the outbox holds to send
// again, and the keys of the stored files those named. A file another
// record uses (of this account: MediaFileUses; of others: theirs) must
// stay; the others may be deleted from the store (Store.Delete).
func DropMediaFilesOfPosts(key, value string, drop func(postID, mediaPostID string) bool) (newValue string, stored []string, err error) {
	st, err := decodeMediaState(key, value)
	if err != nil {
		return "", nil, err
	}
	kept := st.records[:0]
	for _, r := range st.records {
		switch {
		case !drop(r.PostID, cmp.Or(r.MediaPostID, r.PostID)):
			kept = append(kept, r)
		case r.Status == media.Stored && !slices.Contains(stored, r.FileKey):
			stored = append(stored, r.FileKey)
		}
	}
	st.records = kept
	st.outbox, err = st.outbox.Rewrite(func(line []byte) ([]byte, error) {
		var row mediaFileRow
		if err := json.Unmarshal(line, &row); err != nil || drop(row.PostID, cmp.Or(row.MediaPostID, row.PostID)) {
			return nil, err
		}
		return line, nil
	})
	if err != nil {
		return "", nil, err
	}
	newValue, err = st.marshal()
	return newValue, stored, err
}

// mediaRecord is one file of one media object of one bookmarked post.
type mediaRecord struct {
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
	// Limit is the largest file size when the file was found too large.
	Limit int64 `json:"limit,omitempty"`
	// Refetch: the stored file is to be fetched again (MarkMediaFiles).
	Refetch bool `json:"refetch,omitempty"`
	// SeenAt is when the bookmark was found: files are tried oldest first.
	SeenAt time.Time `json:"seen"`
}

func (r *mediaRecord) id() [3]string { return [3]string{r.PostID, r.MediaKey, r.URL} }

func (r *mediaRecord) use() MediaFileUse {
	return MediaFileUse{PostID: r.PostID, MediaPostID: r.MediaPostID, MediaKey: r.MediaKey, URL: r.URL, Status: r.Status, FileKey: r.FileKey, Refetch: r.Refetch}
}

// due reports whether a sync that stores files no larger than maxSize
// tries the file.
func (r *mediaRecord) due(maxSize int64) bool {
	if r.Refetch {
		return true
	}
	switch r.Status {
	case "", media.Transient, media.OverBudget:
		return true
	case media.TooLarge:
		return r.Limit < maxSize
	}
	return false
}

// mediaState is the value of x_media_files/<user>.
type mediaState struct {
	records []mediaRecord
	outbox  *outbox.Box
}

const mediaStateVersion = 1

type mediaStateJSON struct {
	Version int `json:"version"`
	// Files is the records, one JSON value per line, gzipped, in base64.
	Files  string          `json:"files,omitempty"`
	Outbox json.RawMessage `json:"outbox,omitempty"`
}

func loadMediaState(ctx context.Context, s *account.Session) (*mediaState, error) {
	key := account.MediaFilesKey(s.UserID)
	value, err := account.GetKey(ctx, s.State, key)
	if err != nil {
		return nil, err
	}
	return decodeMediaState(key, value)
}

func decodeMediaState(key, value string) (*mediaState, error) {
	what := "state " + strconv.Quote(key)
	st := &mediaState{outbox: &outbox.Box{}}
	if value == "" {
		return st, nil
	}
	var j mediaStateJSON
	if err := json.Unmarshal([]byte(value), &j); err != nil {
		return nil, fmt.Errorf("%s: not valid JSON: %w", what, err)
	}
	if j.Version != mediaStateVersion {
		return nil, fmt.Errorf("%s: version %d; this build reads version %d", what, j.Version, mediaStateVersion)
	}
	if err := unpackLines(j.Files, func(line []byte) error {
		var r mediaRecord
		if err := json.Unmarshal(line, &r); err != nil {
			return err
		}
		st.records = append(st.records, r)
		return nil
	}); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	var err error
	if len(j.Outbox) > 0 {
		st.outbox, err = outbox.Unmarshal(string(j.Outbox), what)
	}
	return st, err
}

func (st *mediaState) save(ctx context.Context, s *account.Session) error {
	key := account.MediaFilesKey(s.UserID)
	value, err := st.marshal()
	if err != nil {
		return err
	}
	return account.SetKey(ctx, s.State, key, value)
}

func (st *mediaState) marshal() (string, error) {
	files, err := packLines(st.records)
	if err != nil {
		return "", err
	}
	box, err := st.outbox.Marshal()
	if err != nil {
		return "", err
	}
	value, err := json.Marshal(mediaStateJSON{Version: mediaStateVersion, Files: files, Outbox: json.RawMessage(box)})
	return string(value), err
}

// add records the files of wanted that are not recorded yet, and reports
// how many it added.
func (st *mediaState) add(wanted []mediaRecord) int {
	known := make(map[[3]string]bool, len(st.records))
	for i := range st.records {
		known[st.records[i].id()] = true
	}
	n := 0
	for _, r := range wanted {
		if !known[r.id()] {
			known[r.id()] = true
			st.records = append(st.records, r)
			n++
		}
	}
	return n
}

// due returns the indexes of the records a sync tries, oldest first.
func (st *mediaState) due(maxSize int64) []int {
	var out []int
	for i := range st.records {
		if st.records[i].due(maxSize) {
			out = append(out, i)
		}
	}
	slices.SortStableFunc(out, func(a, b int) int { return st.records[a].SeenAt.Compare(st.records[b].SeenAt) })
	return out
}

// packLines encodes values as JSON lines, gzipped, in base64 ("" for none).
func packLines[T any](values []T) (string, error) {
	if len(values) == 0 {
		return "", nil
	}
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	enc := json.NewEncoder(zw)
	for i := range values {
		if err := enc.Encode(&values[i]); err != nil {
			return "", err
		}
	}
	if err := zw.Close(); err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(buf.Bytes()), nil
}

// unpackLines calls f with each line packLines wrote.
func unpackLines(text string, f func(line []byte) error) error {
	if text == "" {
		return nil
	}
	raw, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return fmt.Errorf("files are not base64: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("files: %w", err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		return fmt.Errorf("files: %w", err)
	}
	for line := range bytes.Lines(data) {
		if err := f(bytes.TrimSuffix(line, []byte("\n"))); err != nil {
			return fmt.Errorf("files: %w", err)
		}
	}
	return nil
}
