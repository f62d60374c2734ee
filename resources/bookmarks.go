package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/export/pqfile"
	"github.com/cq-source-x/cq-source-x/walk"
)

// BookmarksTable is the name of the bookmarks table.
const BookmarksTable = "x_bookmarks"

// bookmark is one row of x_bookmarks.
type bookmark struct {
	userID          string
	post            *client.Post
	author          json.RawMessage // from includes.users, when author_id is expanded
	media           []json.RawMessage
	firstSeenAt     time.Time
	bookmarkedAfter *time.Time
}

// Bookmarks is the x_bookmarks table: one row per bookmarked post, emitted
// once, when a sync first sees it.
func Bookmarks() *schema.Table {
	t := &schema.Table{
		Name:  BookmarksTable,
		Title: "X Bookmarks",
		Description: "Posts the user bookmarked, one row per (user, post), emitted once when a sync first finds the post. " +
			"Post content is immutable, so a post is never read again for its content. " +
			"The API gives no bookmark time: the bookmark was made after `bookmarked_after` (the account's previous successful sync; null on the first) and before `first_seen_at`. " +
			"Rows of removed bookmarks are kept: this is an archive.",
		Multiplex:     account.Multiplex,
		IsIncremental: true,
		Columns:       columnList(bookmarkColumns),
	}
	// The resolver knows its table (with the _cq_ columns Tables adds) to
	// write its rows to a ColumnSink.
	t.Resolver = func(ctx context.Context, meta schema.ClientMeta, _ *schema.Resource, res chan<- any) error {
		return fetchBookmarks(ctx, meta.(*account.Session), t, res)
	}
	return t
}

// bookmarkColumns are the columns of x_bookmarks.
var bookmarkColumns = []column[*bookmark]{
	primaryKey(stringColumn("user_id", "X user id of the account that bookmarked the post.", func(b *bookmark) string { return b.userID })),
	primaryKey(stringColumn("post_id", "Post id.", func(b *bookmark) string { return b.post.ID })),
	stringColumn("text", "Text of the post (for long posts, the first 280 characters; see `note_tweet`).", func(b *bookmark) string { return b.post.Text }),
	optTimeColumn("created_at", "When the post was created (not when it was bookmarked).", func(b *bookmark) *time.Time { return b.post.CreatedAt }),
	optStringColumn("author_id", "User id of the post's author.", func(b *bookmark) string { return b.post.AuthorID }),
	optStringColumn("conversation_id", "Id of the post that started the conversation.", func(b *bookmark) string { return b.post.ConversationID }),
	optStringColumn("lang", "Language of the post, as detected by X (BCP 47).", func(b *bookmark) string { return b.post.Lang }),
	optStringColumn("in_reply_to_user_id", "User id the post replies to.", func(b *bookmark) string { return b.post.InReplyToUserID }),
	optBoolColumn("possibly_sensitive", "Whether X flags the post's links or media as possibly sensitive.", func(b *bookmark) *bool { return b.post.PossiblySensitive }),
	stringListColumn("edit_history_tweet_ids", "Ids of every version of the post, oldest first.", func(b *bookmark) []string { return b.post.EditHistoryTweetIDs }),
	jsonColumn("public_metrics", "Likes, reposts, replies, quotes, bookmarks and impressions when first seen.", func(b *bookmark) []byte { return b.post.PublicMetrics }),
	jsonColumn("entities", "Hashtags, mentions, URLs and cashtags in the text.", func(b *bookmark) []byte { return b.post.Entities }),
	jsonColumn("referenced_tweets", "Posts this one quotes, replies to or reposts.", func(b *bookmark) []byte { return b.post.ReferencedTweets }),
	jsonColumn("attachments", "Media keys and poll ids attached to the post.", func(b *bookmark) []byte { return b.post.Attachments }),
	jsonColumn("note_tweet", "The full text and entities of a long post.", func(b *bookmark) []byte { return b.post.NoteTweet }),
	jsonColumn("author", "The author's user object, when `fields.expansions` includes `author_id`.", func(b *bookmark) []byte { return b.author }),
	jsonColumn("media", "The attached media objects, when `fields.expansions` includes `attachments.media_keys`.", func(b *bookmark) []byte { return mediaJSON(b.media) }),
	jsonColumn("post", "The post object exactly as the API returned it.", func(b *bookmark) []byte { return b.post.Raw }),
	incrementalKey(timeColumn("first_seen_at", "Start of the sync that first found the bookmark. The bookmark was made before this time.", func(b *bookmark) time.Time { return b.firstSeenAt })),
	optTimeColumn("bookmarked_after", "Start of the account's previous successful sync: the bookmark was made after this time. Null for posts found by the first sync.", func(b *bookmark) *time.Time { return b.bookmarkedAfter }),
}

