// Package archived is one account's record of what it archived: its
// bookmarked posts and the posts they reference, with their authors, the
// dates a redacted row keeps, and the media files each uses (Files). One
// value per account in the state backend (account.RecordKey).
package archived

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cq-source-x/cq-source-x/ids"
	"github.com/cq-source-x/cq-source-x/outbox"
)

// Dates are what a bookmark's row keeps once redacted, besides its key.
type Dates struct {
	CreatedAt       *time.Time
	FirstSeenAt     time.Time
	BookmarkedAfter *time.Time
	FoundPosition   int64
}

// Post is a post of a row an account wrote, with its author's user id (""
// when X gave none) and, for a bookmark, its row's dates (nil: not kept).
type Post struct {
	ID, AuthorID string
	Dates        *Dates
}

// Record is one account's record. Its zero value is an empty record.
type Record struct {
	bookmarks, referenced posts
	sightings             []sighting
	authors               []uint64 // by index; posts name theirs by index + 1 (0: none)
	authorIndex           map[uint64]uint32
	// Files are the media files of the posts, with what became of each;
	// Outbox the rows of x_media_files kept to send again (package outbox).
	Files  []File
	Outbox *outbox.Box
	// Marked says the store holds the account's mark on each file stored
	// (store.Mark); a record migrated from an earlier state has them written.
	Marked bool
	// authorsKept says the record holds its posts' authors (Migrate: only
	// when the earlier state kept them).
	authorsKept bool
}

// posts are posts in id order, with their authors and, for bookmarks when
// kept, their dates (nil when none is).
type posts struct {
	ids    ids.Sorted
	author []uint32
	dates  []postDates
}

// sighting is the first_seen_at and bookmarked_after of a sync's rows
// (Unix microseconds, as the columns keep them; 0: none): rows found by
// one sync share them, so each distinct pair is kept once.
type sighting struct{ firstSeen, bookmarkedAfter int64 }

// postDates is a post's dates: the index of its sighting (-1: not known),
// its found_position and created_at (Unix milliseconds; 0: none), kept as
// milliseconds from the time its id says (an X id begins with its creation
// time in milliseconds; X gives created_at in whole seconds).
type postDates struct {
	sighting int32
	position int64
	created  int64
}

var unknownDates = postDates{sighting: -1}

// xEpochMillis is when X ids begin: an id's top bits are its creation time
// in milliseconds since then.
const xEpochMillis = 1288834974657

func idMillis(id uint64) int64 { return int64(id>>22) + xEpochMillis }

// AddBookmarks records bookmarked posts, with their dates when keepDates
// (a destination that keeps the rows needs none). A post recorded again
// keeps its first dates (a row sent again has them) and gets the author it
// had none of.
func (r *Record) AddBookmarks(ps []Post, keepDates bool) {
	r.bookmarks = r.add(r.bookmarks, ps, keepDates)
}

// AddReferenced records posts the bookmarks reference.
func (r *Record) AddReferenced(ps []Post) { r.referenced = r.add(r.referenced, ps, false) }

func (r *Record) add(to posts, ps []Post, keepDates bool) posts {
	r.authorsKept = true
	news := map[uint64]Post{}
	for _, p := range ps {
		n, ok := ids.Parse(p.ID)
		if !ok {
			continue
		}
		if i, held := slices.BinarySearch(to.ids, n); held && to.author[i] == 0 {
			to.author[i] = r.authorOf(p.AuthorID) // one seeded from the files
		} else if _, added := news[n]; !held && !added {
			news[n] = p
		}
	}
	if len(news) == 0 {
		return to
	}
	withDates := keepDates || to.dates != nil
	return r.rebuild(to, to.ids.Union(slices.Sorted(maps.Keys(news))), withDates, func(id uint64) (uint32, postDates) {
		if !withDates {
			return r.authorOf(news[id].AuthorID), unknownDates
		}
		return r.authorOf(news[id].AuthorID), r.postDates(news[id].Dates)
	})
}

