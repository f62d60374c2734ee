package resources

import (
	"context"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/compliance"
)

// PostCompliance is the x_post_compliance table.
func PostCompliance() *schema.Table {
	return &schema.Table{
		Name:  PostComplianceTable,
		Title: "X Post Compliance",
		Description: "What X's batch compliance jobs report about archived posts — the bookmarked ones, and the posts they quote, answer or repost whose rows `x_bookmark_referenced_posts` holds: deleted, their author suspended, deactivated or made protected, bounced, or their location removed (`scrub_geo`). " +
			"Tombstones: they stay whatever `compliance.on_change` does to the post's rows (by default its content is removed and its `x_bookmarks` row keeps only its key and dates; docs/compliance.md); join on (user_id, post_id), or x_bookmark_referenced_posts on (user_id, referenced_post_id). " +
			"One row per account, post and change: a post is reported again only when what X says of it changes, and a post reported before that comes back clean gets a row with a null `action`. " +
			"Every archived post (also after its bookmark was removed) is checked once per `compliance.every`, and its author's account too (a post of an account X reports gets a row of that job); posts reported deleted are not checked again. Needs the `compliance` section of the spec.",
		Resolver: fetchPostCompliance,
		// A history: incremental, so that write_mode overwrite-delete-stale
		// keeps the rows of earlier syncs.
		IsIncremental: true,
		Columns:       columnList(complianceColumns),
	}
}

var complianceColumns = []column[*compliance.Finding]{
	primaryKey(col("user_id", "X user id of the account whose archive holds the post.", func(r *compliance.Finding) string { return r.UserID })),
	primaryKey(col("post_id", "The post: bookmarked (x_bookmarks.post_id), or referenced by a bookmark (x_bookmark_referenced_posts.referenced_post_id), or both.", func(r *compliance.Finding) string { return r.PostID })),
	primaryKey(col("job_id", "Id of the compliance job that reported the change: a job of posts, or of accounts for a post whose author's account X reported.", func(r *compliance.Finding) string { return r.JobID })),
	optStringColumn("action", "What X asks of stored copies of the post, as X sent it: `delete`, for every reason (`scrub_geo` too); `archive_action` says what this archive does. Null when a post reported before is visible again.", func(r *compliance.Finding) string { return r.Action }),
	optStringColumn("reason", "Why, as X sent it: `deleted` (by its author), `suspended` (its author's account), `protected` (its author made their posts private), `bounced`, or `scrub_geo` (its location was removed; the post stays); from a job of accounts, `deleted`, `suspended`, `protected` or `deactivated` (its author deactivated their account, which they may reactivate). Null when the post is visible again, and for a result X sent without one (`archive_action` then says what was done).", func(r *compliance.Finding) string { return r.Reason }),
	optStringColumn("archive_action", "What this archive does with the post, as `compliance.on_change` says for the reason: `redacted` (its content removed, its bookmark's key and dates kept), `deleted` (its bookmark's row removed too), `geo_scrubbed` (its location removed) or `kept`. Null when a post reported before is visible again (its content is not restored).", func(r *compliance.Finding) string { return r.ArchiveAction }),
	col("created_at", "When the post was created, as a job of posts reports it; null from a job of accounts.", func(r *compliance.Finding) *time.Time { return r.CreatedAt }),
	col("redacted_at", "When X redacted the post, as the job reports it.", func(r *compliance.Finding) *time.Time { return r.RedactedAt }),
	incrementalKey(col("checked_at", "When the job's results were read: the post's status as of then.", func(r *compliance.Finding) time.Time { return r.CheckedAt })),
}

func fetchPostCompliance(ctx context.Context, meta schema.ClientMeta, _ *schema.Resource, res chan<- any) error {
	return meta.(*compliance.Check).Run(ctx, func(ctx context.Context, rows []*compliance.Finding) error { return send(ctx, res, rows) })
}
