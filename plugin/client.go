package plugin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/cloudquery/plugin-sdk/v4/message"
	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/scheduler"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/spec"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// Client is the plugin's client for one Init: the parsed spec and tables.
type Client struct {
	plugin.UnimplementedDestination
	logger       zerolog.Logger
	spec         *spec.Spec // nil when created without a connection (doc, package)
	mask         *secrets.Mask
	tables       schema.Tables
	options      Options
	invocationID string
}

func newClientFunc(o Options) plugin.NewClientFunc {
	return func(ctx context.Context, logger zerolog.Logger, specBytes []byte, opts plugin.NewClientOptions) (plugin.Client, error) {
		c := &Client{logger: logger, tables: resources.Tables(), options: o, invocationID: opts.InvocationID}
		if opts.NoConnection {
			// `doc`, `package` and `cloudquery tables` ask for tables with no spec.
			return c, nil
		}
		s, err := spec.Parse(specBytes)
		if err != nil {
			return nil, err
		}
		c.spec, c.mask = s, Credentials(s)
		return c, nil
	}
}

func (c *Client) Tables(_ context.Context, opts plugin.TableOptions) (schema.Tables, error) {
	return c.tables.FilterDfs(opts.Tables, opts.SkipTables, opts.SkipDependentTables)
}

// Close releases nothing: every sync closes what it opens.
func (*Client) Close(context.Context) error { return nil }

// Sync syncs the selected tables of every account, in four passes of the
// scheduler (docs/design/plugin.md#sync-passes).
func (c *Client) Sync(ctx context.Context, opts plugin.SyncOptions, res chan<- message.SyncMessage) error {
	if c.spec == nil {
		return errors.New("the plugin was initialised without a spec (no-connection mode); it cannot sync")
	}
	tables, err := c.tables.FilterDfs(opts.Tables, opts.SkipTables, opts.SkipDependentTables)
	if err != nil {
		return err
	}
	if err := checkShard(opts.Shard); err != nil {
		return err
	}
	scope := shardScope(opts.Shard)
	stateClient, closeState, err := c.connectState(ctx, opts.BackendOptions, scope)
	if err != nil {
		return err
	}
	defer closeState()

	syncInfo := account.Sync{ID: cmp.Or(c.invocationID, uuid.NewString()), StartedAt: c.options.Clock.Now().UTC()}
	resend := c.options.resendPolicy(c.spec).On()
	if resend {
		ended, err := account.LoadEnded(ctx, stateClient, scope)
		if err != nil {
			return err
		}
		syncInfo.Ended = ended.Has
	}
	set := prepareAccounts(ctx, c.spec, c.options, c.logger, stateClient, syncInfo, c.mask, opts.Shard)
	data, mediaTable, complianceTable, usage := splitTables(tables)
	var mediaFiles *account.Media
	if mediaTable != nil {
		var closeStore func()
		mediaFiles, closeStore = prepareMedia(ctx, c.spec, c.options, set)
		defer closeStore()
	}
	comp := prepareCompliance(c.spec, c.options, c.logger, stateClient, set, syncInfo, scope, c.mask)
	if o := c.options.Observer; o != nil {
		var checked *compliance.Check
		if complianceTable != nil && c.spec.Compliance != nil {
			checked = comp
		}
		o.SyncStarted(set, checked)
	}

	run := c.newTableSync(opts, res)
	data, off := withoutContentOff(data, c.spec.Kinds())
	run.announce(off)
	if err := c.syncDataTables(ctx, run, stateClient, set, data); err != nil {
		return err
	}
	if err := syncMediaFiles(ctx, run, stateClient, set, mediaFiles, mediaTable, c.logger); err != nil {
		return err
	}
	if err := c.syncCompliance(ctx, run, stateClient, comp, complianceTable, tables); err != nil {
		return err
	}
	if usage != nil {
		if err := run.sync(ctx, &resources.UsageClients{Set: set, Compliance: comp}, schema.Tables{usage}); err != nil {
			return err
		}
	}
	if !resend {
		return nil
	}
	// Last: a sync stopped before this point does not count for the rows
	// it sent again (package outbox).
	return account.SaveEnded(ctx, stateClient, scope, syncInfo.ID)
}