// rebuild is the posts of keep: those from holds with their author and
// dates (with dates when withDates), the others as fresh gives them.
func (r *Record) rebuild(from posts, keep ids.Sorted, withDates bool, fresh func(id uint64) (uint32, postDates)) posts {
	out := posts{ids: keep, author: make([]uint32, len(keep))}
	if withDates {
		out.dates = make([]postDates, len(keep))
	}
	j := 0
	for i, id := range keep {
		for j < len(from.ids) && from.ids[j] < id {
			j++
		}
		var d postDates
		if j < len(from.ids) && from.ids[j] == id {
			out.author[i], d = from.author[j], from.datesAt(j)
		} else {
			out.author[i], d = fresh(id)
		}
		if withDates {
			out.dates[i] = d
		}
	}
	return out
}

func (p posts) datesAt(i int) postDates {
	if p.dates == nil {
		return unknownDates
	}
	return p.dates[i]
}

// authorOf is the index + 1 of the author, added when new; 0 for none.
func (r *Record) authorOf(id string) uint32 {
	n, ok := ids.Parse(id)
	if !ok {
		return 0
	}
	if r.authorIndex == nil {
		r.authorIndex = make(map[uint64]uint32, len(r.authors))
		for i, a := range r.authors {
			r.authorIndex[a] = uint32(i)
		}
	}
	i, ok := r.authorIndex[n]
	if !ok {
		i = uint32(len(r.authors))
		r.authors = append(r.authors, n)
		r.authorIndex[n] = i
	}
	return i + 1
}

// postDates is d as kept, its sighting added when new.
func (r *Record) postDates(d *Dates) postDates {
	if d == nil {
		return unknownDates
	}
	s := sighting{firstSeen: d.FirstSeenAt.UnixMicro()}
	if d.BookmarkedAfter != nil {
		s.bookmarkedAfter = d.BookmarkedAfter.UnixMicro()
	}
	i := slices.Index(r.sightings, s)
	if i < 0 {
		i = len(r.sightings)
		r.sightings = append(r.sightings, s)
	}
	out := postDates{sighting: int32(i), position: d.FoundPosition}
	if d.CreatedAt != nil {
		out.created = d.CreatedAt.UnixMilli()
	}
	return out
}

// SetBookmarks makes keep the record's bookmarked posts (the exporter's
// repair: the posts its files hold): those it holds keep their author and
// dates, the others have none. It reports whether the record changed.
func (r *Record) SetBookmarks(keep ids.Sorted) bool {
	if slices.Equal(keep, r.bookmarks.ids) {
		return false
	}
	r.bookmarks = r.rebuild(r.bookmarks, keep, r.bookmarks.dates != nil, func(uint64) (uint32, postDates) { return 0, unknownDates })
	return true
}

// Bookmarks are the posts of the account's x_bookmarks rows.
func (r *Record) Bookmarks() ids.Sorted { return r.bookmarks.ids }

// Referenced are the posts its bookmarks reference whose content it holds.
func (r *Record) Referenced() ids.Sorted { return r.referenced.ids }

// AuthorsKept reports whether the record holds its posts' authors.
func (r *Record) AuthorsKept() bool { return r.authorsKept }

// Authors are the posts of each author, bookmarked and referenced.
func (r *Record) Authors() map[uint64]ids.Sorted {
	out := map[uint64]ids.Sorted{}
	for _, p := range []posts{r.bookmarks, r.referenced} {
		for i, a := range p.author {
			if a > 0 {
				out[r.authors[a-1]] = append(out[r.authors[a-1]], p.ids[i])
			}
		}
	}
	for a, ps := range out {
		out[a] = ids.NewSorted(ps)
	}
	return out
}

// DatesOf is the dates of the bookmarked post id; nil when not known.
func (r *Record) DatesOf(id uint64) *Dates {
	i, ok := slices.BinarySearch(r.bookmarks.ids, id)
	if !ok || r.bookmarks.datesAt(i).sighting < 0 {
		return nil
	}
	d, s := r.bookmarks.dates[i], r.sightings[r.bookmarks.dates[i].sighting]
	out := &Dates{FirstSeenAt: time.UnixMicro(s.firstSeen).UTC(), FoundPosition: d.position}
	if s.bookmarkedAfter != 0 {
		out.BookmarkedAfter = new(time.UnixMicro(s.bookmarkedAfter).UTC())
	}
	if d.created != 0 {
		out.CreatedAt = new(time.UnixMilli(d.created).UTC())
	}
	return out
}

