package billing

import (
	"errors"
	"slices"
	"testing"
	"time"
)

const (
	testUser      = "2244994945"
	listBookmarks = Operation("list_bookmarks")
)

// A user's ledger of the day is put away by the last reader billing the
// user's reads to leave, and brought back by the next to enter: resources
// read again that day are still billed once, and between readers the meter
// holds none of it.
func TestTheLastReaderOutPutsTheLedgerAway(t *testing.T) {
	m := NewMeter(DefaultRates())
	now := time.Date(2026, 1, 15, 12, 0, 0, 0, time.UTC)
	var stored [][]string
	loads := 0
	load := func() (string, []string, []string, error) {
		loads++
		if len(stored) == 0 {
			return "", nil, nil, nil
		}
		return "2026-01-15", stored[len(stored)-1], nil, nil
	}
	store := func() error {
		_, posts, _ := m.BilledToday(testUser)
		stored = append(stored, posts.IDs())
		return nil
	}
	bill := func(ids ...string) { m.Bill(testUser, listBookmarks, now, Billed{Posts: ids}, true) }
	_ = m.EnterBilling(testUser, load)
	_ = m.EnterBilling(testUser, load)
	bill("1", "2")
	_ = m.LeaveBilling(testUser, store)
	if len(stored) != 0 || !m.HoldsBilled(testUser) {
		t.Fatalf("put away while a reader is still billing: %v", stored)
	}
	_ = m.LeaveBilling(testUser, store)
	if len(stored) != 1 || m.HoldsBilled(testUser) || loads != 1 {
		t.Fatalf("the last reader out: stored %v, held %v, %d loads", stored, m.HoldsBilled(testUser), loads)
	}
	_ = m.EnterBilling(testUser, load)
	bill("2", "3")
	_ = m.LeaveBilling(testUser, store)
	if u := m.Usage(testUser, listBookmarks); u.PostsBilled != 3 || loads != 2 || !slices.Equal(stored[1], []string{"1", "2", "3"}) {
		t.Errorf("%d billed (want 3), %d loads, stored %v", u.PostsBilled, loads, stored)
	}
}

// A ledger that could not be brought back is not stored over the one put
// away: the next reader tries the load again.
func TestALedgerThatCouldNotBeBroughtBackIsNotStored(t *testing.T) {
	m := NewMeter(DefaultRates())
	failing := func() (string, []string, []string, error) { return "", nil, nil, errors.New("backend down") }
	if err := m.EnterBilling(testUser, failing); err == nil {
		t.Fatal("a failed load reported no error")
	}
	m.Bill(testUser, listBookmarks, time.Now(), Billed{Posts: []string{"1"}}, true)
	if err := m.LeaveBilling(testUser, func() error { t.Error("stored"); return nil }); err != nil || !m.HoldsBilled(testUser) {
		t.Errorf("leave: %v, held %v", err, m.HoldsBilled(testUser))
	}
}
