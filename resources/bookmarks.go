package resources

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/outbox"
	"github.com/cq-source-x/cq-source-x/plan"
	"github.com/cq-source-x/cq-source-x/walk"
)

// bookmark is one row of x_bookmarks, with its post's expanded objects.
type bookmark struct {
	userID          string
	page            *client.PostPage // the page the post was read in
	post            *client.Post
	author          *expandedUser // when authors are asked for
	media           []mediaItem   // when media are asked for
	refs            []reference   // when referenced posts are asked for
	firstSeenAt     time.Time
	bookmarkedAfter *time.Time
	foundPosition   int64
}

// Bookmarks is the x_bookmarks table.
func Bookmarks() *schema.Table {
	return &schema.Table{
		Name:  BookmarksTable,
		Title: "X Bookmarks",
		Description: "Posts the user bookmarked, one row per (user, post), emitted once when a sync first finds the post. " +
			"Post content is immutable, so a post is never read again for its content. " +
			"The API gives no bookmark time: the bookmark was made after `bookmarked_after` (the account's previous successful sync; null on the first) and before `first_seen_at`. " +
			"Rows of removed bookmarks are kept: this is an archive. " +
			"A post X reports deleted or withheld (x_post_compliance) is redacted by default: its row keeps " + columnNames(redactedKeeps) + ", every other column is null, and its rows of the child tables are removed (`compliance.on_change`, docs/compliance.md).",
		Multiplex:     account.Multiplex,
		IsIncremental: true,
		Columns:       columnList(bookmarkColumns),
		Resolver:      fetchBookmarks,
		Relations:     contentTableList(),
		// Resolved after the row's columns: the child tables it has rows for.
		PostResourceResolver: withChildrenOfRows,
	}
}

// redactedKeeps are the columns a redacted row of x_bookmarks keeps: the
// bookmark's key and its dates.
var redactedKeeps = []string{"user_id", "post_id", "created_at", "first_seen_at", "bookmarked_after", "found_position"}

func init() {
	declareHolding(plan.Holding{Table: BookmarksTable, Of: "post_id", Keeps: redactedKeeps, Geo: "post"})
}

// hasRows tells, by child table, whether a bookmark has rows of it.
var hasRows = map[string]func(*bookmark) bool{
	BookmarkAuthorsTable: func(b *bookmark) bool { return b.author != nil },
	BookmarkMediaTable:   func(b *bookmark) bool { return len(b.media) > 0 },
	ReferencedPostsTable: func(b *bookmark) bool { return len(b.refs) > 0 },
}

// withChildrenOfRows resolves a bookmark against a copy of its table with
// only the child tables it has rows of (docs/design/plugin.md#resolvers).
func withChildrenOfRows(_ context.Context, _ schema.ClientMeta, r *schema.Resource) error {
	b := r.Item.(*bookmark)
	var kept schema.Tables
	for _, child := range r.Table.Relations {
		if has := hasRows[child.Name]; has == nil || has(b) {
			kept = append(kept, child)
		}
	}
	if len(kept) < len(r.Table.Relations) {
		t := *r.Table
		t.Relations = kept
		r.Table = &t
	}
	return nil
}

