package account

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/walk"
	"github.com/rs/zerolog"
)

// ledgerSession is an account of user 1 whose state holds a bookmarks
// memory of held posts, from a walk started at syncedAt.
func ledgerSession(t *testing.T, st *memstate.Store, held []string, syncedAt time.Time) *Session {
	t.Helper()
	s := &Session{UserID: "1", Meter: billing.NewMeter(billing.DefaultRates()), State: st, Logger: zerolog.Nop()}
	if held != nil {
		if err := s.SaveMemory(context.Background(), BookmarksKey("1"), &walk.Memory{Held: walk.NewIDList(held...), SyncedAt: syncedAt}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

func postIDsFrom(first, n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(first + i)
	}
	return ids
}

// The day's ledger names the billed posts of the bookmarks memory's held
// list by their place in it, and lists only the others: after a first sync,
// which bills every post held, it is a small part of the state, not a second
// list of every post; the next sync that day gets every id back.
func TestTheDaysLedgerNamesTheHeldPostsByTheirPlace(t *testing.T) {
	ctx := context.Background()
	st := memstate.New()
	now := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	held := postIDsFrom(1_880_000_000_000_000_000, 20_000)
	s1 := ledgerSession(t, st, held, now)
	s1.Meter.RestoreBilled("1", "2026-05-01", append([]string{"5", "6"}, held...), []string{"7"})
	if err := s1.SaveBilled(ctx, now); err != nil {
		t.Fatal(err)
	}
	ledger, _ := st.GetKey(ctx, BilledKey("1"))
	memory, _ := st.GetKey(ctx, BookmarksKey("1"))
	if len(ledger) > len(memory)/4 {
		t.Errorf("the ledger takes %d bytes beside a held list of %d", len(ledger), len(memory))
	}
	s2 := ledgerSession(t, st, nil, now)
	bringBack(ctx, s2)
	day, posts, users := s2.Meter.BilledToday("1")
	if day != "2026-05-01" || posts.Len() != len(held)+2 || !posts.Has("5") || !posts.Has(held[12_345]) || users.Len() != 1 {
		t.Errorf("restored %s: %d posts (5: %v), %d users", day, posts.Len(), posts.Has("5"), users.Len())
	}
}

// Places in a held list say nothing of another list: when the bookmarks
// memory is not the one the ledger was saved with, only the posts it lists
// by id are restored, and the others count as billed if read again.
func TestALedgerIsNotReadAgainstAnotherHeldList(t *testing.T) {
	ctx := context.Background()
	st := memstate.New()
	now := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	s1 := ledgerSession(t, st, postIDsFrom(100, 50), now)
	s1.Meter.RestoreBilled("1", "2026-05-01", append([]string{"5"}, postIDsFrom(100, 50)...), nil)
	if err := s1.SaveBilled(ctx, now); err != nil {
		t.Fatal(err)
	}
	s2 := ledgerSession(t, st, postIDsFrom(900, 50), now.Add(time.Hour))
	bringBack(ctx, s2)
	if _, posts, _ := s2.Meter.BilledToday("1"); posts.Len() != 1 || !posts.Has("5") {
		t.Errorf("restored %v, want 5 alone", posts.IDs())
	}
}

// A ledger saved by an earlier version, which listed every post, is read.
func TestALedgerOfTheFormerFormatIsRead(t *testing.T) {
	ctx := context.Background()
	st := memstate.New()
	old, _ := json.Marshal(map[string]any{"version": 1, "day": "2026-05-01", "posts": walk.NewIDList("100", "101"), "users": walk.NewIDList("7")})
	_ = st.SetKey(ctx, BilledKey("1"), string(old))
	s := ledgerSession(t, st, nil, time.Time{})
	bringBack(ctx, s)
	if day, posts, users := s.Meter.BilledToday("1"); day != "2026-05-01" || posts.Len() != 2 || users.Len() != 1 {
		t.Errorf("restored %s %v %v", day, posts.IDs(), users.IDs())
	}
}

// bringBack is a resolver's EnterBilling, without the leaving.
func bringBack(ctx context.Context, s *Session) {
	_ = s.Meter.EnterBilling(s.UserID, func() (string, []string, []string, error) { return s.loadBilled(ctx) })
}

// The resolvers that bill an account's reads put its ledger of the day away
// once the last of them is done: it is in the state, not in the meter,
// until the next of them brings it back.
func TestTheDaysLedgerIsPutAwayBetweenTheResolversThatBill(t *testing.T) {
	ctx := context.Background()
	st := memstate.New()
	now := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	s := ledgerSession(t, st, postIDsFrom(100, 50), now)
	s.Clock = clock.NewVirtual(now)
	leave := s.EnterBilling(ctx)
	s.Meter.RestoreBilled("1", "2026-05-01", postIDsFrom(100, 50), []string{"7"}) // as the walk's reads would
	leave()
	if s.Meter.HoldsBilled("1") {
		t.Error("the meter still holds the ledger")
	}
	if v, _ := st.GetKey(ctx, BilledKey("1")); v == "" {
		t.Fatal("the ledger was not stored")
	}
	leave = s.EnterBilling(ctx)
	defer leave()
	if day, posts, users := s.Meter.BilledToday("1"); day != "2026-05-01" || posts.Len() != 50 || users.Len() != 1 {
		t.Errorf("brought back %s: %d posts, %d users", day, posts.Len(), users.Len())
	}
}

// The resources billed on a UTC day survive from one sync to the next of
// the same day (state backend), and are dropped the next day.
func TestTheDaysBilledResourcesCarryToTheNextSyncThatDay(t *testing.T) {
	ctx := context.Background()
	st := memstate.New()
	day1 := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	sess := func() *Session {
		return &Session{UserID: "1", Meter: billing.NewMeter(billing.DefaultRates()), State: st, Logger: zerolog.Nop()}
	}
	s1 := sess()
	s1.Meter.RestoreBilled("1", "2026-05-01", []string{"100", "101"}, []string{"7"})
	if err := s1.SaveBilled(ctx, day1); err != nil {
		t.Fatal(err)
	}
	s2 := sess()
	bringBack(ctx, s2)
	if day, posts, users := s2.Meter.BilledToday("1"); day != "2026-05-01" || posts.Len() != 2 || users.Len() != 1 {
		t.Fatalf("restored %s %v %v", day, posts.IDs(), users.IDs())
	}
	// The next day the ledger of the day before is cleared.
	if err := s2.SaveBilled(ctx, day1.AddDate(0, 0, 1)); err != nil {
		t.Fatal(err)
	}
	if v, _ := st.GetKey(ctx, BilledKey("1")); v != "" {
		t.Errorf("a ledger of an earlier day was kept: %.60s", v)
	}
	// A damaged value is dropped, not a failure.
	_ = st.SetKey(ctx, BilledKey("1"), `{"version":1,"day":"2026-05-01","posts":"!!"}`)
	s3 := sess()
	bringBack(ctx, s3)
	if day, _, _ := s3.Meter.BilledToday("1"); day != "" {
		t.Errorf("damaged ledger restored as %s", day)
	}
}
