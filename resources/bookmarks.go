package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
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
		Resolver:      fetchBookmarks,
		Multiplex:     account.Multiplex,
		IsIncremental: true,
		Columns: schema.ColumnList{
			primaryKey(column("user_id", arrow.BinaryTypes.String, "X user id of the account that bookmarked the post.", func(b *bookmark) any { return b.userID })),
			primaryKey(column("post_id", arrow.BinaryTypes.String, "Post id.", func(b *bookmark) any { return b.post.ID })),
			column("text", arrow.BinaryTypes.String, "Text of the post (for long posts, the first 280 characters; see `note_tweet`).", func(b *bookmark) any { return b.post.Text }),
			column("created_at", arrow.FixedWidthTypes.Timestamp_us, "When the post was created (not when it was bookmarked).", func(b *bookmark) any { return b.post.CreatedAt }),
			column("author_id", arrow.BinaryTypes.String, "User id of the post's author.", func(b *bookmark) any { return optString(b.post.AuthorID) }),
			column("conversation_id", arrow.BinaryTypes.String, "Id of the post that started the conversation.", func(b *bookmark) any { return optString(b.post.ConversationID) }),
			column("lang", arrow.BinaryTypes.String, "Language of the post, as detected by X (BCP 47).", func(b *bookmark) any { return optString(b.post.Lang) }),
			column("in_reply_to_user_id", arrow.BinaryTypes.String, "User id the post replies to.", func(b *bookmark) any { return optString(b.post.InReplyToUserID) }),
			column("possibly_sensitive", arrow.FixedWidthTypes.Boolean, "Whether X flags the post's links or media as possibly sensitive.", func(b *bookmark) any { return b.post.PossiblySensitive }),
			column("edit_history_tweet_ids", arrow.ListOf(arrow.BinaryTypes.String), "Ids of every version of the post, oldest first.", func(b *bookmark) any { return b.post.EditHistoryTweetIDs }),
			jsonColumn("public_metrics", "Likes, reposts, replies, quotes, bookmarks and impressions when first seen.", func(b *bookmark) []byte { return b.post.PublicMetrics }),
			jsonColumn("entities", "Hashtags, mentions, URLs and cashtags in the text.", func(b *bookmark) []byte { return b.post.Entities }),
			jsonColumn("referenced_tweets", "Posts this one quotes, replies to or reposts.", func(b *bookmark) []byte { return b.post.ReferencedTweets }),
			jsonColumn("attachments", "Media keys and poll ids attached to the post.", func(b *bookmark) []byte { return b.post.Attachments }),
			jsonColumn("note_tweet", "The full text and entities of a long post.", func(b *bookmark) []byte { return b.post.NoteTweet }),
			jsonColumn("author", "The author's user object, when `fields.expansions` includes `author_id`.", func(b *bookmark) []byte { return b.author }),
			jsonColumn("media", "The attached media objects, when `fields.expansions` includes `attachments.media_keys`.", func(b *bookmark) []byte { return mediaJSON(b.media) }),
			jsonColumn("post", "The post object exactly as the API returned it.", func(b *bookmark) []byte { return b.post.Raw }),
			{
				Name:           "first_seen_at",
				Type:           arrow.FixedWidthTypes.Timestamp_us,
				Description:    "Start of the sync that first found the bookmark. The bookmark was made before this time.",
				IncrementalKey: true,
				NotNull:        true,
				Resolver: func(_ context.Context, _ schema.ClientMeta, r *schema.Resource, c schema.Column) error {
					return r.Set(c.Name, r.Item.(*bookmark).firstSeenAt)
				},
			},
			column("bookmarked_after", arrow.FixedWidthTypes.Timestamp_us, "Start of the account's previous successful sync: the bookmark was made after this time. Null for posts found by the first sync.", func(b *bookmark) any { return b.bookmarkedAfter }),
		},
	}
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
	var bookmarkedAfter *time.Time
	if prev != nil && !prev.SyncedAt.IsZero() {
		t := prev.SyncedAt
		bookmarkedAfter = &t
	}
	firstSeenAt := s.Clock.Now()

	var page *client.PostPage // the page being emitted
	fields := s.Fields
	w := &walk.Walker[client.Post]{
		Settings: s.Walk,
		Clock:    s.Clock,
		ID:       func(p client.Post) string { return p.ID },
		Fetch: func(ctx context.Context, maxResults int, token string) (walk.Page[client.Post], error) {
			opts := client.ListOptions{
				PageOptions: client.PageOptions{MaxResults: maxResults, PaginationToken: token},
				Fields:      fields,
			}
			p, _, err := s.API.ListBookmarks(ctx, s.UserID, opts)
			if errors.Is(err, client.ErrInvalidRequest) && !fields.Empty() {
				// The document leaves field selection "not shown": an API that
				// refuses it still serves the posts. A refused request is not
				// billed, so asking again without it costs nothing.
				s.Logger.Warn().Err(err).Msg("the API refused the field selection; reading posts with the fields it returns by default")
				fields = client.Fields{}
				opts.Fields = fields
				p, _, err = s.API.ListBookmarks(ctx, s.UserID, opts)
			}
			if err != nil {
				return walk.Page[client.Post]{}, err
			}
			for _, pe := range p.Errors {
				s.Logger.Warn().Str("title", pe.Title).Str("detail", pe.Detail).Str("resource_id", pe.ResourceID).Msg("partial error in a bookmarks page; the posts beside it are kept")
			}
			page = p
			return walk.Page[client.Post]{Items: p.Data, Next: p.Meta.NextToken}, nil
		},
		Emit: func(ctx context.Context, posts []client.Post) error {
			var users map[string]json.RawMessage
			var media map[string]json.RawMessage
			if len(page.Includes.Users) > 0 {
				users = page.Includes.UsersByID()
			}
			if len(page.Includes.Media) > 0 {
				media = page.Includes.MediaByKey()
			}
			rows := make([]*bookmark, len(posts))
			for i := range posts {
				p := &posts[i]
				row := &bookmark{userID: s.UserID, post: p, firstSeenAt: firstSeenAt, bookmarkedAfter: bookmarkedAfter}
				if users != nil {
					row.author = users[p.AuthorID]
				}
				if media != nil {
					for _, k := range p.MediaKeys {
						if m, ok := media[k]; ok {
							row.media = append(row.media, m)
						}
					}
				}
				rows[i] = row
			}
			select {
			case res <- rows:
				return nil
			case <-ctx.Done():
				return context.Cause(ctx)
			}
		},
	}
	result, err := w.Run(ctx, prev)
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

// walkError says which walk failed, how far it got, and that nothing advanced.
func walkError(s *account.Session, list string, result *walk.Result, err error) error {
	if result == nil {
		return fmt.Errorf("%s: %s walk: %w", s.ID(), list, err)
	}
	return fmt.Errorf("%s: %s walk %s after %d requests and %d billed posts (state not advanced): %w",
		s.ID(), list, result.Outcome, result.Requests, result.Billed, err)
}
