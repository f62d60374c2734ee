package compliance

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/ids"
)

// The authors' accounts: X's compliance jobs of type users report an account
// deleted, suspended, deactivated or made protected. The jobs of posts
// report each post of such an account too, as X documents them; the jobs of
// accounts make sure of it, and each is free. So each scope runs, once per
// Every, a job of the authors of every post the accounts archived
// (bookmarked or referenced), and a post whose author X reports is acted on
// as if X had reported the post itself, unless the post's own report asks
// for more. What X says of each author is kept per scope (usersCheck), the
// authors of each account's posts per account (authorship).

// Authored is an archived post and its author's user id ("" when X gave
// none).
type Authored struct{ PostID, AuthorID string }

// authorship is the posts of each author an account archived.
type authorship map[uint64]ids.Sorted

// addAuthors adds posts to the account's record of their authors. The
// record is written the first time even with none: an account that has
// one is known not to need seeding (Seed).
func addAuthors(ctx context.Context, s *account.Session, posts []Authored) error {
	key := account.AuthorsKey(s.UserID)
	value, err := account.GetKey(ctx, s.State, key)
	if err != nil {
		return err
	}
	rec, err := unmarshalAuthors(value, "state "+strconv.Quote(key))
	if err != nil {
		return err
	}
	added := map[uint64][]uint64{}
	for _, p := range posts {
		author, ok1 := ids.Parse(p.AuthorID)
		post, ok2 := ids.Parse(p.PostID)
		if ok1 && ok2 && !rec[author].Has(post) {
			added[author] = append(added[author], post)
		}
	}
	if len(added) == 0 && value != "" {
		return nil
	}
	for author, posts := range added {
		rec[author] = rec[author].Union(ids.NewSorted(posts))
	}
	text, err := rec.marshal()
	if err != nil {
		return err
	}
	return account.SetKey(ctx, s.State, key, text)
}

// Seed records an account's referenced posts and the authors of its posts
// from what the destination holds (the exporter's files:
// archive.ReadAuthored), for an archive made before the walks recorded
// them; Seeded tells whether it is needed.
func Seed(ctx context.Context, s *account.Session, bookmarks, referenced []Authored) error {
	refs := make([]uint64, 0, len(referenced))
	for _, r := range referenced {
		if n, ok := ids.Parse(r.PostID); ok {
			refs = append(refs, n)
		}
	}
	if err := addReferenced(ctx, s, ids.NewSorted(refs)); err != nil {
		return err
	}
	return addAuthors(ctx, s, append(slices.Clip(bookmarks), referenced...))
}

// Seeded reports whether the account's walks (or Seed) recorded the
// authors of its posts already.
func Seeded(ctx context.Context, s *account.Session) (bool, error) {
	value, err := account.GetKey(ctx, s.State, account.AuthorsKey(s.UserID))
	return value != "", err
}

func loadAuthors(ctx context.Context, s *account.Session) (authorship, error) {
	key := account.AuthorsKey(s.UserID)
	value, err := account.GetKey(ctx, s.State, key)
	if err != nil {
		return nil, err
	}
	return unmarshalAuthors(value, "state "+strconv.Quote(key))
}

type authorsJSON struct {
	Version int    `json:"version"`
	Authors int    `json:"authors"`
	Posts   string `json:"posts"`
}

const authorsVersion = 1

// marshal encodes the record: per author, in id order, its id's delta from
// the last, its number of posts and their ids' deltas (uvarints), packed.
func (r authorship) marshal() (string, error) {
	var raw []byte
	var prev uint64
	for _, author := range slices.Sorted(maps.Keys(r)) {
		raw = binary.AppendUvarint(raw, author-prev)
		raw = binary.AppendUvarint(raw, uint64(len(r[author])))
		var last uint64
		for _, post := range r[author] {
			raw = binary.AppendUvarint(raw, post-last)
			last = post
		}
		prev = author
	}
	text, err := ids.Pack(raw)
	if err != nil {
		return "", err
	}
	b, err := json.Marshal(authorsJSON{Version: authorsVersion, Authors: len(r), Posts: string(text)})
	return string(b), err
}

