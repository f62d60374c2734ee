package compliance

import (
	"context"
	"maps"
	"slices"
	"strconv"
	"time"
)

// What the archive does with a post X reports (compliance.on_change), as X's
// Developer Policy asks of stored posts: an action is applied once, and a
// stronger one later (a post whose location was removed, then deleted)
// goes on from what was applied. A post that comes back (undeleted, made
// public again) is not restored: its content is gone from the archive.

// Action is what is done to an archived post; the order is their strength.
type Action uint8

// The actions.
const (
	Keep Action = iota
	// ScrubGeo removes the post's location (its JSON's geo).
	ScrubGeo
	// Redact removes the post's content; the bookmark's key and dates stay.
	Redact
	// Delete removes the bookmark's row too.
	Delete
)

func (a Action) String() string {
	return [...]string{"keep", "scrub_geo", "redact", "delete"}[a]
}

// Dates are what a bookmark's row keeps once redacted, besides its key.
type Dates struct {
	CreatedAt       *time.Time
	FirstSeenAt     time.Time
	BookmarkedAfter *time.Time
	FoundPosition   int64
}

// Affected is an archived post whose action is not applied yet.
type Affected struct {
	PostID string
	Reason string
	Action Action
	// Bookmarked says the post has a row of x_bookmarks, with its content
	// tables' rows; Referenced that bookmarks quote, answer or repost it:
	// it has rows of x_bookmark_referenced_posts. A post can be both.
	Bookmarked, Referenced bool
	// Dates are the bookmark row's, where the state keeps them (a
	// CloudQuery sync); nil when the destination keeps the rows (the
	// exporter), for a post archived before they were recorded, or for a
	// post that is not Bookmarked.
	Dates *Dates
}

// AccountActions is one account's posts to act on.
type AccountActions struct {
	UserID string
	Posts  []Affected
}

// Pending is, per account of the sync's last check, the posts whose
// action is not applied yet, in id order: posts X reported, and posts of
// authors X reported (the stronger action of the two, when both are).
func (c *Check) Pending(ctx context.Context) ([]AccountActions, error) {
	if c.ActionOf == nil {
		return nil, nil
	}
	var out []AccountActions
	for _, a := range c.accts {
		due := map[uint64]Affected{}
		consider := func(id uint64, reason uint8) {
			ch, _ := a.find(id)
			act := c.ActionOf(reasonName(reason))
			if act > Action(ch.applied) && (due[id].PostID == "" || act > due[id].Action) {
				due[id] = Affected{PostID: strconv.FormatUint(id, 10), Reason: reasonName(reason), Action: act,
					Bookmarked: a.bookmarks.Has(id), Referenced: a.referenced.Has(id)}
			}
		}
		for _, ch := range a.checks {
			if ch.reason != reasonClean {
				consider(ch.id, ch.reason)
			}
		}
		if c.users != nil {
			for author, reason := range c.users.reported {
				for _, id := range a.authors[author] {
					consider(id, reason)
				}
			}
		}
		if len(due) == 0 {
			continue
		}
		posts := make([]Affected, 0, len(due))
		for _, id := range slices.Sorted(maps.Keys(due)) {
			posts = append(posts, due[id])
		}
		if err := a.addDates(ctx, c.sessionOf(a.userID), posts); err != nil {
			return nil, err
		}
		out = append(out, AccountActions{UserID: a.userID, Posts: posts})
	}
	return out, nil
}

// Applied records that the actions are applied, in the state (not flushed).
func (c *Check) Applied(ctx context.Context, done []AccountActions) error {
	for _, d := range done {
		for _, a := range c.accts {
			if a.userID == d.UserID {
				a.markApplied(d.Posts)
			}
		}
	}
	return c.saveAccounts(ctx, c.accts)
}

// markApplied records the posts' actions as applied. A post not checked
// yet (acted on for its author) gets a check of its own, due at once.
func (a *accountChecks) markApplied(posts []Affected) {
	for _, p := range posts {
		n, _ := strconv.ParseUint(p.PostID, 10, 64)
		c, ok := a.find(n)
		if !ok {
			c = check{id: n}
		}
		if Action(c.applied) < p.Action {
			c.applied = uint8(p.Action)
			a.setAll([]check{c})
		}
	}
}

// reasonName is the reason of a code; "" for one this version does not
// name (a reason X added).
func reasonName(code uint8) string {
	if int(code) < len(reasonNames) {
		return reasonNames[code]
	}
	return ""
}