// recordJSON is the value of a record.
type recordJSON struct {
	Version int `json:"version"`
	// Posts is, packed (ids.Pack): the sightings, the authors, the
	// bookmarked posts and the referenced ones (posts.marshal).
	Posts     string          `json:"posts"`
	NoAuthors bool            `json:"no_authors,omitempty"` // !authorsKept
	Marked    bool            `json:"marked,omitempty"`
	Files     string          `json:"files,omitempty"` // packFiles
	Outbox    json.RawMessage `json:"outbox,omitempty"`
}

const recordVersion = 1

// Marshal encodes the record for the state.
func (r *Record) Marshal() (string, error) {
	raw := binary.AppendUvarint(nil, uint64(len(r.sightings)))
	for _, s := range r.sightings {
		raw = binary.AppendVarint(raw, s.firstSeen)
		raw = binary.AppendVarint(raw, s.bookmarkedAfter)
	}
	sorted := slices.Sorted(slices.Values(r.authors))
	renumber := make(map[uint64]uint32, len(sorted))
	raw = binary.AppendUvarint(raw, uint64(len(sorted)))
	var prev uint64
	for i, a := range sorted {
		raw = binary.AppendUvarint(raw, a-prev)
		renumber[a], prev = uint32(i+1), a
	}
	newIndex := func(a uint32) uint64 {
		if a == 0 {
			return 0
		}
		return uint64(renumber[r.authors[a-1]])
	}
	raw = r.bookmarks.marshal(raw, newIndex, true)
	raw = r.referenced.marshal(raw, newIndex, false)
	text, err := ids.Pack(raw)
	if err != nil {
		return "", err
	}
	files, err := packFiles(r.Files)
	if err != nil {
		return "", err
	}
	box, err := r.Outbox.Marshal()
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(recordJSON{Version: recordVersion, Posts: string(text), NoAuthors: !r.authorsKept, Marked: r.Marked,
		Files: files, Outbox: json.RawMessage(box)})
	return string(b), err
}

// marshal appends the posts: their count; with dates, whether they keep
// them; then each post's id delta, author and, when kept, its dates (the
// sighting's index + 1, shifted left, with a bit for created_at; the
// position and created_at's delta from its id's time when there).
func (p posts) marshal(raw []byte, author func(uint32) uint64, dated bool) []byte {
	raw = binary.AppendUvarint(raw, uint64(len(p.ids)))
	if dated {
		has := byte(0)
		if p.dates != nil {
			has = 1
		}
		raw = append(raw, has)
	}
	var prev uint64
	for i, id := range p.ids {
		raw = binary.AppendUvarint(raw, id-prev)
		raw = binary.AppendUvarint(raw, author(p.author[i]))
		prev = id
		if p.dates == nil {
			continue
		}
		d := p.dates[i]
		tag := uint64(d.sighting+1) << 1
		if d.created != 0 {
			tag |= 1
		}
		raw = binary.AppendUvarint(raw, tag)
		if d.sighting >= 0 {
			raw = binary.AppendVarint(raw, d.position)
		}
		if d.created != 0 {
			raw = binary.AppendVarint(raw, d.created-idMillis(id))
		}
	}
	return raw
}

// Unmarshal decodes what Marshal wrote ("" is an empty record); what names
// the value in errors.
func Unmarshal(value, what string) (*Record, error) {
	r := &Record{Outbox: &outbox.Box{}, authorsKept: true, Marked: true}
	if value == "" {
		return r, nil
	}
	var j recordJSON
	if err := decodeJSON(value, what, recordVersion, &j); err != nil {
		return nil, err
	}
	raw, err := ids.Unpack([]byte(j.Posts), what)
	if err != nil {
		return nil, err
	}
	if err := r.unmarshalPosts(bytes.NewReader(raw), len(raw)); err != nil {
		return nil, fmt.Errorf("%s is damaged: %w", what, err)
	}
	r.authorsKept, r.Marked = !j.NoAuthors, j.Marked
	return r, r.readFiles(j.Files, j.Outbox, what)
}

