package resources

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
	"github.com/cq-source-x/cq-source-x/walk"
)

// OpSetup names usage rows of accounts that could not be prepared.
const OpSetup = "setup"

// OpMediaFiles names usage rows of the media files an account's sync
// stored (x_media_files): requests to X's CDN, which X does not bill.
const OpMediaFiles = "media_files"

// Usage is one row of x_api_usage: one account, one operation, one sync:
// what its meter counted (billing.Usage), and what the sync did.
type Usage struct {
	billing.Usage
	SyncID          string
	SyncStartedAt   time.Time
	Account         string
	Walks           int
	WalkOutcomes    string
	NewPosts        int
	IncludesMissing int
	FilesStored     int
	BytesFetched    int64
	Failure         string
}

// APIUsage is the x_api_usage table, resolved after every other table of
// the sync: its rows count everything the sync did.
func APIUsage() *schema.Table {
	return &schema.Table{
		Name:  APIUsageTable,
		Title: "X API Usage",
		Description: "What each sync cost, per account and operation: requests; posts, users and media returned; posts and users billed after X's same-UTC-day de-duplication, and their estimated USD at the spec's rates; rate-limit waits and how each walk ended " +
			"(`met_held`: reached the posts already held; `reached_end`: read to the end of the list; `stopped_by_budget`: hit `planner.max_billed_posts`; `interrupted`: the sync was stopped first, and the next reads the list again; `failed`). " +
			"A failed account shows here with its error, even though the SDK does not fail the sync. " +
			"In the exporter's archive it also holds what `cq-source-x bookmarks remove` and `add` cost: their write requests, X billing each (operations remove_bookmark and add_bookmark, a row per account each time the command records its changes).",
		Resolver:  fetchAPIUsage,
		Multiplex: usageMultiplex,
		// A history, one sync's rows after another: incremental, so that
		// write_mode overwrite-delete-stale keeps the earlier syncs' rows.
		IsIncremental: true,
		Columns:       columnList(usageColumns),
	}
}

var usageColumns = []column[*Usage]{
	primaryKey(col("sync_id", "Id of the sync (the CloudQuery invocation id when there is one); for the rows of the bookmark commands, of the archive's run that recorded them.", func(u *Usage) string { return u.SyncID })),
	primaryKey(col("user_id", "X user id of the account (`accounts[i]` when it could not be resolved), or `app` for the app's compliance requests.", func(u *Usage) string { return u.UserID })),
	primaryKey(col("operation", "API operation: list_bookmarks, list_folders, get_folder, users_me, setup for an account that could not be prepared, add_bookmark and remove_bookmark for `cq-source-x bookmarks add` and `remove` (in the exporter's archive only), compliance_create_job, compliance_get_job, compliance_list_jobs, compliance_upload, compliance_download for the compliance checks, or media_files for the photos and videos stored from X's CDN (`media_files`; not billed).", func(u *Usage) string { return string(u.Operation) })),
	incrementalKey(col("sync_started_at", "When the sync started (for the rows of the bookmark commands, when their changes were recorded).", func(u *Usage) time.Time { return u.SyncStartedAt })),
	col("account", "Place of the account in the spec, as accounts[i], or `compliance` for the app's compliance requests (user_id `app`).", func(u *Usage) string { return u.Account }),
	col("requests", "HTTP requests sent, retries included.", func(u *Usage) int64 { return int64(u.Requests) }),
	col("ok_responses", "Successful responses.", func(u *Usage) int64 { return int64(u.OK) }),
	col("posts_returned", "Posts the API returned: those the pages held (bookmarked posts, folder entries) and the referenced posts expanded with them, also of pages read whole but refused for their shape.", func(u *Usage) int64 { return int64(u.PostsReturned) }),
	col("posts_billed", "Of posts_returned, those X bills: each post once per UTC day per account, so a post this account already read that day (an earlier sync included) is not counted again. An estimate: X calls its de-duplication a soft guarantee, and does not say whether it de-duplicates per account, per app or per developer account (accounts of one app that read the same posts may pay less).", func(u *Usage) int64 { return int64(u.PostsBilled) }),
	col("posts_unread", "At most this many more posts may have been billed, in pages whose body could not be read (cut short, not JSON): each counts the page size asked for. Not in `posts_billed` nor `estimated_usd`.", func(u *Usage) int64 { return int64(u.PostsUnread) }),
	col("users_returned", "Users the API returned: expanded authors (`content.authors`), and the user of users_me.", func(u *Usage) int64 { return int64(u.UsersReturned) }),
	col("users_billed", "Of users_returned, those billed: each user once per UTC day per account (an estimate, as posts_billed).", func(u *Usage) int64 { return int64(u.UsersBilled) }),
	col("media_returned", "Media objects the API returned (`content.media`); X bills none.", func(u *Usage) int64 { return int64(u.MediaReturned) }),
	col("writes_billed", "Bookmark writes X answered (operations add_bookmark and remove_bookmark, rows of `cq-source-x bookmarks add` and `remove` in the exporter's archive): X bills each request, never de-duplicated.", func(u *Usage) int64 { return int64(u.WritesBilled) }),
	col("owned_reads", "Whether the posts were priced as owned reads (`owned_read_usd`): the app owner's own bookmarks (`app_owner_user_id`, `accounts[].owned_reads`).", func(u *Usage) bool { return u.OwnedReads }),
	col("posts_usd", "posts_billed times `post_read_usd`, or `owned_read_usd` for owned reads.", func(u *Usage) float64 { return u.PostsUSD }),
	col("users_usd", "users_billed times `user_read_usd`.", func(u *Usage) float64 { return u.UsersUSD }),
	col("writes_usd", "writes_billed times `bookmark_write_usd`.", func(u *Usage) float64 { return u.WritesUSD }),
	col("estimated_usd", "posts_usd plus users_usd plus writes_usd: the estimated cost.", func(u *Usage) float64 { return u.USD }),
	col("rate_limited", "429 responses received (the plugin's own budget avoids them; another app of the same user can cause them).", func(u *Usage) int64 { return int64(u.RateLimited) }),
	col("rate_limit_waits", "Times the sync waited for a rate-limit window to reset.", func(u *Usage) int64 { return int64(u.RateLimitWaits) }),
	col("rate_limit_wait_seconds", "Total time spent waiting for rate-limit windows.", func(u *Usage) float64 { return u.Waited.Seconds() }),
	col("errors", "Failed requests other than 429s, each attempt counted: error statuses, dropped connections, bodies that could not be read or used.", func(u *Usage) int64 { return int64(u.Errors) }),
	col("walks", "Lists walked: 1 for bookmarks, one per folder for get_folder.", func(u *Usage) int64 { return int64(u.Walks) }),
	optStringColumn("walk_outcomes", "How the walks ended, e.g. `met_held` or `met_held=3 failed=1`.", func(u *Usage) string { return u.WalkOutcomes }),
	col("new_posts", "Posts found that were not held before.", func(u *Usage) int64 { return int64(u.NewPosts) }),
	col("includes_missing", "Authors, media and referenced posts the spec asked for that X left out of the pages with no error saying why (a suspended author, media still processing, a post deleted meanwhile): their posts are archived all the same, and the `error` column of the missing one's row in x_bookmark_authors, x_bookmark_media or x_bookmark_referenced_posts says it is missing.", func(u *Usage) int64 { return int64(u.IncludesMissing) }),
	col("files_stored", "Media files stored by the sync (operation media_files): downloaded, or found in the store already.", func(u *Usage) int64 { return int64(u.FilesStored) }),
	col("bytes_fetched", "Bytes of media files downloaded (operation media_files): the bandwidth they cost; X bills none.", func(u *Usage) int64 { return u.BytesFetched }),
	optStringColumn("failure", "Why the operation failed; null when it did not.", func(u *Usage) string { return u.Failure }),
}