// shardScope names the accounts of a sync, "" for all: each scope keeps its
// own compliance job and ended syncs, as shards sync at once.
func shardScope(sh *plugin.Shard) string {
	if sh == nil {
		return ""
	}
	return fmt.Sprintf("shard-%d-of-%d", sh.Num, sh.Total)
}

// connectState returns the state client of the sync of scope and what
// closes it: the options' one, or the buckets of backend_options' backend.
func (c *Client) connectState(ctx context.Context, backend *plugin.BackendOptions, scope string) (state.Client, func(), error) {
	switch {
	case c.options.State != nil:
		return c.options.State, func() {}, nil
	case backend == nil || backend.Connection == "" && backend.TableName == "":
		c.logger.Warn().Msg("no backend_options: incremental state is not kept, so every sync is a first sync and bills every bookmark again")
		return &state.NoOpClient{}, func() {}, nil
	case backend.Connection == "" || backend.TableName == "":
		return nil, nil, fmt.Errorf("backend_options must contain both connection and table_name: %v", backend)
	}
	conn, err := grpc.NewClient(backend.Connection, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxStateMessage), grpc.MaxCallSendMsgSize(maxStateMessage)))
	if err == nil {
		var st *bucketedState
		if st, err = openBuckets(ctx, conn, backend.TableName, scope); err == nil {
			return st, func() { _ = st.Close() }, nil
		}
		_ = conn.Close()
	}
	return nil, nil, fmt.Errorf("connecting to the state backend: %w", err)
}

// maxStateMessage bounds a message to and from the state backend, as the SDK's does.
const maxStateMessage = 100 << 20

// splitTables sets apart x_media_files, x_post_compliance and x_api_usage, which run later.
func splitTables(tables schema.Tables) (data schema.Tables, mediaFiles, compliance, usage *schema.Table) {
	later := []string{resources.MediaFilesTable, resources.PostComplianceTable, resources.APIUsageTable}
	data = slices.DeleteFunc(slices.Clone(tables), func(t *schema.Table) bool { return slices.Contains(later, t.Name) })
	return data, tables.Get(later[0]), tables.Get(later[1]), tables.Get(later[2])
}

// tableSync runs the scheduler with the sync's options, sending to res.
type tableSync struct {
	sched             *scheduler.Scheduler
	res               chan<- message.SyncMessage
	deterministicCQID bool
}

func (c *Client) newTableSync(opts plugin.SyncOptions, res chan<- message.SyncMessage) tableSync {
	schedOpts := []scheduler.Option{
		scheduler.WithLogger(c.logger),
		scheduler.WithConcurrency(c.spec.Concurrency),
		scheduler.WithInvocationID(c.invocationID),
	}
	if d := c.options.destination(); d != nil && d.RecordRows() > 0 {
		schedOpts = append(schedOpts, scheduler.WithBatchOptions(scheduler.WithBatchMaxRows(d.RecordRows())))
	}
	return tableSync{sched: scheduler.NewScheduler(schedOpts...), res: res, deterministicCQID: opts.DeterministicCQID}
}

// withoutContentOff takes out of the bookmarks table the child tables of
// content kinds that are off, and returns them: they would hold no row, and
// the scheduler resolves every child table once per bookmark.
func withoutContentOff(data schema.Tables, k spec.Kinds) (kept, off schema.Tables) {
	isOff := map[string]bool{
		resources.BookmarkAuthorsTable: !k.Authors,
		resources.BookmarkMediaTable:   !k.Media,
		resources.ReferencedPostsTable: !k.ReferencedPosts,
	}
	for _, t := range data {
		if t.Name == resources.BookmarksTable {
			bookmarks := *t
			bookmarks.Relations = nil
			for _, child := range t.Relations {
				if isOff[child.Name] {
					off = append(off, child)
				} else {
					bookmarks.Relations = append(bookmarks.Relations, child)
				}
			}
			t = &bookmarks
		}
		kept = append(kept, t)
	}
	return kept, off
}

