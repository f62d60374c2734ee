package resources

import (
	"cmp"
	"context"
	"encoding/json"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/media"
	"github.com/cq-source-x/cq-source-x/plan"
)

func init() { DeclareContent(BookmarkMedia, plan.Holding{Of: "post_id"}) }

// bookmarkMedia is one row of x_bookmark_media.
type bookmarkMedia struct {
	b        *bookmark
	position int
	mediaItem
}

// BookmarkMedia is x_bookmark_media, a child of x_bookmarks.
func BookmarkMedia() *schema.Table {
	return &schema.Table{
		Name:  BookmarkMediaTable,
		Title: "X Bookmark Media",
		Description: "The photos, videos and GIFs attached to each bookmarked post, and those of its X Article, with `content.media` (on by default: X bills no media). " +
			"Rows of a bookmark share its key (join on `user_id, post_id`), written once with it. Videos and GIFs list their variants; `download_url` is the photo, or the video variant of the highest bit rate. " +
			"The media of referenced posts are in x_bookmark_referenced_posts.media.",
		Resolver: fetchBookmarkMedia,
		Columns:  columnList(mediaColumns),
		// Rows are written once, with their bookmark: incremental as it is.
		IsIncremental: true,
	}
}

var mediaColumns = []column[*bookmarkMedia]{
	primaryKey(col("user_id", "X user id of the account that bookmarked the post.", func(m *bookmarkMedia) string { return m.b.userID })),
	primaryKey(col("post_id", "The bookmarked post (x_bookmarks.post_id).", func(m *bookmarkMedia) string { return m.b.post.ID })),
	primaryKey(col("media_key", "The media object's key.", func(m *bookmarkMedia) string { return m.key })),
	col("position", "Place of the media in the post, from 0: attachments in order, then the article's cover and body media.", func(m *bookmarkMedia) int64 { return int64(m.position) }),
	col("role", "Where the media sits: `attachment` (attached to the post), `article_cover` or `article_media` (of its X Article).", func(m *bookmarkMedia) string { return m.role }),
	optStringColumn("type", "photo, video or animated_gif.", func(m *bookmarkMedia) string { return orEmpty(m.media).Type }),
	optStringColumn("url", "URL of a photo.", func(m *bookmarkMedia) string { return orEmpty(m.media).URL }),
	optStringColumn("preview_image_url", "URL of a video's or GIF's still image.", func(m *bookmarkMedia) string { return orEmpty(m.media).PreviewImageURL }),
	optStringColumn("download_url", "The file to download: a photo's url, or the video/mp4 variant of the highest bit rate.", func(m *bookmarkMedia) string { return downloadURL(orEmpty(m.media)) }),
	optStringColumn("alt_text", "The media's description for screen readers.", func(m *bookmarkMedia) string { return orEmpty(m.media).AltText }),
	col("width", "Width in pixels.", func(m *bookmarkMedia) *int64 { return orEmpty(m.media).Width }),
	col("height", "Height in pixels.", func(m *bookmarkMedia) *int64 { return orEmpty(m.media).Height }),
	col("duration_ms", "Length of a video in milliseconds.", func(m *bookmarkMedia) *int64 { return orEmpty(m.media).DurationMS }),
	jsonColumn("variants", "The playback variants of a video or GIF: bit_rate, content_type, url.", func(m *bookmarkMedia) []byte { return variantsJSON(orEmpty(m.media).Variants) }),
	jsonColumn("media", "The media object exactly as the API returned it.", func(m *bookmarkMedia) []byte { return orEmpty(m.media).Raw }),
	optStringColumn("error", "Why the media object is missing: a partial error of the API, or `Missing: ...` when X left it out with no error saying why; null when it is there.", func(m *bookmarkMedia) string { return orEmpty(m.err).String() }),
	incrementalKey(col("seen_at", "Start of the sync that found the bookmark (x_bookmarks.first_seen_at).", func(m *bookmarkMedia) time.Time { return m.b.firstSeenAt })),
}

func fetchBookmarkMedia(ctx context.Context, _ schema.ClientMeta, parent *schema.Resource, res chan<- any) error {
	b := parent.Item.(*bookmark)
	rows := make([]*bookmarkMedia, len(b.media))
	for i, m := range b.media {
		rows[i] = &bookmarkMedia{b: b, position: i, mediaItem: m}
	}
	return send(ctx, res, rows)
}

// downloadURL is a photo's url, or the mp4 variant of the highest bit rate.
func downloadURL(m *client.Media) string {
	return cmp.Or(m.URL, media.BestVariant(m))
}

func variantsJSON(vs []client.Variant) []byte {
	if len(vs) == 0 {
		return nil
	}
	b, _ := json.Marshal(vs) // nil, stored as null, in the unlikely failure
	return b
}