// UsageRecords are rows as records of x_api_usage, as a sync's scheduler
// makes them (a random _cq_id): for the bookmark commands' rows.
func UsageRecords(rows []*Usage) (*schema.Table, []arrow.RecordBatch) {
	table := Tables().Get(APIUsageTable)
	sc := table.ToArrowSchema()
	recs := make([]arrow.RecordBatch, 0, len(rows))
	for _, u := range rows {
		r := schema.NewResourceData(table, nil, u)
		for _, c := range table.Columns {
			_ = c.Resolver(context.Background(), nil, r, c) // the getters of usageColumns do not fail
		}
		_ = r.CalculateCQID(false)
		recs = append(recs, r.GetValues().ToArrowRecord(sc))
	}
	return table, recs
}

func fetchAPIUsage(ctx context.Context, meta schema.ClientMeta, _ *schema.Resource, res chan<- any) error {
	if c, ok := meta.(*compliance.Check); ok {
		return send(ctx, res, ComplianceUsageRows(c))
	}
	return send(ctx, res, UsageRows(meta.(*account.Session)))
}

// UsageRows summarises what a session did: one row per operation used, and a
// setup row for an account that could not be prepared. The exporter prints
// the same rows as its summary.
func UsageRows(s *account.Session) []*Usage {
	label := account.Label(s.Index)
	base := Usage{Usage: billing.Usage{UserID: cmp.Or(s.UserID, label)}, SyncID: s.Sync.ID, SyncStartedAt: s.Sync.StartedAt, Account: label}
	if s.Err != nil { // its error, and what its meter counted
		u := base
		if s.Meter != nil {
			u.Usage = s.Meter.Total()
		}
		u.UserID, u.Operation, u.Failure = base.UserID, OpSetup, failureText(s.Secrets, s.Err.Error())
		return []*Usage{&u}
	}
	ops := newOpRows(base)
	ops.addMeter(s.Meter, s.UserID)
	ops.addWalks(s.Report().Walks())
	ops.addMedia(s.Report().Media())
	return ops.rows(s.Secrets)
}

// addMedia adds what the account's media files pass did.
func (r *opRows) addMedia(m *account.MediaReport) {
	if m == nil {
		return
	}
	u := r.get(OpMediaFiles)
	u.Requests += m.Requests
	u.OK += m.OK
	u.Errors += m.Failed
	u.FilesStored += m.Stored
	u.BytesFetched += m.Bytes
	if m.Err != "" {
		u.failures = append(u.failures, m.Err)
	}
}