// announce sends the migrate messages of tables the sync selected but does
// not resolve, as the scheduler sends them for the tables it does: the
// destination has them, empty.
func (t tableSync) announce(tables schema.Tables) {
	for _, table := range tables {
		m := &message.SyncMigrateTable{Table: table.Copy(table.Parent)}
		if t.deterministicCQID {
			schema.CqIDAsPK(m.Table)
		}
		t.res <- m
	}
}

func (t tableSync) sync(ctx context.Context, clients schema.ClientMeta, tables schema.Tables) error {
	return t.sched.Sync(ctx, clients, tables, t.res, scheduler.WithSyncDeterministicCQID(t.deterministicCQID))
}

// syncDataTables syncs the data tables of every account, saves what each
// was billed today, flushes the state its clean walks set, and logs a line
// per account that failed, after the scheduler's line per table.
func (c *Client) syncDataTables(ctx context.Context, run tableSync, st state.Client, set *account.Set, data schema.Tables) error {
	if len(data) > 0 {
		if err := run.sync(ctx, set, data); err != nil {
			return err
		}
	}
	for _, s := range set.Sessions {
		s.StoreBilled(ctx) // what the resolvers that bill did not put away
	}
	if err := flushState(ctx, st); err != nil {
		return err
	}
	for _, s := range set.Sessions {
		if problems := AccountFailure(c.spec, s); problems != nil {
			done, failed := s.Report().Tables()
			c.logger.Error().Bool(account.Reported, true).Str("account", s.ID()).Strs("failed_tables", failed).Strs("done_tables", done).Strs("problems", problems).
				Msg("account did not sync completely; its state was not advanced where walks failed")
		}
	}
	return nil
}

// syncCompliance runs x_post_compliance, when it is selected, flushes the
// state it set, and acts on what its jobs reported.
func (c *Client) syncCompliance(ctx context.Context, run tableSync, st state.Client, comp *compliance.Check, table *schema.Table, selected schema.Tables) error {
	if table == nil {
		return nil
	}
	if err := run.sync(ctx, comp, schema.Tables{table}); err != nil {
		return err
	}
	if err := flushState(ctx, st); err != nil {
		return err
	}
	return c.actOnCompliance(ctx, run, st, comp, selected)
}

func flushState(ctx context.Context, st state.Client) error {
	if err := st.Flush(ctx); err != nil {
		return fmt.Errorf("flushing state to the backend: %w", err)
	}
	return nil
}

// checkShard refuses a shard that is none, or past the state's buckets.
func checkShard(sh *plugin.Shard) error {
	if sh != nil && (sh.Total < 1 || sh.Num < 1 || sh.Num > sh.Total || sh.Total > stateBuckets) {
		return fmt.Errorf("shard %d/%d: want N/T with 1 <= N <= T <= %d", sh.Num, sh.Total, stateBuckets)
	}
	return nil
}

// inShard reports whether the account of user userID ("": unknown) may be
// in shard sh, which holds the state buckets N-1, N-1+T, ...
func inShard(userID string, sh *plugin.Shard) bool {
	return sh == nil || userID == "" || userBucket(userID)%int(sh.Total) == int(sh.Num)-1
}

// shardOf is the sessions of shard sh, by the user id of the spec, else of
// the token file; an account with neither fails, in shard i % T + 1.
func shardOf(sessions []*account.Session, accounts []spec.Account, sh *plugin.Shard) []*account.Session {
	var out []*account.Session
	for _, s := range sessions {
		id := cmp.Or(accounts[s.Index].UserID, s.UserID)
		if id == "" && s.Err == nil {
			s.Err, s.API, s.Setup = fmt.Errorf("a sharded sync needs the user id of every account: set %s.user_id, or log in again (cq-source-x login writes it in the token file)", account.Label(s.Index)), nil, nil
		}
		if id != "" && inShard(id, sh) || id == "" && s.Index%int(sh.Total) == int(sh.Num)-1 {
			out = append(out, s)
		}
	}
	return out
}
