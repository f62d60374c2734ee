package compliance

import (
	"context"
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

// The authors' accounts, checked by X's free jobs of accounts: a post whose
// author X reports is acted on as if X had reported it (docs/compliance.md).

// usersCheck is a scope's check of the authors' accounts: the round
// running (RoundStart, and Next, the smallest author not checked in it
// yet), when the last finished one started, and the reason code X last gave
// for each author it reports (never reasonClean).
type usersCheck struct {
	RoundStart time.Time        `json:"round_started,omitzero"`
	Next       uint64           `json:"next,omitempty"`
	LastRound  time.Time        `json:"last_round,omitzero"`
	Reported   map[uint64]uint8 `json:"reported,omitempty"`
}

// usersJSON is a usersCheck as the state keeps it.
type usersJSON struct {
	Version int `json:"version"`
	*usersCheck
}

const usersVersion = 1

func unmarshalUsers(value, what string) (*usersCheck, error) {
	j := usersJSON{Version: usersVersion, usersCheck: &usersCheck{}}
	if value != "" {
		if err := json.Unmarshal([]byte(value), &j); err != nil {
			return nil, fmt.Errorf("%s is not valid JSON: %w", what, err)
		}
	}
	if j.Version != usersVersion {
		return nil, fmt.Errorf("%s has version %d; this build reads version %d", what, j.Version, usersVersion)
	}
	for author, code := range j.Reported {
		if code == reasonClean {
			return nil, fmt.Errorf("%s is damaged: author %d is reported clean", what, author)
		}
	}
	if j.Reported == nil {
		j.Reported = map[uint64]uint8{}
	}
	return j.usersCheck, nil
}

func (u *usersCheck) save(ctx context.Context, c *Check) error {
	value, err := u.marshal()
	if err != nil {
		return err
	}
	return account.SetKey(ctx, c.State, account.UsersKey(c.Scope), value)
}

func (u *usersCheck) marshal() (string, error) {
	b, err := json.Marshal(usersJSON{usersVersion, u})
	return string(b), err
}

// checkAuthors runs the scope's check of the authors' accounts: a round
// starts when the last one started Every ago, and its jobs, of authors in id
// order, run until every author is checked or the deadline passes.
func (c *Check) checkAuthors(ctx context.Context, accts []*accountChecks, deadline time.Time, emit Emit) error {
	u, key := c.users, account.UsersJobKey(c.Scope)
	var authors ids.Sorted
	for _, a := range accts {
		authors = authors.Union(ids.NewSorted(slices.Collect(maps.Keys(a.authors))))
	}
	if u.RoundStart.IsZero() {
		job, err := account.GetKey(ctx, c.State, key)
		if err != nil {
			return err
		}
		if job == "" { // else a job of an earlier sync is resumed
			if len(authors) == 0 || (!u.LastRound.IsZero() && c.Clock.Now().Sub(u.LastRound) < c.Every) {
				return nil
			}
			u.RoundStart, u.Next = c.Clock.Now(), 0
		}
	}
	applyFailed := false // then u is not saved: the job's results are applied again
	done, err := c.runJobs(ctx, key, client.ComplianceUsers, func() ids.Sorted {
		i, _ := slices.BinarySearch(authors, u.Next)
		return authors[i:min(len(authors), i+c.MaxIDsPerJob)]
	}, func(rec *jobRecord, reported results) error {
		if err := c.applyUsers(ctx, rec, reported, accts, emit); err != nil {
			applyFailed = true
			return err
		}
		u.Next = rec.IDs[len(rec.IDs)-1] + 1
		return u.save(ctx, c)
	}, accts, deadline)
	if applyFailed {
		return err
	}
	if done {
		u.LastRound, u.RoundStart, u.Next = u.RoundStart, time.Time{}, 0
	}
	if err != nil {
		err = fmt.Errorf("checking the authors' accounts: %w", err)
	}
	return errors.Join(err, u.save(ctx, c))
}

// applyUsers records what a complete job of accounts reports, and a row for
// each archived post of an author whose status changed, unless X reports
// the post itself (but for scrub_geo alone).
func (c *Check) applyUsers(ctx context.Context, rec *jobRecord, reported results, accts []*accountChecks, emit Emit) error {
	now := c.Clock.Now()
	var rows []*Finding
	for _, author := range rec.IDs {
		r, isReported := reported[author]
		code := reasonClean
		if isReported {
			code = reasonCode(r.Reason)
		}
		if code == c.users.Reported[author] {
			continue
		}
		if code == reasonClean {
			delete(c.users.Reported, author)
		} else {
			c.users.Reported[author] = code
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
					a.changed = true
					if err := a.rows.Add(row); err != nil {
						return err
					}
				}
			}
		}
	}
	c.Logger.Info().Str("job", rec.ID).Int("accounts", len(rec.IDs)).Int("reported", len(reported)).Int("changes", len(rows)).Msg("compliance job of accounts complete")
	return emit(ctx, rows)
}