func unmarshalAuthors(value, what string) (authorship, error) {
	r := authorship{}
	if value == "" {
		return r, nil
	}
	var j authorsJSON
	if err := json.Unmarshal([]byte(value), &j); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %w", what, err)
	}
	if j.Version != authorsVersion {
		return nil, fmt.Errorf("%s has version %d; this build reads version %d", what, j.Version, authorsVersion)
	}
	raw, err := ids.Unpack([]byte(j.Posts), what)
	if err != nil {
		return nil, err
	}
	rd := bytes.NewReader(raw)
	var author uint64
	for i := range j.Authors {
		d, err1 := binary.ReadUvarint(rd)
		n, err2 := binary.ReadUvarint(rd)
		if errors.Join(err1, err2) != nil || (i > 0 && d == 0) || n > uint64(rd.Len()) {
			return nil, fmt.Errorf("%s is damaged at author %d of %d", what, i, j.Authors)
		}
		author += d
		posts := make(ids.Sorted, n)
		var post uint64
		for k := range posts {
			pd, err := binary.ReadUvarint(rd)
			if err != nil || (k > 0 && pd == 0) {
				return nil, fmt.Errorf("%s is damaged at author %d of %d", what, i, j.Authors)
			}
			post += pd
			posts[k] = post
		}
		r[author] = posts
	}
	if rd.Len() != 0 {
		return nil, fmt.Errorf("%s is damaged: trailing bytes", what)
	}
	return r, nil
}

// usersCheck is a scope's check of the authors' accounts: the round
// running (roundStart, and next, the smallest author not checked in it
// yet), when the last finished one started, and the reason X last gave for
// each author it reports (never reasonClean).
type usersCheck struct {
	roundStart, lastRound time.Time
	next                  uint64
	reported              map[uint64]uint8
}

type usersJSON struct {
	Version    int        `json:"version"`
	RoundStart *time.Time `json:"round_started,omitempty"`
	Next       uint64     `json:"next,omitempty"`
	LastRound  *time.Time `json:"last_round,omitempty"`
	// Reported is the reason code of each author X reports.
	Reported map[uint64]uint8 `json:"reported,omitempty"`
}

const usersVersion = 1

func loadUsers(ctx context.Context, c *Check) (*usersCheck, error) {
	key := account.UsersKey(c.Scope)
	value, err := account.GetKey(ctx, c.State, key)
	if err != nil {
		return nil, err
	}
	return unmarshalUsers(value, "state "+strconv.Quote(key))
}

func unmarshalUsers(value, what string) (*usersCheck, error) {
	u := &usersCheck{reported: map[uint64]uint8{}}
	if value == "" {
		return u, nil
	}
	var j usersJSON
	if err := json.Unmarshal([]byte(value), &j); err != nil {
		return nil, fmt.Errorf("%s is not valid JSON: %w", what, err)
	}
	if j.Version != usersVersion {
		return nil, fmt.Errorf("%s has version %d; this build reads version %d", what, j.Version, usersVersion)
	}
	for author, code := range j.Reported {
		if code == reasonClean {
			return nil, fmt.Errorf("%s is damaged: author %d is reported clean", what, author)
		}
		u.reported[author] = code
	}
	if j.RoundStart != nil {
		u.roundStart = *j.RoundStart
	}
	if j.LastRound != nil {
		u.lastRound = *j.LastRound
	}
	u.next = j.Next
	return u, nil
}

func (u *usersCheck) save(ctx context.Context, c *Check) error {
	value, err := u.marshal()
	if err != nil {
		return err
	}
	return account.SetKey(ctx, c.State, account.UsersKey(c.Scope), value)
}

func (u *usersCheck) marshal() (string, error) {
	j := usersJSON{Version: usersVersion, Next: u.next, Reported: u.reported}
	if !u.roundStart.IsZero() {
		j.RoundStart = &u.roundStart
	}
	if !u.lastRound.IsZero() {
		j.LastRound = &u.lastRound
	}
	b, err := json.Marshal(j)
	return string(b), err
}