var bookmarkColumns = []column[*bookmark]{
	primaryKey(col("user_id", "X user id of the account that bookmarked the post.", func(b *bookmark) string { return b.userID })),
	primaryKey(col("post_id", "Post id.", func(b *bookmark) string { return b.post.ID })),
	col("text", "Text of the post (for long posts, the first 280 characters; see `note_tweet`). Null once the post is redacted (docs/compliance.md).", func(b *bookmark) string { return b.post.Text }),
	col("created_at", "When the post was created (not when it was bookmarked).", func(b *bookmark) *time.Time { return b.post.CreatedAt }),
	optStringColumn("author_id", "User id of the post's author.", func(b *bookmark) string { return b.post.AuthorID }),
	optStringColumn("conversation_id", "Id of the post that started the conversation.", func(b *bookmark) string { return b.post.ConversationID }),
	optStringColumn("lang", "Language of the post, as detected by X (BCP 47).", func(b *bookmark) string { return b.post.Lang }),
	optStringColumn("in_reply_to_user_id", "User id the post replies to.", func(b *bookmark) string { return b.post.InReplyToUserID }),
	col("possibly_sensitive", "Whether X flags the post's links or media as possibly sensitive.", func(b *bookmark) *bool { return b.post.PossiblySensitive }),
	col("edit_history_tweet_ids", "Ids of every version of the post, oldest first.", func(b *bookmark) []string { return b.post.EditHistoryTweetIDs }),
	jsonColumn("public_metrics", "Likes, reposts, replies, quotes, bookmarks and impressions when first seen.", func(b *bookmark) []byte { return b.post.PublicMetrics }),
	jsonColumn("entities", "Hashtags, mentions, URLs and cashtags in the text.", func(b *bookmark) []byte { return b.post.Entities }),
	jsonColumn("referenced_tweets", "Posts this one quotes, replies to or reposts.", func(b *bookmark) []byte { return b.post.ReferencedTweets }),
	jsonColumn("attachments", "Media keys and poll ids attached to the post.", func(b *bookmark) []byte { return b.post.Attachments }),
	jsonColumn("note_tweet", "The full text and entities of a long post (`content.long_text`).", func(b *bookmark) []byte { return b.post.NoteTweet }),
	col("full_text", "The whole text of the post: `note_tweet.text` for a post longer than 280 characters (`content.long_text`), else `text`. Null once the post is redacted.", func(b *bookmark) string { return fullText(b.post) }),
	optStringColumn("article_title", "Title of the X Article the post carries (`content.articles`).", func(b *bookmark) string { return b.post.ArticleTitle }),
	optStringColumn("article_text", "The whole body of the X Article, as plain text (`content.articles`).", func(b *bookmark) string { return b.post.ArticleText }),
	jsonColumn("article", "The X Article object as the API returned it: title, plain_text, cover_media, media_entities, ... (`content.articles`).", func(b *bookmark) []byte { return b.post.Article }),
	jsonColumn("author", "The author's user object (`content.authors`; also in x_bookmark_authors).", func(b *bookmark) []byte { return authorOf(b.author).Raw }),
	jsonColumn("media", "The attached media objects (`content.media`; also in x_bookmark_media).", func(b *bookmark) []byte { return attachedJSON(b.media) }),
	jsonColumn("post", "The post object exactly as the API returned it.", func(b *bookmark) []byte { return b.post.Raw }),
	incrementalKey(col("first_seen_at", "Start of the sync that first found the bookmark. The bookmark was made before this time.", func(b *bookmark) time.Time { return b.firstSeenAt })),
	col("bookmarked_after", "Start of the account's previous successful sync: the bookmark was made after this time. Null for posts found by the first sync.", func(b *bookmark) *time.Time { return b.bookmarkedAfter }),
	col("found_position", "Place of the post in the list when the sync that found it read it: 0 is the newest bookmark of that sync. Newest bookmarked first, in any archive: `ORDER BY first_seen_at DESC, found_position`.", func(b *bookmark) int64 { return b.foundPosition }),
}

func fetchBookmarks(ctx context.Context, meta schema.ClientMeta, _ *schema.Resource, res chan<- any) error {
	s := meta.(*account.Session)
	if err := s.Ready(ctx); err != nil {
		s.Report().AddWalk(account.WalkReport{Operation: client.OpListBookmarks, Table: BookmarksTable, List: "bookmarks", Err: err})
		return err
	}
	defer s.EnterBilling(ctx)()
	bw, err := startBookmarksWalk(ctx, s)
	if err != nil {
		return err
	}
	emit := func(ctx context.Context, rows []*bookmark) error {
		if err := send(ctx, res, rows); err != nil {
			return err
		}
		return recordBookmarks(ctx, s, rows)
	}
	if bw.resent, err = resendBookmarks(ctx, s.UserID, s.AskedBy, bw.outbox, emit); err != nil {
		err = fmt.Errorf("%s: %w", s.ID(), err)
		bw.report(nil, err)
		return saveRecord(ctx, s, err)
	}
	w := &walk.Walker[*bookmark]{
		Settings: s.Walk,
		Clock:    s.Clock,
		ID:       func(b *bookmark) string { return b.post.ID },
		Fetch:    bw.fetchPage,
		Emit:     bw.keepSent(emit),
	}
	result, err := w.Run(ctx, bw.prev)
	err = bw.finish(ctx, result, saveRecord(ctx, s, err))
	return errors.Join(err, s.FlushWalk(ctx))
}

