package resources

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/media"
	"github.com/cq-source-x/cq-source-x/media/store"
)

// What a CloudQuery sync does with the posts X's compliance job reported
// (package compliance): the bookmarks outbox forgets their content, so that
// no later sync sends it again, and x_bookmarks gets their rows again,
// redacted (Redactions), which the destination's primary key puts in place
// of the rows it holds. The plugin removes their rows of the content
// tables itself (DeleteRecord messages).

// Redactions is the client of the table that sends redacted rows again:
// the accounts' posts to act on.
type Redactions struct {
	Accounts []compliance.AccountActions
}

// ID implements schema.ClientMeta.
func (*Redactions) ID() string { return "compliance" }

// RedactedBookmarks is bookmarks, the x_bookmarks table as the sync selected
// it, made to send the redacted rows of a Redactions client: no child
// table, no walk.
func RedactedBookmarks(bookmarks *schema.Table) *schema.Table {
	t := *bookmarks
	t.Relations, t.Multiplex, t.PostResourceResolver = nil, nil, nil
	t.Resolver = func(ctx context.Context, meta schema.ClientMeta, _ *schema.Resource, res chan<- any) error {
		var rows []*bookmark
		for _, acct := range meta.(*Redactions).Accounts {
			for _, p := range acct.Posts {
				if p.Action == compliance.Redact && p.Dates != nil {
					rows = append(rows, redactedRow(acct.UserID, p))
				}
			}
		}
		return send(ctx, res, rows)
	}
	return &t
}

// KeptWhenRedacted reports whether a column of x_bookmarks keeps its value
// once the post is redacted: its key, its dates, and the SDK's columns.
func KeptWhenRedacted(column string) bool {
	switch column {
	case "user_id", "post_id", "created_at", "first_seen_at", "bookmarked_after", "found_position":
		return true
	}
	return strings.HasPrefix(column, "_cq_")
}

// redactedRow is what x_bookmarks keeps of a redacted post: its key, its
// dates, and nothing of its content.
func redactedRow(userID string, p compliance.Affected) *bookmark {
	return &bookmark{
		userID:          userID,
		post:            &client.Post{ID: p.PostID, CreatedAt: p.Dates.CreatedAt},
		redacted:        true,
		firstSeenAt:     p.Dates.FirstSeenAt,
		bookmarkedAfter: p.Dates.BookmarkedAfter,
		foundPosition:   p.Dates.FoundPosition,
	}
}