// ComplianceUsageUser and ComplianceUsageAccount are the user_id and account
// of the compliance requests' usage rows: the app's, not an account's.
const (
	ComplianceUsageUser    = "app"
	ComplianceUsageAccount = "compliance"
)

// UsageClients is the top-level client of the x_api_usage pass: every
// account, and the app's compliance requests when the spec checks them.
type UsageClients struct {
	*account.Set
	Compliance *compliance.Check
}

// usageMultiplex runs the usage resolver for each account and the compliance checks.
func usageMultiplex(meta schema.ClientMeta) []schema.ClientMeta {
	u := meta.(*UsageClients) // the plugin syncs x_api_usage with no other client
	out := account.Multiplex(u.Set)
	if u.Compliance != nil && u.Compliance.Meter != nil {
		out = append(out, u.Compliance)
	}
	return out
}

// ComplianceUsageRows are the compliance requests of the sync, one row per
// operation (nothing is billed), with the check's failure on the row of the
// operation that failed.
func ComplianceUsageRows(c *compliance.Check) []*Usage {
	user := ComplianceUsageUser
	if c.Scope != "" {
		user += "/" + c.Scope
	}
	ops := newOpRows(Usage{Usage: billing.Usage{UserID: user}, SyncID: c.Sync.ID, SyncStartedAt: c.Sync.StartedAt, Account: ComplianceUsageAccount})
	ops.addMeter(c.Meter, "")
	if failure := c.Failure(); failure != nil {
		ops.get(c.FailedOperation()).Failure = failureText(c.Secrets, failure.Error())
	}
	return ops.rows(nil)
}

// failureText is an error's text for the failure column: the credentials
// masked, and valid UTF-8 (an error may quote what the system said; what X
// says the API client makes valid).
func failureText(r *secrets.Mask, text string) string {
	return strings.ToValidUTF8(r.String(text), "\uFFFD")
}

// opRows are the usage rows of one account, one per operation used.
type opRows struct {
	base Usage
	byOp map[client.Operation]*opRow
}

// opRow is a row with how its walks ended and their errors.
type opRow struct {
	Usage
	outcomes map[walk.Outcome]int
	failures []string
}

func newOpRows(base Usage) *opRows { return &opRows{base: base, byOp: map[client.Operation]*opRow{}} }

func (r *opRows) get(op client.Operation) *opRow {
	if u, ok := r.byOp[op]; ok {
		return u
	}
	u := &opRow{Usage: r.base, outcomes: map[walk.Outcome]int{}}
	u.Operation = op
	r.byOp[op] = u
	return u
}

// addMeter adds what meter counted for userID (and for user "", the app's
// requests and GET /2/users/me).
func (r *opRows) addMeter(meter *billing.Meter, userID string) {
	for _, m := range meter.Snapshot() {
		if m.UserID == userID || m.UserID == "" {
			u := r.get(m.Operation)
			u.Add(m)
			u.OwnedReads = u.OwnedReads || m.OwnedReads
		}
	}
}

// addWalks counts the walks per operation: how each ended, the posts found, their errors.
func (r *opRows) addWalks(walks []account.WalkReport) {
	for _, w := range walks {
		u := r.get(w.Operation)
		u.Walks++
		outcome := walk.Failed
		if w.Result != nil {
			u.NewPosts += w.Result.New
			outcome = w.Result.Outcome
		}
		u.IncludesMissing += w.Missing
		u.outcomes[outcome]++
		if w.Err != nil && outcome != walk.Interrupted { // stopped, not failed: walk_outcomes says so
			u.failures = append(u.failures, w.Err.Error())
		}
	}
}

// rows returns the rows, with their walks' outcomes and errors (masked with
// mask), in the order of client.Operations.
func (r *opRows) rows(mask *secrets.Mask) []*Usage {
	rows := make([]*Usage, 0, len(r.byOp))
	for _, u := range r.byOp {
		u.WalkOutcomes = formatOutcomes(u.outcomes, u.Walks)
		if len(u.failures) > 0 {
			u.Failure = failureText(mask, strings.Join(u.failures, "; "))
		}
		rows = append(rows, &u.Usage)
	}
	slices.SortFunc(rows, func(a, b *Usage) int { return cmp.Compare(opOrder(a.Operation), opOrder(b.Operation)) })
	return rows
}

func opOrder(op client.Operation) int {
	i := slices.Index(client.Operations(), op)
	if i < 0 {
		return len(client.Operations())
	}
	return i
}

// formatOutcomes writes "met_held" for a single walk, else "met_held=3 failed=1".
func formatOutcomes(counts map[walk.Outcome]int, walks int) string {
	if walks == 1 {
		for o := range counts {
			return string(o)
		}
	}
	var parts []string
	for _, o := range []walk.Outcome{walk.MetHeld, walk.ReachedEnd, walk.StoppedByBudget, walk.Interrupted, walk.Failed} {
		if n := counts[o]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s=%d", o, n))
		}
	}
	return strings.Join(parts, " ")
}