// checkAuthors runs the scope's check of the authors' accounts: a round
// starts when the last one started at least Every ago, and its jobs (one
// at a time, of at most MaxIDsPerJob authors each, in id order) run until
// every author of the accounts' posts is checked or the deadline passes.
// A job still running then is picked up by the next sync.
func (c *Check) checkAuthors(ctx context.Context, accts []*accountChecks, deadline time.Time, emit Emit) error {
	u := c.users
	key := account.UsersJobKey(c.Scope)
	rec, err := loadJob(ctx, c.State, key)
	if err != nil {
		return err
	}
	var authors ids.Sorted
	for _, a := range accts {
		authors = authors.Union(ids.NewSorted(slices.Collect(maps.Keys(a.authors))))
	}
	if rec == nil && u.roundStart.IsZero() {
		if len(authors) == 0 || (!u.lastRound.IsZero() && c.Clock.Now().Sub(u.lastRound) < c.Every) {
			return nil
		}
		u.roundStart, u.next = c.Clock.Now(), 0
	}
	for {
		if rec == nil {
			i, _ := slices.BinarySearch(authors, u.next)
			batch := authors[i:min(len(authors), i+c.MaxIDsPerJob)]
			if len(batch) == 0 {
				u.lastRound, u.roundStart, u.next = u.roundStart, time.Time{}, 0
				return u.save(ctx, c)
			}
			if rec, err = c.startJob(ctx, key, client.ComplianceUsers, batch, deadline); err != nil {
				return errors.Join(fmt.Errorf("checking the authors' accounts: %w", err), u.save(ctx, c))
			}
		}
		results, done, err := c.finishJob(ctx, key, rec, deadline)
		if err != nil || !done {
			if err != nil {
				err = fmt.Errorf("checking the authors' accounts: %w", err)
			} else {
				c.Logger.Warn().Str("job", rec.ID).Dur("waited", c.Wait).Msg("compliance job of accounts still running; the next sync picks it up")
			}
			return errors.Join(err, u.save(ctx, c))
		}
		if err := c.applyUsers(ctx, rec, results, accts, emit); err != nil {
			return err
		}
		u.next = rec.IDs[len(rec.IDs)-1] + 1
		if err := errors.Join(saveJob(ctx, c.State, key, nil, false), u.save(ctx, c), c.saveAccounts(ctx, accts)); err != nil {
			return err
		}
		rec = nil
		if !c.Clock.Now().Before(deadline) {
			return nil
		}
	}
}

// applyUsers records what a complete job of accounts reports, and a row
// of x_post_compliance for each archived post of an author whose status
// changed, unless X reports the post itself (its own rows say what; a post
// whose location only was removed gets the row of its author's account).
func (c *Check) applyUsers(ctx context.Context, rec *jobRecord, results []client.ComplianceResult, accts []*accountChecks, emit Emit) error {
	now := c.Clock.Now()
	reported := rec.reported(results)
	var rows []*Finding
	for _, author := range rec.IDs {
		r, isReported := reported[author]
		code := reasonClean
		if isReported {
			code = reasonCode(r.Reason)
		}
		if code == c.users.reported[author] {
			continue
		}
		if code == reasonClean {
			delete(c.users.reported, author)
		} else {
			c.users.reported[author] = code
		}
		for _, a := range accts {
			for _, post := range a.authors[author] {
				if own, _ := a.find(post); own.reason != reasonClean && (code == reasonClean || own.reason != reasonScrubGeo) {
					continue // the post's own report says more (deleted, say)
				}
				row := &Finding{UserID: a.userID, PostID: strconv.FormatUint(post, 10), JobID: rec.ID, CheckedAt: now}
				if isReported {
					row.Action, row.Reason, row.RedactedAt, row.ArchiveAction = r.Action, r.Reason, r.RedactedAt, c.archiveAction(code)
				}
				rows = append(rows, row)
				if c.Resend.On() {
					a.sent, a.changed = append(a.sent, row), true
				}
			}
		}
	}
	c.Logger.Info().Str("job", rec.ID).Int("accounts", len(rec.IDs)).Int("reported", len(reported)).Int("changes", len(rows)).Msg("compliance job of accounts complete")
	return emit(ctx, rows)
}
