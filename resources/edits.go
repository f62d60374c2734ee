package resources

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/outbox"
	"github.com/cq-source-x/cq-source-x/plan"
)

// What a CloudQuery sync does with a plan's edits that a DeleteRecord
// message cannot (docs/architecture.md#one-plan-two-sinks).

// Blanked is the client of the table that sends blanked rows again: the
// bookmarks of the Blank edits whose dates the state keeps.
type Blanked struct {
	Posts []compliance.Affected
}

func (*Blanked) ID() string { return "compliance" }

// BlankedBookmarks is x_bookmarks as the sync selected it, made to send the
// rows of a Blanked client: no child table, no walk, only the kept columns.
func BlankedBookmarks(bookmarks *schema.Table) *schema.Table {
	t := *bookmarks
	t.Relations, t.Multiplex, t.PostResourceResolver = nil, nil, nil
	e := plan.Edit{Keeps: redactedKeeps}
	t.Columns = slices.Clone(t.Columns)
	for i := range t.Columns {
		if !e.Kept(t.Columns[i].Name) {
			t.Columns[i].Resolver = resolvedByScheduler // stays null
		}
	}
	t.Resolver = func(ctx context.Context, meta schema.ClientMeta, _ *schema.Resource, res chan<- any) error {
		var rows []*bookmark
		for _, p := range meta.(*Blanked).Posts {
			d := p.Dates
			rows = append(rows, &bookmark{userID: p.UserID, post: &client.Post{ID: p.PostID, CreatedAt: d.CreatedAt},
				firstSeenAt: d.FirstSeenAt, bookmarkedAfter: d.BookmarkedAfter, foundPosition: d.FoundPosition})
		}
		return send(ctx, res, rows)
	}
	return &t
}

// EditOutbox applies the edits to the account's bookmarks outbox, and sets
// the walk's memory in the state, unflushed (docs/design/plugin.md#resolvers).
func EditOutbox(ctx context.Context, s *account.Session, ix plan.Index) error {
	key := account.BookmarksKey(s.UserID)
	mem, err := s.LoadMemory(ctx, key)
	if err != nil || mem == nil {
		return err
	}
	box, err := account.MemoryOutbox(mem, key)
	if err != nil || len(box.Entries) == 0 {
		return err
	}
	box, err = outbox.Edit(box, func(p *sentPage) (bool, error) {
		err := p.edit(s.UserID, ix)
		return len(p.Positions) > 0, err
	})
	if err != nil {
		return fmt.Errorf("%s: taking reported posts out of the outbox of state %q: %w", s.ID(), key, err)
	}
	text, err := box.Marshal()
	if err != nil {
		return err
	}
	mem.Outbox = json.RawMessage(text)
	return s.SaveMemory(ctx, key, mem)
}

// edit applies the edits to the page's posts.
func (p *sentPage) edit(userID string, ix plan.Index) error {
	page, err := client.ParseStoredPage(p.Page)
	if err != nil {
		return err
	}
	if page.Includes.Tweets, err = p.withdraw(userID, page.Includes.Tweets, ix); err != nil {
		return err
	}
	var positions []int64
	keep := make([]bool, len(page.Data))
	for i, post := range page.Data {
		raw, err := edited(ix, BookmarksTable, userID, "post_id", post.ID, post.Raw)
		if err != nil {
			return err
		}
		if keep[i] = raw != nil; keep[i] {
			page.Data[i].Raw = raw
			positions = append(positions, p.Positions[i])
		}
	}
	page.Includes = usedIncludes(page, keep)
	p.Positions = positions
	p.Page, err = client.StoredPage(page, func(i int) bool { return keep[i] })
	return err
}

// withdraw applies the edits to the page's referenced posts, recording those that go.
func (p *sentPage) withdraw(userID string, tweets []json.RawMessage, ix plan.Index) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for _, raw := range tweets {
		var post struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &post); err != nil {
			return nil, err
		}
		raw, err := edited(ix, ReferencedPostsTable, userID, "referenced_post_id", post.ID, raw)
		switch {
		case err != nil:
			return nil, err
		case raw != nil:
			out = append(out, raw)
		case !slices.Contains(p.Withdrawn, post.ID):
			p.Withdrawn = append(p.Withdrawn, post.ID)
		}
	}
	return out, nil
}

// edited is a post's JSON as the edit of the rows of table whose column
// holds it leaves it: as it is, without its geo, or nil when its content
// goes (its rows removed or blanked).
func edited(ix plan.Index, table, userID, column, id string, raw json.RawMessage) (json.RawMessage, error) {
	e, ok := ix.Find(table, userID, func(c string) string { return map[string]string{column: id}[c] })
	switch {
	case !ok:
		return raw, nil
	case e.Op == plan.Scrub:
		return plan.WithoutGeo(raw)
	}
	return nil, nil
}

// usedIncludes is the page's expanded objects that a kept post, or a
// referenced post a kept one uses, names by id (or media key): the others
// belonged to posts taken out.
func usedIncludes(page *client.PostPage, keep []bool) client.Includes {
	var names []json.RawMessage
	for i := range page.Data {
		if keep[i] {
			names = append(names, page.Data[i].Raw)
		}
	}
	used := func(objs []json.RawMessage, field string) []json.RawMessage {
		return slices.DeleteFunc(slices.Clone(objs), func(obj json.RawMessage) bool {
			var o map[string]any
			_ = json.Unmarshal(obj, &o) // an object that is not is named by no post
			id, _ := o[field].(string)
			quoted := []byte(`"` + id + `"`)
			return id == "" || !slices.ContainsFunc(names, func(n json.RawMessage) bool { return bytes.Contains(n, quoted) })
		})
	}
	in := page.Includes
	tweets := used(in.Tweets, "id")
	names = append(names, tweets...) // their authors and media
	return client.Includes{Tweets: tweets, Users: used(in.Users, "id"), Media: used(in.Media, "media_key"),
		Polls: used(in.Polls, "id"), Places: used(in.Places, "id")}
}
