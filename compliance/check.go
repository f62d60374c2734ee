// Package compliance runs X's batch compliance jobs over the posts a sync
// archived: which posts are due, the job's life (create, record, upload,
// poll, read), what each account keeps in the state backend, and the rows
// of x_post_compliance it finds, which package resources declares.
package compliance

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
	"github.com/cq-source-x/cq-source-x/outbox"
	"github.com/cq-source-x/cq-source-x/plan"
	"github.com/rs/zerolog"
)

// Check is the app's compliance jobs for the accounts of one sync (of its
// shard, with --shard): the client of x_post_compliance. It is not
// multiplexed: every account's ids go into the same jobs, each id once.
type Check struct {
	// API has the app's app-only bearer token; nil when the spec has no
	// compliance section, and the table then has no rows.
	API          *client.Client
	Meter        *billing.Meter
	Set          *account.Set
	State        state.Client
	Clock        clock.Clock
	Logger       zerolog.Logger
	Sync         account.Sync
	Every, Wait  time.Duration // the spec's compliance settings
	MaxIDsPerJob int
	// Scope names the share of the accounts in a sharded sync
	// ("shard-1-of-2"; "" when not sharded): each shard keeps its own job.
	Scope   string
	Err     error         // why the section could not be prepared: the table fails with it
	Secrets *secrets.Mask // masks the sync's credentials in text made from errors
	Resend  outbox.Policy // how long the rows are sent again (account.Session.Resend)
	// ActionOf is what is done to a post X reports for a reason
	// (compliance.on_change; "" is a reason this version does not name).
	ActionOf func(reason string) plan.Action

	mu      sync.Mutex
	failure error
	accts   []*accountChecks // of the last Run
	users   *usersCheck      // of the last Run
}

// ID implements schema.ClientMeta.
func (*Check) ID() string { return "compliance" }

// Finding is one row of x_post_compliance: what X said of a post an
// account archived, when it changed, and what the archive does with it. As
// JSON, it is what an outbox keeps of the row, to send it again.
type Finding struct {
	UserID string `json:"-"`
	PostID string `json:"post_id"`
	JobID  string `json:"job_id"`
	// Action and Reason are X's; ArchiveAction is the archive's
	// (archiveActions), "" for a post visible again.
	Action        string     `json:"action,omitempty"`
	Reason        string     `json:"reason,omitempty"`
	ArchiveAction string     `json:"archive_action,omitempty"`
	CreatedAt     *time.Time `json:"created_at,omitempty"`
	RedactedAt    *time.Time `json:"redacted_at,omitempty"`
	CheckedAt     time.Time  `json:"checked_at"`
}

// archiveActions name what the archive does with a post, by its Action.
var archiveActions = map[string]string{"keep": "kept", "scrub_geo": "geo_scrubbed", "redact": "redacted", "delete": "deleted"}

// archiveAction is what the archive does with a post X reports for the
// reason of code (compliance.on_change).
func (c *Check) archiveAction(code uint8) string {
	if c.ActionOf == nil {
		return ""
	}
	return archiveActions[c.ActionOf(reasonName(code)).String()]
}

// Emit sends rows of x_post_compliance to the scheduler, unless ctx ends.
type Emit func(context.Context, []*Finding) error

// Run runs the sync's part of the checks, emitting the rows it finds. A
// check that fails is logged and recorded (Failure).
func (c *Check) Run(ctx context.Context, emit Emit) error {
	if c.API == nil && c.Err == nil {
		return nil
	}
	err := c.Err
	if err == nil {
		err = c.check(ctx, emit)
	}
	if err != nil {
		c.mu.Lock()
		c.failure = err
		c.mu.Unlock()
		c.Logger.Error().Bool(account.Reported, true).Err(c.Secrets.Error(err)).Msg("compliance check did not finish")
	}
	return err
}

// Failure is why the sync's check failed (nil when it did not).
func (c *Check) Failure() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.failure
}

// FailedOperation is the operation whose request the failure is about
// (compliance_create_job when it names none).
func (c *Check) FailedOperation() client.Operation {
	failure := c.Failure()
	if e, ok := errors.AsType[*jobError](failure); ok {
		return e.op
	}
	if e, ok := errors.AsType[*client.APIError](failure); ok {
		return e.Operation
	}
	if e, ok := errors.AsType[*client.RateLimitError](failure); ok {
		return e.Operation
	}
	if e, ok := errors.AsType[*client.MalformedResponseError](failure); ok {
		return e.Operation
	}
	return client.OpCreateComplianceJob
}

// resendFindings sends again the rows the account's outbox keeps for sync
// (outbox.Open), with the same checked_at.
func (a *accountChecks) resendFindings(ctx context.Context, sync account.Sync, p outbox.Policy, emit Emit) error {
	a.changed = a.changed || len(a.outbox.Entries) > 0
	a.rows = outbox.Open[*Finding](a.outbox, sync, p)
	err := a.rows.Each(func(rows []*Finding) error {
		for _, f := range rows {
			f.UserID = a.userID
		}
		return emit(ctx, rows)
	})
	if err != nil {
		return fmt.Errorf("the compliance findings of user %s: %w", a.userID, err)
	}
	return nil
}
