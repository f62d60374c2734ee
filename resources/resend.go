package resources

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/outbox"
)

// What a sync sends of x_bookmarks is sent again by the next ones, from an
// outbox kept in the walk's memory (package outbox; the compliance findings
// keep theirs in the account's checks, package compliance). Re-sent rows
// are the rows first sent, made from the posts as X sent them (posts never
// change), with the same first_seen_at and found_position; a destination's
// primary key makes them one row in overwrite modes.

// sentPage is one page of the rows a bookmarks walk sent: the page as X
// returned it, with only those rows' posts, and what the walk made of it.
type sentPage struct {
	FirstSeenAt     time.Time       `json:"first_seen_at"`
	BookmarkedAfter *time.Time      `json:"bookmarked_after,omitempty"`
	Expansions      []string        `json:"expansions,omitempty"` // what the request asked to expand
	Positions       []int64         `json:"positions"`            // found_position of each post
	Page            json.RawMessage `json:"page"`
	// Withdrawn are posts its posts reference that X's compliance job
	// reported (PurgeOutbox): the page no longer holds them, and their rows
	// of x_bookmark_referenced_posts are not sent again.
	Withdrawn []string `json:"withdrawn,omitempty"`
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
		row.refs = slices.DeleteFunc(row.refs, func(r reference) bool { return slices.Contains(p.Withdrawn, r.id) })
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
