package resources

import (
	"context"
	"sync"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/outbox"
	"github.com/cq-source-x/cq-source-x/internal/redact"
	"github.com/rs/zerolog"
)

// PostComplianceTable is the name of the compliance table.
const PostComplianceTable = "x_post_compliance"

// complianceRow is one row of x_post_compliance.
type complianceRow struct {
	userID, postID, jobID string
	action, reason        string
	createdAt, redactedAt *time.Time
	checkedAt             time.Time
}

// PostCompliance is the x_post_compliance table: tombstones of archived
// posts, from X's free batch compliance job. x_bookmarks rows are never
// changed or deleted; join the two on (user_id, post_id).
func PostCompliance() *schema.Table {
	return &schema.Table{
		Name:  PostComplianceTable,
		Title: "X Post Compliance",
		Description: "What X's batch compliance job (free) reports about archived posts: deleted, their author suspended, deactivated or made protected, bounced, or their location removed (`scrub_geo`). " +
			"Tombstones: rows of `x_bookmarks` are never changed or deleted; join on (user_id, post_id). " +
			"One row per account, post and change: a post is reported again only when what X says of it changes, and a post reported before that comes back clean gets a row with a null `action`. " +
			"Every archived post (also after its bookmark was removed) is checked once per `compliance.every`; posts reported deleted are not checked again. Needs the `compliance` section of the spec.",
		Resolver: fetchPostCompliance,
		// A history: incremental, so that write_mode overwrite-delete-stale
		// keeps the rows of earlier syncs.
		IsIncremental: true,
		Columns:       columnList(complianceColumns),
	}
}

var complianceColumns = []column[*complianceRow]{
	primaryKey(stringColumn("user_id", "X user id of the account whose archive holds the post.", func(r *complianceRow) string { return r.userID })),
	primaryKey(stringColumn("post_id", "Post id.", func(r *complianceRow) string { return r.postID })),
	primaryKey(stringColumn("job_id", "Id of the compliance job that reported the change.", func(r *complianceRow) string { return r.jobID })),
	optStringColumn("action", "What X asks of stored copies of the post: `delete` (for every reason). Null when a post reported before is visible again.", func(r *complianceRow) string { return r.action }),
	optStringColumn("reason", "Why: `deleted` (by its author), `suspended` (its author's account), `deactivated` (its author deactivated their account, which they may reactivate), `protected` (its author made their posts private), `bounced`, or `scrub_geo` (its location was removed; the post stays). Null when the post is visible again.", func(r *complianceRow) string { return r.reason }),
	optTimeColumn("created_at", "When the post was created, as the job reports it.", func(r *complianceRow) *time.Time { return r.createdAt }),
	optTimeColumn("redacted_at", "When X redacted the post, as the job reports it.", func(r *complianceRow) *time.Time { return r.redactedAt }),
	incrementalKey(timeColumn("checked_at", "When the job's results were read: the post's status as of then.", func(r *complianceRow) time.Time { return r.checkedAt })),
}

// Compliance is the client of x_post_compliance: the app's compliance jobs
// for the accounts of one sync (of its shard, with --shard). It is not
// multiplexed: the ids of every account go into the same jobs, each id
// once, and what X reports lands in a row per account that archived the
// post.
type Compliance struct {
	// API has the app's app-only bearer token; nil when the spec has no
	// compliance section, and the table then has no rows.
	API    *client.Client
	Meter  *client.Meter
	Set    *account.Set
	State  state.Client
	Clock  clock.Clock
	Logger zerolog.Logger
	Sync   account.Sync
	// Every, Wait and MaxIDsPerJob are the spec's compliance settings.
	Every, Wait  time.Duration
	MaxIDsPerJob int
	// Scope names the share of the accounts in a sharded sync
	// ("shard-1-of-2"; "" when not sharded): each shard keeps its own job.
	Scope string
	// Err is set when the section could not be prepared (an unreadable
	// token file): the table fails with it.
	Err error
	// Redact masks the credentials of the sync in text made from errors.
	Redact *redact.Redactor
	// Resend says how long the rows of the table are sent again
	// (account.Session.Resend).
	Resend outbox.Policy

	mu      sync.Mutex
	failure error
}

// ID implements schema.ClientMeta.
func (*Compliance) ID() string { return "compliance" }

func fetchPostCompliance(ctx context.Context, meta schema.ClientMeta, _ *schema.Resource, res chan<- any) error {
	c := meta.(*Compliance)
	if c.API == nil && c.Err == nil {
		return nil
	}
	err := c.Err
	if err == nil {
		err = c.check(ctx, res)
	}
	if err != nil {
		c.mu.Lock()
		c.failure = err
		c.mu.Unlock()
		c.Logger.Error().Err(c.Redact.Error(err)).Msg("compliance check did not finish")
	}
	return err
}

// Failure is why the sync's check failed (nil when it did not).
func (c *Compliance) Failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failure
}
