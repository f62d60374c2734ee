package compliance

import (
	"context"
	"maps"
	"slices"
	"strconv"

	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/plan"
)

// What the archive does with a post X reports (compliance.on_change): each
// action once, a stronger one later going on from it (docs/compliance.md).

// Affected is an archived post whose action is not applied yet.
type Affected struct {
	plan.Reported
	Reason string
	// Dates are the bookmark row's, where the record keeps them (a
	// CloudQuery sync); else nil.
	Dates *archived.Dates
}

// Pending is the posts of the accounts of the sync's last check whose
// action is not applied yet, by account and in id order: posts X reported,
// and posts of authors X reported (the stronger action of the two, when
// both are).
func (c *Check) Pending(ctx context.Context) ([]Affected, error) {
	if c.ActionOf == nil {
		return nil, nil
	}
	var out []Affected
	for _, a := range c.accts {
		due := map[uint64]Affected{}
		consider := func(id uint64, reason uint8) {
			ch, _ := a.find(id)
			act := c.ActionOf(reasonName(reason))
			if act > plan.Action(ch.applied) && (due[id].PostID == "" || act > due[id].Action) {
				p := Affected{Reason: reasonName(reason), Reported: plan.Reported{UserID: a.userID, PostID: strconv.FormatUint(id, 10),
					Action: act, Bookmarked: a.bookmarks.Has(id), Referenced: a.referenced.Has(id)}}
				if p.Bookmarked && a.record != nil {
					p.Dates = a.record.DatesOf(id)
				}
				due[id] = p
			}
		}
		for _, ch := range a.checks {
			if ch.reason != reasonClean {
				consider(ch.id, ch.reason)
			}
		}
		if c.users != nil {
			for author, reason := range c.users.Reported {
				for _, id := range a.authors[author] {
					consider(id, reason)
				}
			}
		}
		for _, id := range slices.Sorted(maps.Keys(due)) {
			out = append(out, due[id])
		}
	}
	return out, nil
}

// Applied records that the actions of done, what Pending returned, are
// applied, in the state (not flushed).
func (c *Check) Applied(ctx context.Context, done []Affected) error {
	for _, a := range c.accts {
		a.markApplied(slices.DeleteFunc(slices.Clone(done), func(p Affected) bool { return p.UserID != a.userID }))
	}
	return c.saveAccounts(ctx, c.accts)
}

// markApplied records the posts' actions as applied. A post not checked
// yet (acted on for its author) gets a check of its own, due at once.
func (a *accountChecks) markApplied(posts []Affected) {
	var updates []check
	for _, p := range posts {
		n, _ := strconv.ParseUint(p.PostID, 10, 64)
		if c, _ := a.find(n); plan.Action(c.applied) < p.Action {
			c.id, c.applied = n, uint8(p.Action)
			updates = append(updates, c)
		}
	}
	a.setAll(updates)
}

// reasonName is the reason of a code; "" for one this version does not
// name (a reason X added).
func reasonName(code uint8) string {
	if int(code) < len(reasonNames) {
		return reasonNames[code]
	}
	return ""
}
