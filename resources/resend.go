package resources

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/outbox"
)

// What a sync sends of x_bookmarks the next ones send again (package
// outbox), made from the posts as X sent them with the same first_seen_at
// and found_position: a destination's primary key makes them one row.

// sentPage is one page of the rows a bookmarks walk sent: the page as X
// returned it, with only those rows' posts, and what the walk made of it.
type sentPage struct {
	FirstSeenAt     time.Time       `json:"first_seen_at"`
	BookmarkedAfter *time.Time      `json:"bookmarked_after,omitempty"`
	Expansions      []string        `json:"expansions,omitempty"` // what the request asked to expand
	Positions       []int64         `json:"positions"`            // found_position of each post
	Page            json.RawMessage `json:"page"`
	// Withdrawn are posts its posts reference whose rows a report took out
	// (EditOutbox): the page no longer holds them, nor are they sent again.
	Withdrawn []string `json:"withdrawn,omitempty"`
}

// pagesOf are the pages rows were read in, with only their posts, as the outbox keeps them.
func pagesOf(rows []*bookmark, expansions []string) ([]sentPage, error) {
	var out []sentPage
	for len(rows) > 0 {
		page := rows[0].page
		n := 1
		for n < len(rows) && rows[n].page == page {
			n++
		}
		sent := sentPage{FirstSeenAt: rows[0].firstSeenAt.UTC(), BookmarkedAfter: rows[0].bookmarkedAfter, Expansions: expansions}
		position := make(map[*client.Post]int64, n)
		for _, b := range rows[:n] {
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
			return nil, err
		}
		out, rows = append(out, sent), rows[n:]
	}
	return out, nil
}

// rows makes the rows of one sent page again (asker: account.Session.AskedBy).
func (p *sentPage) rows(userID string, asker func(param, value string) []string) ([]*bookmark, error) {
	page, err := client.ParseStoredPage(p.Page)
	if err != nil {
		return nil, err
	}
	if len(page.Data) != len(p.Positions) {
		return nil, fmt.Errorf("a stored bookmarks page holds %d posts and %d positions", len(page.Data), len(p.Positions))
	}
	rows := bookmarkRows(userID, newPageContent(page, p.Expansions, asker), p.FirstSeenAt, p.BookmarkedAfter, 0)
	for i, row := range rows {
		row.foundPosition = p.Positions[i]
		row.refs = slices.DeleteFunc(row.refs, func(r reference) bool { return slices.Contains(p.Withdrawn, r.id) })
	}
	return rows, nil
}

// resendBookmarks sends the rows kept again, and returns how many.
func resendBookmarks(ctx context.Context, userID string, asker func(param, value string) []string, kept *outbox.Rows[sentPage], emit func(context.Context, []*bookmark) error) (int, error) {
	sent := 0
	err := kept.Each(func(pages []sentPage) error {
		for i := range pages {
			rows, err := pages[i].rows(userID, asker)
			if err != nil {
				return err
			}
			sent += len(rows)
			if err := emit(ctx, rows); err != nil {
				return err
			}
		}
		return nil
	})
	return sent, err
}
