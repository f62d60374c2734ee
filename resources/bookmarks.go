package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
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
	foundPosition   int64
}

// Bookmarks is the x_bookmarks table: one row per bookmarked post, emitted
// once, when a sync first sees it.
func Bookmarks() *schema.Table {
	return &schema.Table{
		Name:  BookmarksTable,
		Title: "X Bookmarks",
		Description: "Posts the user bookmarked, one row per (user, post), emitted once when a sync first finds the post. " +
			"Post content is immutable, so a post is never read again for its content. " +
			"The API gives no bookmark time: the bookmark was made after `bookmarked_after` (the account's previous successful sync; null on the first) and before `first_seen_at`. " +
			"Rows of removed bookmarks are kept: this is an archive.",
		Multiplex:     account.Multiplex,
		IsIncremental: true,
		Columns:       columnList(bookmarkColumns),
		Resolver:      fetchBookmarks,
	}
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
	int64Column("found_position", "Place of the post in the list when the sync that found it read it: 0 is the newest bookmark of that sync. Newest bookmarked first, in any archive: `ORDER BY first_seen_at DESC, found_position`.", func(b *bookmark) int64 { return b.foundPosition }),
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

func fetchBookmarks(ctx context.Context, meta schema.ClientMeta, _ *schema.Resource, res chan<- any) error {
	s := meta.(*account.Session)
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
	guard, err := startCapGuard(ctx, s, key, s.Walk, prev)
	if err != nil {
		err = walkError(s, "bookmarks", err)
		s.Report().AddWalk(account.WalkReport{Operation: client.OpListBookmarks, List: "bookmarks", Result: notStarted(s, err), Err: err})
		return err
	}
	var bookmarkedAfter *time.Time
	if prev != nil && !prev.SyncedAt.IsZero() {
		t := prev.SyncedAt
		bookmarkedAfter = &t
	}
	firstSeenAt := s.Clock.Now()
	read := 0 // posts of the walk's earlier pages: the place in the list of the next one

	emit := func(ctx context.Context, rows []*bookmark) error {
		select {
		case res <- rows:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}

	emit, saveArchived := recordArchived(s, emit) // the posts the compliance checks cover
	w := &walk.Walker[*bookmark]{
		Settings: s.Walk,
		Clock:    s.Clock,
		ID:       func(b *bookmark) string { return b.post.ID },
		Fetch: func(ctx context.Context, maxResults int, token string) (walk.Page[*bookmark], error) {
			opts := client.ListOptions{
				PageOptions: client.PageOptions{MaxResults: maxResults, PaginationToken: token},
				Fields:      s.Fields,
			}
			p, _, err := s.API.ListBookmarks(ctx, s.UserID, opts)
			if err != nil {
				return walk.Page[*bookmark]{}, fieldsRefused(err)
			}
			for _, pe := range p.Errors {
				s.Logger.Warn().Str("title", pe.Title).Str("detail", pe.Detail).Str("resource_id", pe.ResourceID).Msg("partial error in a bookmarks page; the posts beside it are kept")
			}
			rows := bookmarkRows(s.UserID, p, firstSeenAt, bookmarkedAfter, read)
			read += len(rows)
			return walk.Page[*bookmark]{Items: rows, Next: p.Meta.NextToken}, nil
		},
		Emit: emit,
	}
	result, err := w.Run(ctx, prev)
	err = saveArchived(ctx, err)
	if err != nil {
		err = walkError(s, "bookmarks", guard.done(ctx, s.Walk, prev, result, err))
		s.Report().AddWalk(account.WalkReport{Operation: client.OpListBookmarks, List: "bookmarks", Result: result, Err: err})
		return err
	}
	err = s.SaveMemory(ctx, key, result.Memory)
	if err == nil {
		err = guard.done(ctx, s.Walk, prev, result, nil)
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", s.ID(), err)
		s.Report().AddWalk(account.WalkReport{Operation: client.OpListBookmarks, List: "bookmarks", Result: result, Err: err})
		return err
	}
	s.Report().AddWalk(account.WalkReport{Operation: client.OpListBookmarks, List: "bookmarks", Result: result})
	s.Logger.Info().Str("outcome", string(result.Outcome)).Int("new", result.New).Int("billed", result.Billed).Int("requests", result.Requests).Msg("bookmarks walk finished")
	return nil
}

// fieldsRefused says what to do when the API refuses the field selection.
// Posts are never read again once stored, so a post read with fewer fields
// than the spec asks for would stay that way: the walk fails instead, with
// the refused parameter and value the API named, and nothing is stored.
func fieldsRefused(err error) error {
	var apiErr *client.APIError
	if !errors.As(err, &apiErr) || !errors.Is(err, client.ErrInvalidRequest) {
		return err
	}
	for _, it := range apiErr.Errors {
		for param := range it.Parameters {
			if field, ok := specField[param]; ok {
				return fmt.Errorf("the API refused the field selection in the spec's %s (sent as %s); fix or remove the value it names: %w", field, param, err)
			}
		}
	}
	return err
}

// specField names the spec field behind each field-selection parameter.
var specField = map[string]string{
	"tweet.fields": "fields.tweet_fields", "post.fields": "fields.tweet_fields", "expansions": "fields.expansions",
	"user.fields": "fields.user_fields", "media.fields": "fields.media_fields",
	"poll.fields": "fields.poll_fields", "place.fields": "fields.place_fields",
}

// bookmarkRows are the rows of a page's posts, with their expanded author
// and media; the page's first post is at place offset in the list.
func bookmarkRows(userID string, p *client.PostPage, firstSeenAt time.Time, bookmarkedAfter *time.Time, offset int) []*bookmark {
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
		*row = bookmark{userID: userID, post: post, firstSeenAt: firstSeenAt, bookmarkedAfter: bookmarkedAfter, foundPosition: int64(offset + i)}
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

// walkError says which walk of which account failed. It gives no counts:
// the usage table (and the exporter's summary) has them, from the meter.
// A walk stopped by the billed-post cap says so, and what the next needs.
func walkError(s *account.Session, list string, err error) error {
	if capErr := (*walk.CapError)(nil); errors.As(err, &capErr) {
		return fmt.Errorf("%s: %s walk %w", s.ID(), list, err)
	}
	return fmt.Errorf("%s: %s walk failed (state not advanced): %w", s.ID(), list, err)
}