// keepSent records in the walk's outbox what emit sends, when rows are sent again.
func (bw *bookmarksWalk) keepSent(emit func(context.Context, []*bookmark) error) func(context.Context, []*bookmark) error {
	if !bw.s.Resend.On() {
		return emit
	}
	return func(ctx context.Context, rows []*bookmark) error {
		if err := emit(ctx, rows); err != nil {
			return err
		}
		pages, err := pagesOf(rows, bw.expansions)
		if err != nil {
			return err
		}
		return bw.outbox.Add(pages...)
	}
}

// bookmarksWalk is one walk of an account's bookmarks list.
type bookmarksWalk struct {
	s               *account.Session
	key             string       // the state key of the list's memory
	prev            *walk.Memory // what the last clean walk left; nil before the first
	guard           *capGuard
	firstSeenAt     time.Time
	bookmarkedAfter *time.Time
	read            int                    // posts of the walk's earlier pages: the place in the list of the next one
	missing         int                    // expanded objects its pages left out with no error saying why
	outbox          *outbox.Rows[sentPage] // rows of earlier walks sent again, and its own
	resent          int
	expansions      []string // what the last page's request asked to expand
}

// startBookmarksWalk reads the list's memory and cap record, reporting a walk that cannot start.
func startBookmarksWalk(ctx context.Context, s *account.Session) (*bookmarksWalk, error) {
	bw := &bookmarksWalk{s: s, key: account.BookmarksKey(s.UserID), firstSeenAt: s.Clock.Now(), expansions: s.Fields.Expansions}
	var err error
	var kept *outbox.Box
	if bw.prev, err = s.LoadMemory(ctx, bw.key); err == nil {
		kept, err = account.MemoryOutbox(bw.prev, bw.key)
	}
	if err != nil {
		err = fmt.Errorf("%s: %w", s.ID(), err)
		bw.report(nil, err)
		return nil, err
	}
	bw.outbox = outbox.Open[sentPage](kept, outbox.Sync{ID: s.Sync.ID, StartedAt: bw.firstSeenAt, Ended: s.Sync.Ended}, s.Resend)
	if bw.guard, err = startCapGuard(ctx, s, bw.key, s.Walk, bw.prev); err != nil {
		err = walkError(s, "bookmarks", err)
		bw.report(notStarted(s, err), err)
		return nil, err
	}
	if bw.prev != nil && !bw.prev.SyncedAt.IsZero() {
		t := bw.prev.SyncedAt
		bw.bookmarkedAfter = &t
	}
	return bw, nil
}