// decodeJSON decodes value, JSON whose version must be version, into v;
// what names the value in errors.
func decodeJSON(value, what string, version int, v any) error {
	var j struct{ Version int }
	if err := json.Unmarshal([]byte(value), &j); err != nil {
		return fmt.Errorf("%s is not valid JSON: %w", what, err)
	}
	if j.Version != version {
		return fmt.Errorf("%s has version %d; this build reads version %d", what, j.Version, version)
	}
	return json.Unmarshal([]byte(value), v)
}

// readFiles reads the media files and their outbox.
func (r *Record) readFiles(files string, box json.RawMessage, what string) error {
	var err error
	if r.Files, err = unpackFiles(files); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if len(box) > 0 {
		r.Outbox, err = outbox.Unmarshal(string(box), what)
	}
	return err
}

func (r *Record) unmarshalPosts(rd *bytes.Reader, size int) error {
	if err := r.readSightings(rd, size); err != nil {
		return err
	}
	n, err := readCount(rd, size)
	if err != nil {
		return err
	}
	r.authors = make([]uint64, n)
	var prev uint64
	for i := range r.authors {
		d, err := binary.ReadUvarint(rd)
		if err != nil || (i > 0 && d == 0) {
			return fmt.Errorf("author %d", i)
		}
		prev += d
		r.authors[i] = prev
	}
	if r.bookmarks, err = r.unmarshalList(rd, size, true); err != nil {
		return fmt.Errorf("bookmarks: %w", err)
	}
	if r.referenced, err = r.unmarshalList(rd, size, false); err != nil {
		return fmt.Errorf("referenced posts: %w", err)
	}
	if rd.Len() != 0 {
		return errors.New("trailing bytes")
	}
	return nil
}

// readCount reads a count of things in a value of size bytes.
func readCount(rd *bytes.Reader, size int) (int, error) {
	n, err := binary.ReadUvarint(rd)
	if err != nil || n > uint64(size) {
		return 0, errors.New("bad count")
	}
	return int(n), nil
}

// readSightings reads the sightings: their count, then each one's pair.
func (r *Record) readSightings(rd *bytes.Reader, size int) error {
	n, err := readCount(rd, size)
	if err != nil {
		return err
	}
	r.sightings = make([]sighting, n)
	for i := range r.sightings {
		a, err1 := binary.ReadVarint(rd)
		b, err2 := binary.ReadVarint(rd)
		if errors.Join(err1, err2) != nil {
			return fmt.Errorf("sighting %d", i)
		}
		r.sightings[i] = sighting{a, b}
	}
	return nil
}

func (r *Record) unmarshalList(rd *bytes.Reader, size int, dated bool) (posts, error) {
	n, err := readCount(rd, size)
	if err != nil {
		return posts{}, err
	}
	p := posts{ids: make(ids.Sorted, n), author: make([]uint32, n)}
	if dated {
		has, err := rd.ReadByte()
		if err != nil || has > 1 {
			return p, errors.New("bad dates flag")
		}
		if has == 1 {
			p.dates = make([]postDates, n)
		}
	}
	var prev uint64
	for i := range p.ids {
		d, err1 := binary.ReadUvarint(rd)
		a, err2 := binary.ReadUvarint(rd)
		if errors.Join(err1, err2) != nil || (i > 0 && d == 0) || a > uint64(len(r.authors)) {
			return p, fmt.Errorf("post %d of %d", i, n)
		}
		prev += d
		p.ids[i], p.author[i] = prev, uint32(a)
		if p.dates != nil {
			if p.dates[i], err = r.readDates(rd, prev); err != nil {
				return p, fmt.Errorf("dates of post %d", prev)
			}
		}
	}
	return p, nil
}

func (r *Record) readDates(rd *bytes.Reader, id uint64) (postDates, error) {
	tag, err := binary.ReadUvarint(rd)
	if err != nil || tag>>1 > uint64(len(r.sightings)) {
		return postDates{}, errors.New("bad tag")
	}
	d := postDates{sighting: int32(tag>>1) - 1}
	if d.sighting >= 0 {
		if d.position, err = binary.ReadVarint(rd); err != nil {
			return d, err
		}
	}
	if tag&1 != 0 {
		delta, err := binary.ReadVarint(rd)
		if err != nil {
			return d, err
		}
		d.created = idMillis(id) + delta
	}
	return d, nil
}
