package compliance

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/ids"
)

// An account's archived posts, as the state keeps them when the plugin
// cannot read the destination (a CloudQuery sync): their ids, which the
// checks cover, and the dates of each post's row (Dates), which its row
// keeps once redacted and which the plugin must send again without the
// post. The value is JSON (archivedJSON); an earlier version kept the ids
// alone (ids.Sorted's text), read as posts whose dates are not known.
//
// Rows found by one sync share first_seen_at and bookmarked_after: each
// distinct pair is kept once (sightings), and each post keeps the index of
// its pair, its found_position and its created_at as milliseconds from the
// time its id says (an X id begins with its creation time in milliseconds;
// X gives created_at in whole seconds, so that is under a second): a few
// bytes a post before compression.

// archivedRecord is the posts an account archived.
type archivedRecord struct {
	ids       ids.Sorted
	dates     []postDates // one per id; nil when none are known
	sightings []sighting
}

// sighting is the first_seen_at and bookmarked_after of a sync's rows
// (Unix microseconds, as the columns keep them; 0: none).
type sighting struct{ firstSeen, bookmarkedAfter int64 }

// postDates is a post's dates: the index of its sighting (-1: not known),
// its found_position and created_at (Unix milliseconds; 0: none).
type postDates struct {
	sighting int32
	position int64
	created  int64
}

var unknownDates = postDates{sighting: -1}

type archivedJSON struct {
	Version int    `json:"version"`
	IDs     string `json:"ids"`
	Dates   string `json:"dates"`
}

const archivedVersion = 2

// xEpochMillis is when X ids begin: an id's top bits are its creation time
// in milliseconds since then.
const xEpochMillis = 1288834974657

func idMillis(id uint64) int64 { return int64(id>>22) + xEpochMillis }

func (r *archivedRecord) marshal() (string, error) {
	text, err := r.ids.Marshal()
	if err != nil {
		return "", err
	}
	raw := binary.AppendUvarint(nil, uint64(len(r.sightings)))
	for _, s := range r.sightings {
		raw = binary.AppendVarint(raw, s.firstSeen)
		raw = binary.AppendVarint(raw, s.bookmarkedAfter)
	}
	raw = binary.AppendUvarint(raw, uint64(len(r.ids)))
	for i, id := range r.ids {
		d := r.datesAt(i)
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
	dates, err := ids.Pack(raw)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(archivedJSON{Version: archivedVersion, IDs: text, Dates: string(dates)})
	return string(b), err
}

func (r *archivedRecord) datesAt(i int) postDates {
	if r.dates == nil {
		return unknownDates
	}
	return r.dates[i]
}

// unmarshalArchived decodes the value; what names it in errors.
func unmarshalArchived(value, what string) (*archivedRecord, error) {
	if !strings.HasPrefix(value, "{") { // the ids alone
		nums, err := ids.UnmarshalSorted(value, what)
		return &archivedRecord{ids: nums}, err
	}
	var j archivedJSON
	if err := json.Unmarshal([]byte(value), &j); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %w", what, err)
	}
	if j.Version != archivedVersion {
		return nil, fmt.Errorf("%s has version %d; this build reads version %d", what, j.Version, archivedVersion)
	}
	nums, err := ids.UnmarshalSorted(j.IDs, what)
	if err != nil {
		return nil, err
	}
	raw, err := ids.Unpack([]byte(j.Dates), what)
	if err != nil {
		return nil, err
	}
	rec := &archivedRecord{ids: nums}
	if err := rec.readDates(bytes.NewReader(raw), len(raw)); err != nil {
		return nil, fmt.Errorf("%s is damaged: %w", what, err)
	}
	return rec, nil
}

func (r *archivedRecord) readDates(rd *bytes.Reader, size int) error {
	n, err := binary.ReadUvarint(rd)
	if err != nil || n > uint64(size) {
		return errors.New("bad count of sightings")
	}
	r.sightings = make([]sighting, n)
	for i := range r.sightings {
		a, err1 := binary.ReadVarint(rd)
		b, err2 := binary.ReadVarint(rd)
		if err := errors.Join(err1, err2); err != nil {
			return fmt.Errorf("sighting %d: %w", i, err)
		}
		r.sightings[i] = sighting{a, b}
	}
	count, err := binary.ReadUvarint(rd)
	if err != nil || count != uint64(len(r.ids)) {
		return errors.New("the dates do not match the ids")
	}
	r.dates = make([]postDates, count)
	for i, id := range r.ids {
		tag, err := binary.ReadUvarint(rd)
		if err != nil || tag>>1 > uint64(len(r.sightings)) {
			return fmt.Errorf("dates of post %d", id)
		}
		d := postDates{sighting: int32(tag>>1) - 1}
		if d.sighting >= 0 {
			if d.position, err = binary.ReadVarint(rd); err != nil {
				return fmt.Errorf("dates of post %d", id)
			}
		}
		if tag&1 != 0 {
			delta, err := binary.ReadVarint(rd)
			if err != nil {
				return fmt.Errorf("dates of post %d", id)
			}
			d.created = idMillis(id) + delta
		}
		r.dates[i] = d
	}
	if rd.Len() != 0 {
		return errors.New("trailing bytes")
	}
	return nil
}

// found is a post a walk emitted, with its row's dates.
type found struct {
	id    uint64
	dates Dates
}

// add records posts, sorted by id, with their dates (the last of an id's
// wins: a row sent again has the dates it was first sent with).
func (r *archivedRecord) add(posts []found) {
	slices.SortStableFunc(posts, func(a, b found) int { return cmp.Compare(a.id, b.id) })
	emitted := make([]uint64, len(posts))
	for i, p := range posts {
		emitted[i] = p.id
	}
	all := r.ids.Union(ids.NewSorted(emitted))
	dates := make([]postDates, len(all))
	j, k := 0, 0
	for i, id := range all {
		dates[i] = unknownDates
		if j < len(r.ids) && r.ids[j] == id {
			dates[i] = r.datesAt(j)
			j++
		}
		for k < len(posts) && posts[k].id == id {
			dates[i] = r.postDates(id, posts[k].dates)
			k++
		}
	}
	r.ids, r.dates = all, dates
}

// postDates is d as kept, its sighting added when new.
func (r *archivedRecord) postDates(id uint64, d Dates) postDates {
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

// datesOf is the dates of post id; nil when not known.
func (r *archivedRecord) datesOf(id uint64) *Dates {
	i, ok := slices.BinarySearch(r.ids, id)
	if !ok || r.datesAt(i).sighting < 0 {
		return nil
	}
	d, s := r.dates[i], r.sightings[r.dates[i].sighting]
	out := &Dates{FirstSeenAt: time.UnixMicro(s.firstSeen).UTC(), FoundPosition: d.position}
	if s.bookmarkedAfter != 0 {
		t := time.UnixMicro(s.bookmarkedAfter).UTC()
		out.BookmarkedAfter = &t
	}
	if d.created != 0 {
		t := time.UnixMilli(d.created).UTC()
		out.CreatedAt = &t
	}
	return out
}

// addDates gives posts the dates the state keeps of them (none when the
// destination keeps the rows itself).
func (a *accountChecks) addDates(ctx context.Context, s *account.Session, posts []Affected) error {
	if s == nil || s.Archive != nil {
		return nil
	}
	rec, _, err := loadRecord(ctx, s)
	if err != nil {
		return err
	}
	for i := range posts {
		if posts[i].Bookmarked {
			n, _ := strconv.ParseUint(posts[i].PostID, 10, 64)
			posts[i].Dates = rec.datesOf(n)
		}
	}
	return nil
}
