package spec

import (
	"fmt"
	"math"

	"github.com/cq-source-x/cq-source-x/billing"
)

// maxRateUSD bounds every rate: a resource priced above a dollar is a typo,
// and a huge rate would print as +Inf.
const maxRateUSD = 1.0

// Rates are the spec's prices (X's by default).
func (s *Spec) Rates() billing.Rates {
	return billing.Rates{Post: *s.PostReadUSD, OwnedPost: *s.OwnedReadUSD, User: *s.UserReadUSD, Write: *s.BookmarkWriteUSD}
}

// OwnedReads reports whether the reads of accounts[i], whose X user id is
// userID, are "owned reads" (its user owns the developer app that issued its
// token, so X bills its bookmark posts at owned_read_usd): its owned_reads
// when set, else whether userID is app_owner_user_id, for an account of the
// spec's app (one without a client_id of its own).
func (s *Spec) OwnedReads(i int, userID string) bool {
	a := s.Accounts[i]
	if a.OwnedReads != nil {
		return *a.OwnedReads
	}
	return s.AppOwnerUserID != "" && a.ClientID == "" && userID != "" && userID == s.AppOwnerUserID
}

func (s *Spec) setPricingDefaults() {
	x := billing.DefaultRates()
	orDefault(&s.PostReadUSD, x.Post)
	orDefault(&s.OwnedReadUSD, x.OwnedPost)
	orDefault(&s.UserReadUSD, x.User)
	orDefault(&s.BookmarkWriteUSD, x.Write)
	orDefault(&s.MaxBilledWrites, billing.DefaultMaxBilledWrites)
}

// validatePricing reports the rates, caps and owners that cannot be right.
func (s *Spec) validatePricing(add func(field, format string, args ...any)) {
	for _, r := range []struct {
		field, per string
		v          *float64
	}{{"post_read_usd", "resource", s.PostReadUSD}, {"owned_read_usd", "resource", s.OwnedReadUSD}, {"user_read_usd", "resource", s.UserReadUSD},
		{"bookmark_write_usd", "request", s.BookmarkWriteUSD}} {
		if v := *r.v; v < 0 || v > maxRateUSD || math.IsNaN(v) {
			add(r.field, "must be a price in USD between 0 and %v per %s, got %v", maxRateUSD, r.per, v)
		}
	}
	if *s.MaxBilledWrites < 0 {
		add("max_billed_writes", "must be 0 (no cap) or positive, got %d", *s.MaxBilledWrites)
	}
	if s.AppOwnerUserID != "" && !userIDPattern.MatchString(s.AppOwnerUserID) {
		add("app_owner_user_id", "must be a decimal X user id of 1 to 19 digits without a leading zero, got %q", s.AppOwnerUserID)
	}
	for i, a := range s.Accounts {
		if a.OwnedReads != nil && *a.OwnedReads && a.ClientID == "" && s.AppOwnerUserID != "" && a.UserID != "" && a.UserID != s.AppOwnerUserID {
			add(fmt.Sprintf("accounts[%d].owned_reads", i), "is true, but the account's user %s is not app_owner_user_id %s, and only the app's owner reads its own bookmarks at the owned-read rate", a.UserID, s.AppOwnerUserID)
		}
	}
}
