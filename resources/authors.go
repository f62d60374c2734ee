package resources

import (
	"context"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/plan"
)

func init() { DeclareContent(BookmarkAuthors, plan.Holding{Of: "post_id"}) }

// bookmarkAuthor is one row of x_bookmark_authors.
type bookmarkAuthor struct {
	b *bookmark
	*expandedUser
}

// BookmarkAuthors is x_bookmark_authors, a child of x_bookmarks.
func BookmarkAuthors() *schema.Table {
	return &schema.Table{
		Name:  BookmarkAuthorsTable,
		Title: "X Bookmark Authors",
		Description: "The author of each bookmarked post, with `content.authors` (off by default: X bills each expanded user as a user read). " +
			"One row per row of x_bookmarks (same key: join on `user_id, post_id`), written once with it: the profile as it was when the sync found the bookmark (`seen_at`), never updated. " +
			"An author X did not return (suspended, say) has a row with the partial error X gave in `error`, or `Missing: ...` when X left it out with no error saying why.",
		Resolver: fetchBookmarkAuthors,
		Columns:  columnList(authorColumns),
		// Rows are written once, with their bookmark: incremental as it is.
		IsIncremental: true,
	}
}

var authorColumns = []column[*bookmarkAuthor]{
	primaryKey(col("user_id", "X user id of the account that bookmarked the post.", func(a *bookmarkAuthor) string { return a.b.userID })),
	primaryKey(col("post_id", "The bookmarked post (x_bookmarks.post_id).", func(a *bookmarkAuthor) string { return a.b.post.ID })),
	col("author_id", "User id of the post's author.", func(a *bookmarkAuthor) string { return a.id }),
	optStringColumn("username", "The author's handle, without @.", func(a *bookmarkAuthor) string { return orEmpty(a.user).Username }),
	optStringColumn("name", "The author's display name.", func(a *bookmarkAuthor) string { return orEmpty(a.user).Name }),
	optStringColumn("description", "The author's profile text (bio).", func(a *bookmarkAuthor) string { return orEmpty(a.user).Description }),
	optStringColumn("location", "The location the author gives in their profile.", func(a *bookmarkAuthor) string { return orEmpty(a.user).Location }),
	optStringColumn("url", "The URL in the author's profile.", func(a *bookmarkAuthor) string { return orEmpty(a.user).URL }),
	optStringColumn("profile_image_url", "URL of the author's profile picture.", func(a *bookmarkAuthor) string { return orEmpty(a.user).ProfileImageURL }),
	col("protected", "Whether the author's posts are protected.", func(a *bookmarkAuthor) *bool { return orEmpty(a.user).Protected }),
	col("verified", "Whether the author is verified.", func(a *bookmarkAuthor) *bool { return orEmpty(a.user).Verified }),
	optStringColumn("verified_type", "Kind of verification: blue, business, government or none.", func(a *bookmarkAuthor) string { return orEmpty(a.user).VerifiedType }),
	col("created_at", "When the author's account was created.", func(a *bookmarkAuthor) *time.Time { return orEmpty(a.user).CreatedAt }),
	jsonColumn("public_metrics", "Followers, following, posts, listed and likes counts when seen.", func(a *bookmarkAuthor) []byte { return orEmpty(a.user).PublicMetrics }),
	jsonColumn("user", "The user object exactly as the API returned it.", func(a *bookmarkAuthor) []byte { return orEmpty(a.user).Raw }),
	optStringColumn("error", "Why X returned no profile: its partial error (title and detail), or `Missing: ...` when X left the profile out with no error saying why; null when it returned it.", func(a *bookmarkAuthor) string { return orEmpty(a.err).String() }),
	incrementalKey(col("seen_at", "When the profile was seen: the start of the sync that found the bookmark (x_bookmarks.first_seen_at).", func(a *bookmarkAuthor) time.Time { return a.b.firstSeenAt })),
}

func fetchBookmarkAuthors(_ context.Context, _ schema.ClientMeta, parent *schema.Resource, res chan<- any) error {
	b := parent.Item.(*bookmark)
	if b.author != nil {
		res <- &bookmarkAuthor{b: b, expandedUser: b.author}
	}
	return nil
}
