package resources

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/outbox"
	"github.com/cq-source-x/cq-source-x/walk"
)

// What a sync sends of its incremental tables is sent again by the next
// ones, from an outbox kept in the state value beside what it belongs to
// (package outbox): the bookmarks walk's in its memory, the compliance
// findings' in the account's checks. Re-sent rows are the rows first sent,
// made from the posts as X sent them (posts never change), with the same
// first_seen_at and found_position; a destination's primary key makes them
// one row in overwrite modes.

// sentPage is one page of the rows a bookmarks walk sent: the page as X
// returned it, with only those rows' posts, and what the walk made of it.
type sentPage struct {
	FirstSeenAt     time.Time       `json:"first_seen_at"`
	BookmarkedAfter *time.Time      `json:"bookmarked_after,omitempty"`
	Expansions      []string        `json:"expansions,omitempty"` // what the request asked to expand
	Positions       []int64         `json:"positions"`            // found_position of each post
	Page            json.RawMessage `json:"page"`
}

// sentRows collects the rows a walk sends into its outbox entry.
type sentRows struct {
	batch      outbox.Batch
	expansions []string
}

// add records rows as sent, one line per page they were read in.
func (r *sentRows) add(rows []*bookmark) error {
	for len(rows) > 0 {
		page := rows[0].page
		n := 1
		for n < len(rows) && rows[n].page == page {
			n++
		}
		if err := r.addPage(page, rows[:n]); err != nil {
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// addPage records rows, of posts of page, as sent.
func (r *sentRows) addPage(page *client.PostPage, rows []*bookmark) error {
	sent := sentPage{FirstSeenAt: rows[0].firstSeenAt.UTC(), BookmarkedAfter: rows[0].bookmarkedAfter, Expansions: r.expansions}
	position := make(map[*client.Post]int64, len(rows))
	for _, b := range rows {
		position[b.post] = b.foundPosition
	}
	var err error
	sent.Page, err = client.StoredPage(page, func(i int) bool {
		p, ok := position[&page.Data[i]]
		if ok {
			sent.Positions = append(sent.Positions, p) // in the page's order, as StoredPage keeps the posts
		}
		return ok
	})
	if err != nil {
		return err
	}
	return r.batch.Add(sent)
}

// rows makes the rows of one sent page again (asker: see
// account.Session.AskedBy).
func (p *sentPage) rows(userID string, asker func(param, value string) []string) ([]*bookmark, error) {
	page, err := client.ParseStoredPage(p.Page)
	if err != nil {
		return nil, err
	}
	if len(page.Data) != len(p.Positions) {
		return nil, fmt.Errorf("a stored bookmarks page holds %d posts and %d positions", len(page.Data), len(p.Positions))
	}
	rows := bookmarkRows(userID, newPageContent(page, askedBy(client.Fields{Expansions: p.Expansions}), asker), p.FirstSeenAt, p.BookmarkedAfter, 0)
	for i, row := range rows {
		row.foundPosition = p.Positions[i]
	}
	return rows, nil
}

// resendBookmarks sends the rows of every entry of box again, oldest first,
// so that a row first sent in a later sync comes last.
func resendBookmarks(ctx context.Context, userID string, asker func(param, value string) []string, box *outbox.Box, emit func(context.Context, []*bookmark) error) (int, error) {
	sent := 0
	for i := range box.Entries {
		err := box.Entries[i].Each(func(line []byte) error {
			var p sentPage
			if err := json.Unmarshal(line, &p); err != nil {
				return err
			}
			rows, err := p.rows(userID, asker)
			if err != nil {
				return err
			}
			sent += len(rows)
			return emit(ctx, rows)
		})
		if err != nil {
			return sent, fmt.Errorf("sending again the bookmarks of the sync of %s: %w", box.Entries[i].SentAt.Format(time.RFC3339), err)
		}
	}
	return sent, nil
}

// memoryOutbox reads the outbox a list's memory keeps (an empty one for a
// first walk). key names the state value in errors.
func memoryOutbox(mem *walk.Memory, key string) (*outbox.Box, error) {
	if mem == nil || len(mem.Outbox) == 0 {
		return &outbox.Box{}, nil
	}
	return outbox.Unmarshal(string(mem.Outbox), "state "+strconv.Quote(key))
}

// decodeListState decodes the memory of a list and the outbox it keeps.
func decodeListState(key, value string) error {
	mem, err := walk.UnmarshalMemory(value)
	if err != nil {
		return err
	}
	_, err = memoryOutbox(mem, key)
	return err
}

// sentFinding is a row of x_post_compliance as a sync sent it.
type sentFinding struct {
	PostID     string     `json:"post_id"`
	JobID      string     `json:"job_id"`
	Action     string     `json:"action,omitempty"`
	Reason     string     `json:"reason,omitempty"`
	CreatedAt  *time.Time `json:"created_at,omitempty"`
	RedactedAt *time.Time `json:"redacted_at,omitempty"`
	CheckedAt  time.Time  `json:"checked_at"`
}

// resendFindings sends again the rows of the account's outbox that sync
// keeps in it (outbox.Box.Resend).
func (a *accountChecks) resendFindings(ctx context.Context, sync account.Sync, p outbox.Policy, res chan<- any) error {
	if len(a.outbox.Entries) > 0 {
		a.outbox, a.changed = a.outbox.Resend(sync.ID, sync.Ended, p), true
	}
	a.syncID, a.sentAt = sync.ID, sync.StartedAt
	var rows []*complianceRow
	for i := range a.outbox.Entries {
		err := a.outbox.Entries[i].Each(func(line []byte) error {
			var f sentFinding
			if err := json.Unmarshal(line, &f); err != nil {
				return err
			}
			rows = append(rows, &complianceRow{userID: a.userID, postID: f.PostID, jobID: f.JobID, action: f.Action, reason: f.Reason,
				createdAt: f.CreatedAt, redactedAt: f.RedactedAt, checkedAt: f.CheckedAt})
			return nil
		})
		if err != nil {
			return fmt.Errorf("sending again the compliance findings of user %s: %w", a.userID, err)
		}
	}
	return send(ctx, res, rows)
}

// outboxToSave is the account's outbox as its checks are saved: what
// resendFindings kept, then the rows this sync sent.
func (a *accountChecks) outboxToSave() (string, error) {
	var batch outbox.Batch
	for _, r := range a.sent {
		f := sentFinding{PostID: r.postID, JobID: r.jobID, Action: r.action, Reason: r.reason, CreatedAt: r.createdAt, RedactedAt: r.redactedAt, CheckedAt: r.checkedAt}
		if err := batch.Add(f); err != nil {
			return "", err
		}
	}
	sent, err := batch.Entry(a.syncID, a.sentAt)
	if err != nil {
		return "", err
	}
	return a.outbox.With(sent).Marshal()
}
