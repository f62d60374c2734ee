package archived

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/cq-source-x/cq-source-x/ids"
	"github.com/cq-source-x/cq-source-x/outbox"
)

// Legacy is what versions before the record kept of an account's archive,
// under keys of their own (account.LegacyKeys): each value as the state
// holds it, "" for none.
type Legacy struct {
	// Archived is the posts the compliance checks covered, with their rows'
	// dates (x_post_compliance/archived), or their ids alone before that.
	Archived string
	// Referenced and Authors are the referenced posts and the authors of
	// every post (x_post_compliance/referenced and /authors).
	Referenced, Authors string
	// MediaFiles is the media files and the rows of x_media_files to send
	// again (x_media_files).
	MediaFiles string
	// Bookmarks are posts archived that those do not name: the exporter's
	// written ids, or, for a state older than Archived, the posts the
	// bookmarks walk holds.
	Bookmarks ids.Sorted
}

// Migrate makes the record of what legacy kept; what names the values in
// errors. The posts' authors are known only when legacy kept them.
func Migrate(l Legacy, what string) (*Record, error) {
	r := &Record{Outbox: &outbox.Box{}}
	if err := r.readArchived(l.Archived, what); err != nil {
		return nil, err
	}
	r.SetBookmarks(r.bookmarks.ids.Union(ids.NewSorted(slices.Clone(l.Bookmarks))))
	referenced, err := ids.UnmarshalSorted(l.Referenced, what)
	if err != nil {
		return nil, err
	}
	r.referenced = posts{ids: referenced, author: make([]uint32, len(referenced))}
	if err := r.readAuthors(l.Authors, what); err != nil {
		return nil, err
	}
	r.authorsKept = l.Authors != ""
	if l.MediaFiles != "" {
		var j struct {
			Files  string
			Outbox json.RawMessage
		}
		if err := decodeJSON(l.MediaFiles, what+": the list of media files", 1, &j); err != nil {
			return nil, err
		}
		if err := r.readFiles(j.Files, j.Outbox, what); err != nil {
			return nil, err
		}
	}
	r.Marked = len(r.StoredFiles()) == 0
	return r, nil
}

// readArchived reads the archived posts: JSON of their ids and dates, or
// their ids alone (ids.Sorted's text).
func (r *Record) readArchived(value, what string) error {
	if !strings.HasPrefix(value, "{") {
		nums, err := ids.UnmarshalSorted(value, what)
		r.bookmarks = posts{ids: nums, author: make([]uint32, len(nums))}
		return err
	}
	var j struct{ IDs, Dates string }
	if err := decodeJSON(value, what+": the list of archived posts", 2, &j); err != nil {
		return err
	}
	nums, err := ids.UnmarshalSorted(j.IDs, what)
	if err != nil {
		return err
	}
	raw, err := ids.Unpack([]byte(j.Dates), what)
	if err != nil {
		return err
	}
	rd := bytes.NewReader(raw)
	if err := r.readSightings(rd, len(raw)); err != nil {
		return fmt.Errorf("%s: the archived posts' dates are damaged", what)
	}
	if count, err := binary.ReadUvarint(rd); err != nil || count != uint64(len(nums)) {
		return fmt.Errorf("%s: the archived posts' dates do not match their ids", what)
	}
	r.bookmarks = posts{ids: nums, author: make([]uint32, len(nums)), dates: make([]postDates, len(nums))}
	for i, id := range nums {
		if r.bookmarks.dates[i], err = r.readDates(rd, id); err != nil {
			return fmt.Errorf("%s: the dates of archived post %d are damaged", what, id)
		}
	}
	if rd.Len() != 0 {
		return fmt.Errorf("%s: the archived posts' dates are damaged: trailing bytes", what)
	}
	return nil
}

// readAuthors gives the posts their authors: per author, in id order, its
// id's delta from the last, its number of posts and their ids' deltas.
func (r *Record) readAuthors(value, what string) error {
	if value == "" {
		return nil
	}
	var j struct {
		Authors int
		Posts   string
	}
	if err := decodeJSON(value, what+": the list of authors", 1, &j); err != nil {
		return err
	}
	raw, err := ids.Unpack([]byte(j.Posts), what)
	if err != nil {
		return err
	}
	rd := bytes.NewReader(raw)
	var author uint64
	for i := range j.Authors {
		d, err1 := binary.ReadUvarint(rd)
		n, err2 := binary.ReadUvarint(rd)
		if errors.Join(err1, err2) != nil || (i > 0 && d == 0) || n > uint64(rd.Len()) {
			return fmt.Errorf("%s: the authors are damaged at author %d of %d", what, i, j.Authors)
		}
		author += d
		index := r.authorOf(strconv.FormatUint(author, 10))
		var post uint64
		for range n {
			pd, err := binary.ReadUvarint(rd)
			if err != nil {
				return fmt.Errorf("%s: the authors are damaged at author %d of %d", what, i, j.Authors)
			}
			post += pd
			for _, p := range []*posts{&r.bookmarks, &r.referenced} {
				if k, ok := slices.BinarySearch(p.ids, post); ok {
					p.author[k] = index
				}
			}
		}
	}
	if rd.Len() != 0 {
		return fmt.Errorf("%s: the authors are damaged: trailing bytes", what)
	}
	return nil
}