func mediaJSON(objs []json.RawMessage) []byte {
	if len(objs) == 0 {
		return nil
	}
	size := 2
	for _, o := range objs {
		size += len(o) + 1
	}
	out := make([]byte, 0, size)
	out = append(out, '[')
	for i, o := range objs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, o...)
	}
	return append(out, ']')
}

func fetchBookmarks(ctx context.Context, s *account.Session, table *schema.Table, res chan<- any) error {
	if err := s.Check(ctx); err != nil {
		return err
	}
	key := account.BookmarksKey(s.UserID)
	prev, err := s.LoadMemory(ctx, key)
	if err != nil {
		err = fmt.Errorf("%s: %w", s.ID(), err)
		s.Report().AddWalk(account.WalkReport{Operation: client.OpListBookmarks, List: "bookmarks", Err: err})
		return err
	}
	var bookmarkedAfter *time.Time
	if prev != nil && !prev.SyncedAt.IsZero() {
		t := prev.SyncedAt
		bookmarkedAfter = &t
	}
	firstSeenAt := s.Clock.Now()

	emit := func(ctx context.Context, rows []*bookmark) error {
		select {
		case res <- rows:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
	flush := func(context.Context) error { return nil }
	if s.Direct != nil {
		emit, flush, err = directEmit(s.Direct, table)
		if err != nil {
			return err
		}
	}

	emit, saveArchived := recordArchived(s, emit) // the posts the compliance checks cover

	fields := fieldSelection{fields: s.Fields}
	w := &walk.Walker[*bookmark]{
		Settings: s.Walk,
		Clock:    s.Clock,
		ID:       func(b *bookmark) string { return b.post.ID },
		// Fetch runs while the previous page is emitted, and on a first sync
		// while the previous page is decoded (see walk.Walker), so a page's
		// rows carry what they need from it (includes) themselves.
		Fetch: func(ctx context.Context, maxResults int, token string, peek func(walk.Peek)) (walk.Page[*bookmark], error) {
			opts := client.ListOptions{
				PageOptions: client.PageOptions{MaxResults: maxResults, PaginationToken: token},
				Fields:      fields.get(),
				OnMeta:      func(m client.Meta) { peek(walk.Peek{Next: m.NextToken, Count: m.ResultCount}) },
			}
			p, _, err := s.API.ListBookmarks(ctx, s.UserID, opts)
			if errors.Is(err, client.ErrInvalidRequest) && !opts.Fields.Empty() {
				// The document leaves field selection "not shown": an API that
				// refuses it still serves the posts. A refused request is not
				// billed, so asking again without it costs nothing.
				s.Logger.Warn().Err(err).Msg("the API refused the field selection; reading posts with the fields it returns by default")
				opts.Fields = fields.drop()
				p, _, err = s.API.ListBookmarks(ctx, s.UserID, opts)
			}
			if err != nil {
				return walk.Page[*bookmark]{}, err
			}
			for _, pe := range p.Errors {
				s.Logger.Warn().Str("title", pe.Title).Str("detail", pe.Detail).Str("resource_id", pe.ResourceID).Msg("partial error in a bookmarks page; the posts beside it are kept")
			}
			return walk.Page[*bookmark]{Items: bookmarkRows(s.UserID, p, firstSeenAt, bookmarkedAfter), Next: p.Meta.NextToken}, nil
		},
		Emit: emit,
	}
	result, err := w.Run(ctx, prev)
	// Rows emitted before a failure are written as a plugin sync writes
	// them: a direct sink gets its last record either way.
	if ferr := flush(ctx); ferr != nil && err == nil {
		err = ferr
		result.Outcome = walk.Failed
	}
	err = saveArchived(ctx, err)
	if err != nil {
		err = walkError(s, "bookmarks", result, err)
		s.Report().AddWalk(account.WalkReport{Operation: client.OpListBookmarks, List: "bookmarks", Result: result, Err: err})
		return err
	}
	if err := s.SaveMemory(ctx, key, result.Memory); err != nil {
		err = fmt.Errorf("%s: %w", s.ID(), err)
		s.Report().AddWalk(account.WalkReport{Operation: client.OpListBookmarks, List: "bookmarks", Result: result, Err: err})
		return err
	}
	s.Report().AddWalk(account.WalkReport{Operation: client.OpListBookmarks, List: "bookmarks", Result: result})
	s.Logger.Info().Str("outcome", string(result.Outcome)).Int("new", result.New).Int("billed", result.Billed).Int("requests", result.Requests).Msg("bookmarks walk finished")
	return nil
}

// fieldSelection is the walk's field selection, which it drops for good if
// the API refuses it; requests may be in flight together.
type fieldSelection struct {
	mu     sync.Mutex
	fields client.Fields
}

func (f *fieldSelection) get() client.Fields {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.fields
}

func (f *fieldSelection) drop() client.Fields {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fields = client.Fields{}
	return f.fields
}

// bookmarkRows are the rows of a page's posts, with their expanded author
// and media.
func bookmarkRows(userID string, p *client.PostPage, firstSeenAt time.Time, bookmarkedAfter *time.Time) []*bookmark {
	var users, media map[string]json.RawMessage
	if len(p.Includes.Users) > 0 {
		users = p.Includes.UsersByID()
	}
	if len(p.Includes.Media) > 0 {
		media = p.Includes.MediaByKey()
	}
	rows := make([]*bookmark, len(p.Data))
	backing := make([]bookmark, len(p.Data))
	for i := range p.Data {
		post := &p.Data[i]
		row := &backing[i]
		*row = bookmark{userID: userID, post: post, firstSeenAt: firstSeenAt, bookmarkedAfter: bookmarkedAfter}
		if users != nil {
			row.author = users[post.AuthorID]
		}
		if media != nil {
			for _, k := range post.MediaKeys {
				if m, ok := media[k]; ok {
					row.media = append(row.media, m)
				}
			}
		}
		rows[i] = row
	}
	return rows
}

// directEmit emits bookmark rows to a ColumnSink, in Columns of
// account.DirectBatchRows rows; flush writes the last one.
func directEmit(d *account.Direct, table *schema.Table) (emit func(context.Context, []*bookmark) error, flush func(context.Context) error, err error) {
	cb, err := newColumnsBuilder(table, bookmarkColumns, d.DeterministicCQID)
	if err != nil {
		return nil, nil, err
	}
	var cols *pqfile.Columns
	write := func(ctx context.Context) error {
		c := cols
		cols = nil
		return d.Sink.WriteColumns(ctx, table, c)
	}
	emit = func(ctx context.Context, rows []*bookmark) error {
		if cols == nil {
			c, err := d.Sink.NewColumns(ctx, table)
			if err != nil {
				return err
			}
			cols = c
		}
		cb.Append(cols, rows)
		if err := cols.Err(); err != nil {
			return err // a wrong value, named, before the walk goes on
		}
		if cols.Len() >= account.DirectBatchRows {
			return write(ctx)
		}
		return nil
	}
	flush = func(ctx context.Context) error {
		if cols == nil || cols.Len() == 0 {
			return nil
		}
		return write(ctx)
	}
	return emit, flush, nil
}

// walkError says which walk failed, how far it got, and that nothing advanced.
func walkError(s *account.Session, list string, result *walk.Result, err error) error {
	if result == nil {
		return fmt.Errorf("%s: %s walk: %w", s.ID(), list, err)
	}
	return fmt.Errorf("%s: %s walk %s after %d requests and %d billed posts (state not advanced): %w",
		s.ID(), list, result.Outcome, result.Requests, result.Billed, err)
}