// send sends rows to res, unless ctx ends first. No rows, nothing sent.
func send[T any](ctx context.Context, res chan<- any, rows []T) error {
	if len(rows) == 0 {
		return nil
	}
	select {
	case res <- rows:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// fetchPage reads one page of the list and makes its rows.
func (bw *bookmarksWalk) fetchPage(ctx context.Context, maxResults int, token string) (walk.Page[*bookmark], error) {
	s := bw.s
	opts := client.ListOptions{
		PageOptions: client.PageOptions{MaxResults: maxResults, PaginationToken: token},
		Fields:      s.Fields,
	}
	p, resp, err := s.API.ListBookmarks(ctx, s.UserID, opts)
	if err != nil {
		return walk.Page[*bookmark]{}, fieldsRefused(err, s.AskedBy)
	}
	for _, pe := range p.Errors {
		if partialErrorKind(&pe) == "" {
			s.Logger.Warn().Str("error", s.Secrets.String(pe.String())).Msg("partial error in a bookmarks page; the posts beside it are kept")
		}
	}
	asked := s.Fields.Asked(resp.Naming)
	bw.expansions = asked.Expansions // the page's rows are emitted before the next is asked for
	pc := newPageContent(p, asked.Expansions, s.AskedBy)
	rows := bookmarkRows(s.UserID, pc, bw.firstSeenAt, bw.bookmarkedAfter, bw.read)
	if n := len(pc.missing); n > 0 {
		bw.missing += n
		s.Logger.Warn().Int("missing", n).Str("first", pc.missing[0]).
			Msg("X returned posts without part of what the spec asks for (an author, media or a referenced post), with no error saying why; " +
				"the posts are archived, and the error column of that part's row says it is missing")
	}
	bw.read += len(rows)
	return walk.Page[*bookmark]{Items: rows, Next: p.Meta.NextToken}, nil
}

// finish saves a clean walk's memory, settles the cap record, reports the
// walk and returns its error.
func (bw *bookmarksWalk) finish(ctx context.Context, result *walk.Result, err error) error {
	s := bw.s
	if err != nil {
		err = walkError(s, "bookmarks", bw.guard.done(ctx, s.Walk, bw.prev, result, err))
	} else if err = bw.save(ctx, result); err != nil {
		err = fmt.Errorf("%s: %w", s.ID(), err)
	}
	bw.report(result, err)
	if err == nil {
		s.Logger.Info().Str("outcome", string(result.Outcome)).Int("new", result.New).Int("sent_again", bw.resent).Int("billed", result.Billed).Int("requests", result.Requests).Msg("bookmarks walk finished")
	}
	return err
}

// save keeps a clean walk's memory with its outbox, and clears the cap record.
func (bw *bookmarksWalk) save(ctx context.Context, result *walk.Result) error {
	box, err := bw.outbox.Box()
	if err != nil {
		return err
	}
	text, err := box.Marshal()
	if err != nil {
		return err
	}
	result.Memory.Outbox = json.RawMessage(text)
	if err := bw.s.SaveMemory(ctx, bw.key, result.Memory); err != nil {
		return err
	}
	return bw.guard.done(ctx, bw.s.Walk, bw.prev, result, nil)
}

func (bw *bookmarksWalk) report(result *walk.Result, err error) {
	bw.s.Report().AddWalk(account.WalkReport{Operation: client.OpListBookmarks, Table: BookmarksTable, List: "bookmarks", Result: result, Err: err, Missing: bw.missing})
}

// fieldsRefused names, when the API refuses the field selection, the
// refused parameter and value and the settings that ask for it: posts are
// never read again, so the walk fails rather than store less than asked.
func fieldsRefused(err error, askedBy func(param, value string) []string) error {
	apiErr, ok := errors.AsType[*client.APIError](err)
	if askedBy == nil || !ok || !errors.Is(err, client.ErrInvalidRequest) {
		return err
	}
	for _, it := range apiErr.Errors {
		for _, param := range slices.Sorted(maps.Keys(it.Parameters)) {
			values := it.Parameters[param]
			var sources []string
			for _, v := range values {
				for _, src := range askedBy(param, v) {
					if !slices.Contains(sources, src) {
						sources = append(sources, src)
					}
				}
			}
			if len(sources) > 0 {
				return fmt.Errorf("the API refused %s=[%s], asked for by %s; turn that off or fix the value: %w",
					param, strings.Join(values, ","), strings.Join(sources, " or "), err)
			}
		}
	}
	return err
}

// bookmarkRows are the rows of a page's posts, with the expanded objects
// asked for; the page's first post is at place offset in the list.
func bookmarkRows(userID string, pc *pageContent, firstSeenAt time.Time, bookmarkedAfter *time.Time, offset int) []*bookmark {
	p := pc.page
	rows := make([]*bookmark, len(p.Data))
	for i := range p.Data {
		rows[i] = &bookmark{userID: userID, page: p, post: &p.Data[i], firstSeenAt: firstSeenAt, bookmarkedAfter: bookmarkedAfter, foundPosition: int64(offset + i)}
		pc.fill(rows[i])
	}
	return rows
}

// walkError says which walk of which account failed (the counts are the
// usage table's), or that the billed-post cap stopped it.
func walkError(s *account.Session, list string, err error) error {
	if capErr := (*walk.CapError)(nil); errors.As(err, &capErr) {
		return fmt.Errorf("%s: %s walk %w", s.ID(), list, err)
	}
	return fmt.Errorf("%s: %s walk failed (state not advanced): %w", s.ID(), list, err)
}
