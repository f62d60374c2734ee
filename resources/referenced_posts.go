package resources

import (
	"context"
	"slices"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/plan"
)

func init() {
	DeclareContent(ReferencedPosts, plan.Holding{Of: "post_id", Holds: "referenced_post_id", Geo: "post"})
}

// referencedPost is one row of x_bookmark_referenced_posts.
type referencedPost struct {
	b *bookmark
	reference
}

// ReferencedPosts is x_bookmark_referenced_posts, a child of x_bookmarks.
func ReferencedPosts() *schema.Table {
	return &schema.Table{
		Name:  ReferencedPostsTable,
		Title: "X Bookmark Referenced Posts",
		Description: "The posts each bookmarked post quotes, replies to or reposts, with `content.referenced_posts` (off by default: X bills each as a post read), " +
			"with their own author (`content.authors`) and media (`content.media`) when those are on. " +
			"One row per referenced post and `type`: a post that both replies to and quotes a post has a row of each. " +
			"Rows of a bookmark share its key (join on `user_id, post_id`), written once with it; post content is immutable. " +
			"A post X did not return (deleted, or by a protected or suspended author) has a row with X's partial error in `error`, or `Missing: ...` when X left it out with no error saying why.",
		Resolver: fetchReferencedPosts,
		Columns:  columnList(referencedColumns),
		// Rows are written once, with their bookmark: incremental as it is.
		IsIncremental: true,
	}
}

var referencedColumns = []column[*referencedPost]{
	primaryKey(col("user_id", "X user id of the account that bookmarked the post.", func(r *referencedPost) string { return r.b.userID })),
	primaryKey(col("post_id", "The bookmarked post (x_bookmarks.post_id).", func(r *referencedPost) string { return r.b.post.ID })),
	primaryKey(col("referenced_post_id", "The post it references.", func(r *referencedPost) string { return r.id })),
	// A post can reference one post twice (a reply that quotes the post it
	// answers): the type keeps both.
	primaryKey(col("type", "How the bookmarked post references it: quoted, replied_to or retweeted.", func(r *referencedPost) string { return r.typ })),
	optStringColumn("text", "Text of the referenced post.", func(r *referencedPost) string { return orEmpty(r.post).Text }),
	optStringColumn("full_text", "Its whole text: note_tweet's for a long post (`content.long_text`), else text.", func(r *referencedPost) string { return fullText(orEmpty(r.post)) }),
	col("created_at", "When the referenced post was created.", func(r *referencedPost) *time.Time { return orEmpty(r.post).CreatedAt }),
	optStringColumn("author_id", "User id of its author.", func(r *referencedPost) string { return orEmpty(r.post).AuthorID }),
	optStringColumn("author_username", "Its author's handle, with `content.authors`.", func(r *referencedPost) string { return authorOf(r.author).Username }),
	optStringColumn("conversation_id", "Id of the post that started its conversation.", func(r *referencedPost) string { return orEmpty(r.post).ConversationID }),
	optStringColumn("lang", "Its language, as detected by X.", func(r *referencedPost) string { return orEmpty(r.post).Lang }),
	optStringColumn("article_title", "Title of its X Article (`content.articles`).", func(r *referencedPost) string { return orEmpty(r.post).ArticleTitle }),
	optStringColumn("article_text", "Body of its X Article (`content.articles`).", func(r *referencedPost) string { return orEmpty(r.post).ArticleText }),
	jsonColumn("public_metrics", "Its likes, reposts, replies, quotes, bookmarks and impressions when seen.", func(r *referencedPost) []byte { return orEmpty(r.post).PublicMetrics }),
	jsonColumn("author", "Its author's user object, with `content.authors`.", func(r *referencedPost) []byte { return authorOf(r.author).Raw }),
	jsonColumn("media", "Its attached media objects, with `content.media`.", func(r *referencedPost) []byte { return attachedJSON(r.media) }),
	jsonColumn("post", "The referenced post exactly as the API returned it.", func(r *referencedPost) []byte { return orEmpty(r.post).Raw }),
	optStringColumn("error", "Why X did not return the post or part of it: its partial error (a deleted post, a protected or suspended author), or `Missing: ...` when X left it out with no error saying why; null when it did.", func(r *referencedPost) string { return r.errorText() }),
	incrementalKey(col("seen_at", "Start of the sync that found the bookmark (x_bookmarks.first_seen_at).", func(r *referencedPost) time.Time { return r.b.firstSeenAt })),
}

// errorText is the post's partial error, else its author's or a media's.
func (r *referencedPost) errorText() string {
	if r.err != nil {
		return r.err.String()
	}
	if r.author != nil && r.author.err != nil {
		return "author: " + r.author.err.String()
	}
	for _, m := range r.media {
		if m.err != nil {
			return "media " + m.key + ": " + m.err.String()
		}
	}
	return ""
}

func fetchReferencedPosts(ctx context.Context, _ schema.ClientMeta, parent *schema.Resource, res chan<- any) error {
	b := parent.Item.(*bookmark)
	rows := make([]*referencedPost, 0, len(b.refs))
	for _, r := range b.refs {
		dup := func(prev *referencedPost) bool { return prev.id == r.id && prev.typ == r.typ }
		if !slices.ContainsFunc(rows, dup) { // one row per key, whatever the API repeats
			rows = append(rows, &referencedPost{b: b, reference: r})
		}
	}
	return send(ctx, res, rows)
}