// PurgeOutbox takes the posts out of the account's bookmarks outbox: a
// redacted or deleted post's row is dropped, with the expanded objects
// (authors, media, referenced posts) no other post of its page uses; a
// referenced post redacted or deleted leaves its page, and its rows of
// x_bookmark_referenced_posts are not sent again (sentPage.Withdrawn); a
// post whose location X removed loses its geo. It sets the walk's memory
// in the state, unflushed.
func PurgeOutbox(ctx context.Context, s *account.Session, posts []compliance.Affected) error {
	key := account.BookmarksKey(s.UserID)
	mem, err := s.LoadMemory(ctx, key)
	if err != nil || mem == nil {
		return err
	}
	box, err := account.MemoryOutbox(mem, key)
	if err != nil || len(box.Entries) == 0 {
		return err
	}
	action := make(map[string]compliance.Action, len(posts))
	for _, p := range posts {
		action[p.PostID] = p.Action
	}
	box, err = box.Rewrite(func(line []byte) ([]byte, error) {
		var p sentPage
		if err := json.Unmarshal(line, &p); err != nil {
			return nil, err
		}
		if err := p.purge(action); err != nil || len(p.Positions) == 0 {
			return nil, err
		}
		return json.Marshal(p)
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

// purge applies the actions to the page's posts.
func (p *sentPage) purge(action map[string]compliance.Action) error {
	page, err := client.ParseStoredPage(p.Page)
	if err != nil {
		return err
	}
	var positions []int64
	keep := make([]bool, len(page.Data))
	if page.Includes.Tweets, err = p.withdraw(page.Includes.Tweets, action); err != nil {
		return err
	}
	for i := range page.Data {
		switch action[page.Data[i].ID] {
		case compliance.Redact, compliance.Delete:
			continue
		case compliance.ScrubGeo:
			if page.Data[i].Raw, err = WithoutGeo(page.Data[i].Raw); err != nil {
				return err
			}
		}
		keep[i] = true
		positions = append(positions, p.Positions[i])
	}
	page.Includes = usedIncludes(page, keep)
	p.Positions = positions
	p.Page, err = client.StoredPage(page, func(i int) bool { return keep[i] })
	return err
}

// withdraw applies the actions to the page's referenced posts: a redacted
// or deleted one leaves it, and is recorded withdrawn.
func (p *sentPage) withdraw(tweets []json.RawMessage, action map[string]compliance.Action) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for _, raw := range tweets {
		var post struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(raw, &post); err != nil {
			return nil, err
		}
		switch action[post.ID] {
		case compliance.Redact, compliance.Delete:
			if !slices.Contains(p.Withdrawn, post.ID) {
				p.Withdrawn = append(p.Withdrawn, post.ID)
			}
			continue
		case compliance.ScrubGeo:
			var err error
			if raw, err = WithoutGeo(raw); err != nil {
				return nil, err
			}
		}
		out = append(out, raw)
	}
	return out, nil
}

// WithoutGeo is a post's JSON without its geo field (raw itself when it
// has none).
func WithoutGeo(raw json.RawMessage) (json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	if _, ok := obj["geo"]; !ok {
		return raw, nil
	}
	delete(obj, "geo")
	return json.Marshal(obj)
}

// usedIncludes is the page's expanded objects that a kept post, or a
// referenced post a kept one uses, names by id (or media key): the others
// belonged to posts taken out.
func usedIncludes(page *client.PostPage, keep []bool) client.Includes {
	var names [][]byte
	for i := range page.Data {
		if keep[i] {
			names = append(names, page.Data[i].Raw)
		}
	}
	named := func(obj json.RawMessage, field string) bool {
		var o map[string]any
		if json.Unmarshal(obj, &o) != nil {
			return false
		}
		id, _ := o[field].(string)
		if id == "" {
			return false
		}
		quoted := []byte(`"` + id + `"`)
		for _, n := range names {
			if bytes.Contains(n, quoted) {
				return true
			}
		}
		return false
	}
	filter := func(objs []json.RawMessage, field string) []json.RawMessage {
		var out []json.RawMessage
		for _, o := range objs {
			if named(o, field) {
				out = append(out, o)
			}
		}
		return out
	}
	in := page.Includes
	var out client.Includes
	out.Tweets = filter(in.Tweets, "id")
	for _, t := range out.Tweets {
		names = append(names, t) // their authors and media
	}
	out.Users = filter(in.Users, "id")
	out.Media = filter(in.Media, "media_key")
	out.Polls = filter(in.Polls, "id")
	out.Places = filter(in.Places, "id")
	return out
}

// DropMedia removes the stored media files of the posts redacted or
// deleted: their records leave their accounts' media state, and the files
// they stored that no record of any account of the sessions still uses
// are deleted from st. The files go first, then the states are set
// (unflushed): a stop between leaves records of files already deleted,
// which the next application drops again (deleting a missing file is no
// error); the other order could leave a file no state records. The
// accounts elsewhere (other shards', which share the store) keep their
// files too: their state is read, never written. It returns the number
// of files deleted.
func DropMedia(ctx context.Context, sessions []*account.Session, elsewhere []string, acts []compliance.AccountActions, st *store.Store) (int, error) {
	if len(sessions) == 0 {
		return 0, nil
	}
	users := slices.Clone(elsewhere)
	for _, s := range sessions {
		if s.UserID != "" {
			users = append(users, s.UserID)
		}
	}
	values := map[string]string{} // state key → value, of every account
	for _, u := range users {
		key := account.MediaFilesKey(u)
		v, err := account.GetKey(ctx, sessions[0].State, key) // the sync's one state backend
		if err != nil {
			return 0, err
		}
		values[key] = v
	}
	var candidates []string
	changed := map[string]*account.Session{}
	for _, a := range acts {
		posts, refs := map[string]bool{}, map[string]bool{} // bookmarks whose files go; referenced posts whose media's files go
		for _, p := range a.Posts {
			if p.Action >= compliance.Redact {
				posts[p.PostID], refs[p.PostID] = p.Bookmarked, p.Referenced
			}
		}
		key := account.MediaFilesKey(a.UserID)
		if len(posts) == 0 || values[key] == "" {
			continue
		}
		next, stored, err := DropMediaFilesOfPosts(key, values[key], func(postID, mediaPostID string) bool {
			return posts[postID] || refs[mediaPostID]
		})
		if err != nil {
			return 0, err
		}
		values[key], candidates = next, append(candidates, stored...)
		for _, s := range sessions {
			if s.UserID == a.UserID {
				changed[key] = s
			}
		}
	}
	if len(changed) == 0 {
		return 0, nil
	}
	used := map[string]bool{}
	for key, v := range values {
		uses, err := MediaFileUses(key, v)
		if err != nil {
			return 0, err
		}
		for _, u := range uses {
			if u.Status == media.Stored {
				used[u.FileKey] = true
			}
		}
	}
	deleted := 0
	for _, k := range candidates {
		if used[k] {
			continue
		}
		if err := st.Delete(ctx, k); err != nil {
			return deleted, err
		}
		deleted++
	}
	for key, s := range changed {
		if err := account.SetKey(ctx, s.State, key, values[key]); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}
