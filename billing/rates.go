// Package billing is what X bills and what the program says it costs: X's
// rates, the meter of an API client's responses, the ledger of what a user
// was billed on the current UTC day, and the estimates told before a run.
// Every figure is an estimate: X publishes rates, not bills per request.
package billing

import "math"

// Rates are X's prices in USD: reads per resource returned, writes per
// request (X's pricing page).
type Rates struct {
	Post      float64 // a post read
	OwnedPost float64 // a post of an "owned read": the app's owner reading their own bookmarks
	User      float64 // a user read (an expanded author, or GET /2/users/me)
	Write     float64 // a bookmark write: one POST or DELETE /2/users/:id/bookmarks
}

// DefaultRates are X's published pay-per-use rates (2026), held here only.
func DefaultRates() Rates {
	return Rates{Post: 0.005, OwnedPost: 0.001, User: 0.010, Write: 0.005}
}

// withDefaults replaces a rate that is not a finite number ≥ 0 by X's.
func (r Rates) withDefaults() Rates {
	d := DefaultRates()
	for _, p := range []struct{ v, def *float64 }{{&r.Post, &d.Post}, {&r.OwnedPost, &d.OwnedPost}, {&r.User, &d.User}, {&r.Write, &d.Write}} {
		if !(*p.v >= 0) || math.IsInf(*p.v, 0) {
			*p.v = *p.def
		}
	}
	return r
}

func (r Rates) PostRate(owned bool) float64 {
	if owned {
		return r.OwnedPost
	}
	return r.Post
}

// DefaultMaxBilledWrites is the spec's default max_billed_writes (per account and run).
const DefaultMaxBilledWrites = 1000
