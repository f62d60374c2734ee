package account

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cq-source-x/cq-source-x/ids"
	"github.com/cq-source-x/cq-source-x/walk"
)

// The day's ledger of the meter (billing/ledger.go) as the state keeps it.
// It makes estimates, never a reason to fail: a value that cannot be read is
// dropped. Most of its posts are held by the bookmarks walk's memory already:
// the ledger names those by their place in its held list, a bit each.

// billedVersion is the ledger's format: 1 listed every post billed, 2 names
// the held ones by their place.
const billedVersion = 2

// billedValue is the ledger in the state backend.
type billedValue struct {
	Version int    `json:"version"`
	Day     string `json:"day"`
	// HeldAt is the SyncedAt of the bookmarks memory whose held list Held
	// refers to; Held has a bit for each of its posts, set if it was billed.
	HeldAt *time.Time `json:"held_at,omitempty"`
	Held   *heldBits  `json:"held,omitempty"`
	// Posts are the posts billed that Held does not name.
	Posts *walk.IDList `json:"posts"`
	Users *walk.IDList `json:"users"`
}

// EnterBilling is called by every resolver that bills the account's reads,
// before its first request, and the function it returns once it bills no
// more: the meter's EnterBilling and LeaveBilling, with the ledger's value.
func (s *Session) EnterBilling(ctx context.Context) (leave func()) {
	if s.Meter == nil || s.State == nil || s.UserID == "" {
		return func() {}
	}
	_ = s.Meter.EnterBilling(s.UserID, func() (string, []string, []string, error) { return s.loadBilled(ctx) })
	return func() {
		err := s.Meter.LeaveBilling(s.UserID, func() error { return s.SaveBilled(ctx, s.Clock.Now()) })
		if err != nil && s.Err == nil {
			s.Logger.Warn().Err(err).Msg("the resources billed today were not saved; the next sync today may overestimate its cost")
		}
	}
}

// StoreBilled stores what the session's meter still holds of the account's
// ledger (billed outside the resolvers, or kept by a store that failed),
// after the data tables and before the state is flushed.
func (s *Session) StoreBilled(ctx context.Context) {
	if s.Meter != nil && s.Meter.HoldsBilled(s.UserID) {
		s.EnterBilling(ctx)()
	}
}

// loadBilled reads the ledger an earlier sync of the same UTC day left (or
// this sync put away).
func (s *Session) loadBilled(ctx context.Context) (day string, posts, users []string, err error) {
	value, err := s.State.GetKey(ctx, BilledKey(s.UserID))
	if err != nil || value == "" {
		return "", nil, nil, nil
	}
	var v billedValue
	if err := json.Unmarshal([]byte(value), &v); err != nil || v.Version < 1 || v.Version > billedVersion || v.Posts == nil || v.Users == nil {
		s.Logger.Warn().Str("key", BilledKey(s.UserID)).Msg("the ledger of resources billed today is unreadable; this sync's usage estimates count every resource as billed")
		return "", nil, nil, nil
	}
	posts = v.Posts.IDs()
	if v.Held != nil {
		held, err := s.billedHeld(ctx, &v)
		if err != nil {
			s.Logger.Warn().Err(err).Str("key", BilledKey(s.UserID)).Msg("the ledger of resources billed today names posts of a list the state no longer holds; this sync's usage estimates count them as billed")
		}
		posts = append(posts, held...)
	}
	return v.Day, posts, v.Users.IDs(), nil
}

// billedHeld are the posts of the bookmarks memory's held list that v says
// were billed.
func (s *Session) billedHeld(ctx context.Context, v *billedValue) ([]string, error) {
	mem, err := s.LoadMemory(ctx, BookmarksKey(s.UserID))
	switch {
	case err != nil:
		return nil, err
	case mem == nil || v.HeldAt == nil || !mem.SyncedAt.Equal(*v.HeldAt) || mem.Held.Len() != v.Held.n:
		return nil, errors.New("the bookmarks memory is not the one the ledger was saved with")
	}
	var ids []string
	for i := range v.Held.n {
		if v.Held.has(i) {
			ids = append(ids, mem.Held.At(i))
		}
	}
	return ids, nil
}

// SaveBilled stores the ledger of the session's meter for the next sync of
// the same UTC day (and clears one of an earlier day). It refers to the
// bookmarks memory the state holds, which is flushed with it. A failed
// account's ledger is not stored (the meter keeps it).
func (s *Session) SaveBilled(ctx context.Context, now time.Time) error {
	if s.Err != nil {
		return s.Err
	}
	day, posts, users := s.Meter.BilledToday(s.UserID)
	value := ""
	if day == now.UTC().Format(time.DateOnly) && posts.Len()+users.Len() > 0 {
		v, err := s.newBilledValue(ctx, day, posts, users)
		if err != nil {
			return err
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		value = string(b)
	} else if old, err := s.State.GetKey(ctx, BilledKey(s.UserID)); err != nil || old == "" {
		return err // nothing to clear
	}
	if err := SetKey(ctx, s.State, BilledKey(s.UserID), value); err != nil {
		return fmt.Errorf("%s: %w", s.ID(), err)
	}
	return nil
}

// newBilledValue is the ledger of day: the posts billed that the bookmarks
// memory holds, by their place in its held list, and the others by id.
func (s *Session) newBilledValue(ctx context.Context, day string, posts, users *ids.Set) (*billedValue, error) {
	v := &billedValue{Version: billedVersion, Day: day, Posts: walk.NewIDList(), Users: walk.NewIDList(users.IDs()...)}
	mem, err := s.LoadMemory(ctx, BookmarksKey(s.UserID))
	if err != nil {
		return nil, err
	}
	var held ids.Set // the posts billed that Held names
	if mem != nil && mem.Held.Len() > 0 {
		bits := newHeldBits(mem.Held.Len())
		for i := range mem.Held.Len() {
			if id := mem.Held.At(i); posts.Has(id) {
				bits.set(i)
				held.Add(id)
			}
		}
		if held.Len() > 0 {
			v.HeldAt, v.Held = &mem.SyncedAt, bits
		}
	}
	if held.Len() < posts.Len() {
		for _, id := range posts.IDs() {
			if !held.Has(id) {
				v.Posts.Append(id)
			}
		}
	}
	return v, nil
}

// heldBits is a bit per post of a held list.
type heldBits struct {
	n    int
	bits []byte
}

func newHeldBits(n int) *heldBits { return &heldBits{n: n, bits: make([]byte, (n+7)/8)} }

func (h *heldBits) set(i int)      { h.bits[i/8] |= 1 << (i % 8) }
func (h *heldBits) has(i int) bool { return h.bits[i/8]&(1<<(i%8)) != 0 }

// MarshalText encodes the bits as the count, then the bits: packed as text.
func (h *heldBits) MarshalText() ([]byte, error) {
	raw := binary.AppendUvarint(nil, uint64(h.n))
	return ids.Pack(append(raw, h.bits...))
}

// UnmarshalText decodes what MarshalText wrote.
func (h *heldBits) UnmarshalText(text []byte) error {
	raw, err := ids.Unpack(text, "billed held posts")
	if err != nil {
		return err
	}
	n, size := binary.Uvarint(raw)
	if size <= 0 || n > uint64(8*(len(raw)-size)) || uint64(len(raw)-size) != (n+7)/8 {
		return errors.New("billed held posts: damaged")
	}
	*h = heldBits{n: int(n), bits: raw[size:]}
	return nil
}
