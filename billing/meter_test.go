package billing

import (
	"math"
	"testing"
	"time"
)

// A rate that is not a finite number ≥ 0 is X's.
func TestARateThatIsNotAPriceIsXs(t *testing.T) {
	for _, r := range []float64{-1, math.NaN(), math.Inf(1)} {
		if got := NewMeter(Rates{Post: r, OwnedPost: r, User: r, Write: r}).Rates(); got != DefaultRates() {
			t.Errorf("rates %v: %+v", r, got)
		}
	}
}

// X bills a write per request, never de-duplicated: the same post added
// twice the same day is two requests billed, at the write rate.
func TestWritesAreBilledPerRequest(t *testing.T) {
	m := NewMeter(DefaultRates())
	now := time.Date(2026, 5, 1, 9, 0, 0, 0, time.UTC)
	for range 2 {
		m.Bill(testUser, "add_bookmark", now, Billed{Writes: 1}, true)
	}
	u := m.Usage(testUser, "add_bookmark")
	if u.WritesBilled != 2 || u.OK != 2 || u.PostsBilled != 0 || u.WritesUSD != 2*DefaultRates().Write || u.USD != u.WritesUSD {
		t.Errorf("usage %+v", u)
	}
}

// The posts of an owned read are priced at the owned-read rate only for a
// user who owns the app, and only on the operation whose bill says so.
func TestOwnedReadsAreTheOwnersOwnedBills(t *testing.T) {
	m := NewMeter(DefaultRates())
	now := time.Now()
	m.SetOwnedReads(testUser, true)
	m.Bill(testUser, listBookmarks, now, Billed{Posts: []string{"1", "2"}, Owned: true}, true)
	m.Bill(testUser, "get_folder", now, Billed{Posts: []string{"3"}}, true)
	m.Bill("7", listBookmarks, now, Billed{Posts: []string{"1"}, Owned: true}, true)
	if u := m.Usage(testUser, listBookmarks); !u.OwnedReads || u.PostsUSD != 2*DefaultRates().OwnedPost {
		t.Errorf("the owner's bookmarks: %+v", u)
	}
	if u := m.Usage(testUser, "get_folder"); u.OwnedReads || u.PostsUSD != DefaultRates().Post {
		t.Errorf("the owner's folder: %+v", u)
	}
	if u := m.Usage("7", listBookmarks); u.OwnedReads || u.PostsUSD != DefaultRates().Post {
		t.Errorf("another user's bookmarks: %+v", u)
	}
}
