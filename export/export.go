// Package export is the standalone exporter: it runs the plugin in-process
// with the spec file a CloudQuery sync uses (same tables, resolvers, walks
// and state logic) and writes each table's records to Parquet files under an
// output directory, which also holds the incremental state.
//
// # Crash safety
//
// A run stages every table's file under DIR/.staging/<run>/ (written and
// fsynced), then commits by atomically replacing DIR/.state/state.json with
// the new walk state, the ids written, and the list of the run's files
// (pending). It then publishes: renames each staged file into DIR/<table>/,
// syncs the directories, and marks the run published in the state file.
// Every start first finishes publishing a committed run and deletes the
// staging directories of runs that never committed (their posts are fetched
// again: billed again, never lost). The state therefore never describes data
// that is not durably on disk, and since the state lists the post ids already
// written per account, no (user_id, post_id) is written twice. A file lock
// on DIR keeps two exports apart. See docs/export.md.
package export

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cloudquery/plugin-sdk/v4/message"
	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/export/pqfile"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/spec"
	"github.com/cq-source-x/cq-source-x/walk"
	"github.com/gofrs/flock"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
)

// Options configure a Run.
type Options struct {
	// Spec is the source spec, from ReadSpecFile or ParseSpec.
	Spec *SourceSpec
	// Out is the output directory; created if missing.
	Out string
	// Clock for the plugin (rate-limit waits, timestamps) and the run's
	// time. Default: the wall clock.
	Clock clock.Clock
	// Transport for API requests. Default: http.DefaultTransport.
	Transport http.RoundTripper
	// Progress receives progress lines and log messages (stderr); nil
	// discards them. With Quiet, it receives only a line for each
	// rate-limit wait of a minute or more.
	Progress io.Writer
	// Terminal makes progress redraw its lines in place (Progress is a
	// terminal). Otherwise a line per account is printed every
	// ProgressInterval and at the end.
	Terminal bool
	// ProgressInterval between progress lines when not on a terminal;
	// 0 means 10s.
	ProgressInterval time.Duration
	// Quiet prints only errors, and the long rate-limit waits (Progress).
	Quiet bool
	// Compression is the Parquet codec, one of pqfile.Codecs; "" means
	// pqfile.DefaultCodec.
	Compression string
	// Step, when set, is called at each step that matters for crash safety
	// (the kill tests stop the process there).
	Step func(name string)
}

// Run exports once: recovery of an earlier run if needed, then a sync of
// every account into new Parquet files, committed and published. The error
// is about the export itself (spec, directory, writing, the sync failing as
// a whole); accounts that failed are in the Result (Result.Failed) and their
// state did not advance where their walks failed.
//
// ctx ending interrupts the run (Ctrl-C): it reads no more from X, and what
// it read is committed as any run's is (Result.Interrupted); see stopRun.
func Run(ctx context.Context, o Options) (*Result, error) {
	if o.Spec == nil || o.Out == "" {
		return nil, errors.New("export: a spec and an output directory are required")
	}
	if _, err := pqfile.ParseCodec(o.Compression); err != nil {
		return nil, fmt.Errorf("export: %w", err)
	}
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	if o.Step == nil {
		o.Step = func(string) {}
	}
	out, err := filepath.Abs(o.Out)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return nil, fmt.Errorf("creating the output directory: %w", err)
	}
	lock := flock.New(filepath.Join(out, lockFile))
	locked, err := lock.TryLock()
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", out, err)
	}
	if !locked {
		return nil, fmt.Errorf("another export is running in %s (it holds %s); wait for it to finish", out, filepath.Join(out, lockFile))
	}
	defer lock.Unlock()

	res := &Result{Out: out, StartedAt: o.Clock.Now().UTC(), plugin: o.Spec.Plugin}
	st, rec, err := recoverDir(out, o.Step)
	if err != nil {
		return nil, fmt.Errorf("recovering %s: %w", out, explain(err, true))
	}
	res.Recovered = rec
	if res.Damaged, err = damagedFiles(out); err != nil {
		return nil, err
	}

	r := &run{o: o, out: out, state: st, res: res, writers: map[string]*tableWriter{}}
	if err := r.sync(ctx); err != nil {
		r.abort()
		return res, explain(err, false)
	}
	if err := r.commitAndPublish(); err != nil {
		return res, err
	}
	res.FinishedAt = o.Clock.Now().UTC()
	return res, nil
}

// run is one export run.
type run struct {
	o       Options
	out     string
	state   *diskState
	res     *Result
	rec     runRecord
	writers map[string]*tableWriter
	order   []string // tables in the order announced
	// written holds, per account, the posts of the x_bookmarks rows
	// written: by earlier runs (HasEarlier), and by this one.
	written *writtenIDs
	sess    *account.Set
	comp    *resources.Compliance // the sync's compliance check, if it ran one
	prog    *progress
	// messages is the channel the sync sends its messages to.
	messages chan message.SyncMessage
	// stateC is the plugin's state backend during the run: it starts from
	// the committed keys, and what the plugin flushes is committed with the
	// run's files. Nothing reaches the disk before the data it describes.
	stateC *memstate.Store
	// stop ends the run's reads from X (stopRun); the sync's own context
	// never ends.
	stop context.Context
}

// tableWriter stages one table's file.
type tableWriter struct {
	table *schema.Table
	w     *pqfile.Writer
	path  string
	// for x_bookmarks and its child tables: the columns of the bookmark's
	// key, by which rows already written are dropped; -1 for the other tables
	userCol, postCol int
	// child is a child table of x_bookmarks (its content: authors, media,
	// referenced posts): its rows are dropped with their bookmark's.
	child bool
}

func newRunID() string {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b[:])
}

// recordRows is the size of the records the exporter asks the scheduler
// for: pqarrow's cost per record written (it resets its level buffers for
// each column of each record) made the SDK's records of 50 rows three times
// as slow to write; records of 4,096 fill a row group in four.
const recordRows = 4096

// fileTimeLayout names files so that name order is time order.
const fileTimeLayout = "20060102T150405.000Z"

// sync runs the plugin's sync, writing its records to the staged files.
// ctx ending stops its reads (stopRun); the sync itself runs on a context
// that does not end.
func (r *run) sync(ctx context.Context) error {
	if ctx.Err() != nil {
		return errors.New("export interrupted before it read anything from X; nothing was committed")
	}
	if err := r.begin(); err != nil {
		return err
	}
	r.prog = newProgress(r.o.Progress, r.o.Terminal, r.o.Quiet, r.o.Clock, r.o.ProgressInterval)
	stop, interrupt, unwatch := r.stopRun(ctx)
	defer unwatch()
	r.stop = stop
	syncCtx := context.WithoutCancel(ctx)
	p, err := r.startPlugin(syncCtx)
	if err != nil {
		return err
	}
	defer p.Close(context.Background())

	r.prog.start()
	defer r.prog.stop()
	if err := r.runSync(syncCtx, interrupt, p); err != nil {
		return err
	}
	r.res.Interrupted = errors.Is(context.Cause(stop), walk.ErrInterrupted)
	if r.sess != nil {
		r.res.sessions = r.sess.Sessions
	}
	r.res.compliance = r.comp
	return nil
}

// begin names the run and creates its staging directory.
func (r *run) begin() error {
	now := r.o.Clock.Now().UTC().Truncate(time.Millisecond)
	if r.state.LastRun != nil && !now.After(r.state.LastRun.Time) {
		now = r.state.LastRun.Time.Add(time.Millisecond) // keep name order = time order
	}
	r.rec = runRecord{ID: newRunID(), Time: now}
	r.res.RunID = r.rec.ID
	r.res.RunTime = now
	if err := mkdirSynced(r.out, stagingDir); err != nil {
		return err
	}
	if err := mkdirSynced(filepath.Join(r.out, stagingDir), r.rec.ID); err != nil {
		return err
	}
	r.written = newWrittenIDs(r.state.Written)
	return nil
}

// startPlugin creates and initializes the plugin, with the run's state
// backend, progress and logger.
func (r *run) startPlugin(ctx context.Context) (*plugin.Plugin, error) {
	st := newRunState(r)
	if r.o.Spec.Plugin != nil && r.o.Spec.Plugin.Compliance != nil {
		st.freeze()
	}
	r.stateC = st.Store
	// The store holds them now; the walks replace them as they save, and
	// the ones they replace are not kept (a few bytes a post held).
	r.state.Keys = nil
	p := xplugin.New(r.pluginOptions(st)...)
	p.SetLogger(r.logger())
	if err := p.Init(ctx, r.o.Spec.PluginSpec, plugin.NewClientOptions{InvocationID: uuid.NewString()}); err != nil {
		return nil, fmt.Errorf("starting the plugin: %w", err)
	}
	return p, nil
}

// logger is the plugin's logger: warnings go to the progress output
// (nothing with Quiet).
func (r *run) logger() zerolog.Logger {
	if r.o.Quiet { // the run's error says what failed
		return zerolog.Nop()
	}
	return zerolog.New(zerolog.ConsoleWriter{Out: r.prog.logWriter(), NoColor: true, TimeFormat: time.TimeOnly}).
		Hook(dropRepeats{}).With().Timestamp().Logger().Level(zerolog.WarnLevel)
}

// pluginOptions connect the plugin to the run: its state backend, the
// progress, the clock and the transport.
func (r *run) pluginOptions(st *runState) []xplugin.Option {
	opts := []xplugin.Option{
		xplugin.WithClock(r.o.Clock),
		xplugin.WithState(st),
		xplugin.WithSessionsHook(func(s *account.Set) {
			r.sess = s
			r.prog.attach(s)
		}),
		xplugin.WithComplianceHook(func(c *resources.Compliance) { r.comp = c }),
		xplugin.WithArchive(r.archived),
		xplugin.WithClientOptions(client.WithWaitHook(r.prog.waitStarted), client.WithStop(r.stop, pageGrace)),
		xplugin.WithRecordRows(recordRows),
		xplugin.WithRowsCommittedWithState(),
	}
	if r.o.Transport != nil {
		opts = append(opts, xplugin.WithTransport(r.o.Transport))
	}
	return opts
}

// runSync runs the plugin's sync on ctx and writes what it sends, until
// the sync closes the channel: the SDK's scheduler sends every row it holds
// before it returns, and blocks until they are taken. A write that fails
// stops the reads (interrupt); the rest is drained, and not written.
func (r *run) runSync(ctx context.Context, interrupt context.CancelCauseFunc, p *plugin.Plugin) error {
	o := r.o
	ch := make(chan message.SyncMessage, 8)
	r.messages = ch
	errc := make(chan error, 1)
	go func() {
		defer close(ch)
		errc <- p.Sync(ctx, plugin.SyncOptions{
			Tables:              o.Spec.Tables,
			SkipTables:          o.Spec.SkipTables,
			SkipDependentTables: o.Spec.SkipDependentTables,
			DeterministicCQID:   o.Spec.DeterministicCQID,
		}, ch)
	}()
	var handleErr error
	for m := range ch {
		if c, ok := m.(caughtUp); ok {
			close(c)
			continue
		}
		if handleErr == nil { // after a failure, drain until the sync stops
			if handleErr = r.handle(m); handleErr != nil {
				interrupt(fmt.Errorf("writing the export failed: %w", handleErr))
			}
		}
	}
	syncErr := <-errc
	switch {
	case handleErr != nil:
		return fmt.Errorf("writing the export: %w", handleErr)
	case syncErr != nil:
		return fmt.Errorf("sync failed: %w", syncErr)
	}
	return nil
}

// archived is the posts of the x_bookmarks rows written for userID, by
// earlier runs and by this one: the archive's own record of its posts,
// which the compliance checks read (the plugin keeps none in the state).
// The checks run once the data tables are synced; the rows those sent are
// written first.
func (r *run) archived(ctx context.Context, userID string) ([]uint64, error) {
	if err := r.catchUp(ctx); err != nil {
		return nil, err
	}
	set := r.written.byUser[userID]
	if set == nil {
		return nil, nil
	}
	return set.sortedNumbers(), nil
}

// catchUp returns once every message the sync sent before the call is
// handled: it sends one of its own through the same channel, which keeps
// order, and waits for the run to reach it.
func (r *run) catchUp(ctx context.Context) error {
	c := make(caughtUp)
	select {
	case r.messages <- c:
	case <-ctx.Done():
		return context.Cause(ctx)
	}
	select {
	case <-c:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// caughtUp is catchUp's message: the run closes it when it reaches it.
type caughtUp chan struct{}

func (caughtUp) GetTable() *schema.Table { return nil }
func (caughtUp) IsSyncMessage() bool     { return true }

// dropRepeats drops the log messages that only repeat a failure (of an
// account, of the compliance check) the summary and the exit status
// already report.
type dropRepeats struct{}

func (dropRepeats) Run(e *zerolog.Event, _ zerolog.Level, msg string) {
	switch msg {
	case "table resolver finished with error", "account did not sync completely; its state was not advanced where walks failed",
		"listing folders failed; emitting the folders of the last successful sync", "compliance check did not finish":
		e.Discard()
	}
}

// withDeclaredKeys is t with the primary key the table declares. With
// deterministic_cq_id the scheduler announces tables with _cq_id as their
// only primary key, for destinations that upsert on it; the files record
// the table's own key (user_id, post_id for x_bookmarks), as
// docs/tables/ documents it, whichever the option (_cq_id is then a hash
// of that key).
func withDeclaredKeys(t *schema.Table) *schema.Table {
	declared := resources.Tables().FlattenTables().Get(t.Name)
	if declared == nil {
		return t
	}
	out := t.Copy(t.Parent)
	for i := range out.Columns {
		if c := declared.Columns.Get(out.Columns[i].Name); c != nil {
			out.Columns[i].PrimaryKey = c.PrimaryKey
		}
	}
	return out
}

// handle writes one message of the sync to the staged files.
func (r *run) handle(m message.SyncMessage) error {
	switch m := m.(type) {
	case *message.SyncMigrateTable:
		return r.openTable(m.Table)
	case *message.SyncInsert:
		name, _ := m.Record.Schema().Metadata().GetValue(schema.MetadataTableName)
		tw := r.writers[name]
		if tw == nil {
			return fmt.Errorf("rows for table %q, which the sync did not announce", name)
		}
		return r.write(tw, m.Record)
	case *message.SyncError:
		r.res.SyncErrors = append(r.res.SyncErrors, fmt.Sprintf("%s: %s", m.TableName, m.Error))
	}
	return nil
}

func (r *run) openTable(t *schema.Table) error {
	if _, ok := r.writers[t.Name]; ok {
		return nil
	}
	t = withDeclaredKeys(t)
	path := r.rec.stagedPath(r.out, fileRecord{Table: t.Name})
	w, err := pqfile.Create(path, t, pqfile.Options{
		SyncTime:   r.rec.Time,
		SourceName: r.o.Spec.Name,
		Metadata: map[string]string{
			pqfile.MetadataPluginName:    xplugin.Name,
			pqfile.MetadataPluginVersion: xplugin.Version,
			"cq:export_run":              r.rec.ID,
		},
		Codec:     r.o.Compression,
		CreatedBy: "cq-source-x " + xplugin.Version,
	})
	if err != nil {
		return err
	}
	tw := &tableWriter{table: t, w: w, path: path, userCol: -1, postCol: -1}
	tw.child = isBookmarkContent(t.Name)
	if t.Name == resources.BookmarksTable || tw.child {
		tw.userCol = t.Columns.Index("user_id")
		tw.postCol = t.Columns.Index("post_id")
		if tw.userCol < 0 || tw.postCol < 0 {
			w.Close()
			return fmt.Errorf("%s has no user_id or post_id column", t.Name)
		}
	}
	r.writers[t.Name] = tw
	r.order = append(r.order, t.Name)
	return nil
}

// isBookmarkContent reports whether a table is a child of x_bookmarks.
func isBookmarkContent(name string) bool {
	t := resources.Tables().FlattenTables().Get(name)
	return t != nil && t.Parent != nil && t.Parent.Name == resources.BookmarksTable
}

// write writes a record of the sync. Of x_bookmarks, the rows already
// written (by an earlier run, or earlier in this one) are dropped; of its
// child tables, the rows of bookmarks an earlier run wrote (a walk that
// failed after it emitted them reads them again). The rest are written as
// runs of consecutive rows.
func (r *run) write(tw *tableWriter, rec arrow.RecordBatch) error {
	if tw.userCol < 0 {
		return r.writeRows(tw, rec)
	}
	users, uok := rec.Column(tw.userCol).(*array.String)
	posts, pok := rec.Column(tw.postCol).(*array.String)
	if !uok || !pok {
		return fmt.Errorf("%s: user_id or post_id is not a string column", tw.table.Name)
	}
	n := int(rec.NumRows())
	start := 0 // of the rows not yet written
	uid := ""
	for i := 0; i <= n; i++ {
		if i < n {
			if u := users.Value(i); u != uid {
				uid = strings.Clone(u) // u shares the record's buffer
			}
			if r.keep(tw, uid, posts.Value(i)) {
				continue
			}
		}
		if i > start {
			part := rec.NewSlice(int64(start), int64(i))
			err := r.writeRows(tw, part)
			part.Release()
			if err != nil {
				return err
			}
		}
		start = i + 1
	}
	return nil
}

// firstWrite records that the post of the account is written, and reports
// whether it was not already.
func (r *run) firstWrite(uid, postID string) bool {
	if !r.written.AddNew(uid, postID) {
		r.res.skipped(uid)
		return false
	}
	r.res.wroteBookmark(uid)
	r.prog.addRows(uid, 1)
	return true
}

// keep reports whether a row of the account's bookmark of postID is
// written: a bookmark the first time, content unless an earlier run wrote
// its bookmark or the table holds the post's rows already (diskState.Stray).
func (r *run) keep(tw *tableWriter, uid, postID string) bool {
	if tw.child {
		return !r.writtenBefore(uid, postID) && !r.state.Stray[tw.table.Name][uid].has(postID)
	}
	return r.firstWrite(uid, postID)
}

// strayLeft is the state's stray content rows (diskState.Stray) but those
// of the posts whose bookmark is written now: the written ids cover them.
func (r *run) strayLeft() map[string]map[string]*idSet {
	var out map[string]map[string]*idSet
	for table, byUser := range r.state.Stray {
		for uid, set := range byUser {
			left := &idSet{}
			for _, id := range set.IDs() {
				if !r.written.byUser[uid].has(id) {
					left.Add(id)
				}
			}
			if left.Len() == 0 {
				continue
			}
			if out == nil {
				out = map[string]map[string]*idSet{}
			}
			if out[table] == nil {
				out[table] = map[string]*idSet{}
			}
			out[table][uid] = left
		}
	}
	return out
}

// writtenBefore reports whether an earlier run wrote the account's
// bookmark of postID. (Content rows may come before or after their
// bookmark's row: records of different tables are not ordered.)
func (r *run) writtenBefore(uid, postID string) bool {
	set := r.written.byUser[uid]
	return set != nil && set.HasEarlier(postID)
}

func (r *run) writeRows(tw *tableWriter, rec arrow.RecordBatch) error {
	if err := tw.w.Write(rec); err != nil {
		return fmt.Errorf("%s: %w", tw.path, err)
	}
	r.o.Step("write " + tw.table.Name)
	return nil
}

// abort removes the run's staging directory: nothing was committed.
func (r *run) abort() {
	for _, tw := range r.writers {
		tw.w.Close()
	}
	if r.rec.ID != "" {
		os.RemoveAll(filepath.Join(r.out, stagingDir, r.rec.ID))
	}
}

// commitAndPublish ends a run whose sync succeeded: stage, commit, publish,
// in that order (see the package documentation).
func (r *run) commitAndPublish() error {
	next := &diskState{
		Format:  stateFormat,
		Keys:    r.stateC.Committed(),
		Written: r.written.byUser,
		Stray:   r.strayLeft(),
		LastRun: r.state.LastRun,
	}
	files, err := r.stage()
	if err != nil {
		r.abort()
		return err
	}
	r.rec.Files = files
	if err := r.commit(next); err != nil {
		r.abort()
		return err
	}
	return r.publishCommitted(next, files)
}

// stage closes (footer, fsync) every file and syncs the staging directory:
// step 1. A table gets a file of no rows only when it has no file yet: it
// tells readers globbing DIR/<table>/*.parquet the table's columns. The
// archive's own table of bookmark changes, which no sync writes, gets its
// own beside x_bookmarks. On an error the caller aborts the run.
func (r *run) stage() ([]fileRecord, error) {
	for _, t := range resources.ArchiveTables() {
		if r.writers[resources.BookmarksTable] != nil && !hasFiles(r.out, t.Name) {
			if err := r.openTable(t); err != nil {
				return nil, err
			}
		}
	}
	var files []fileRecord
	for _, name := range r.order {
		f, keep, err := r.closeStaged(name)
		if err != nil {
			return nil, err
		}
		if keep {
			files = append(files, f)
			r.o.Step("staged " + name)
		}
	}
	if err := syncDir(filepath.Join(r.out, stagingDir, r.rec.ID)); err != nil {
		return nil, explain(err, false)
	}
	r.o.Step("staging synced")
	return files, nil
}

// closeStaged closes a table's staged file, and removes it when it has no
// rows and the table has a file already (keep is then false).
func (r *run) closeStaged(name string) (f fileRecord, keep bool, err error) {
	tw := r.writers[name]
	if err := tw.w.Close(); err != nil {
		return f, false, explain(fmt.Errorf("writing %s: %w", tw.path, err), false)
	}
	if tw.w.Rows() == 0 && hasFiles(r.out, name) {
		return f, false, os.Remove(tw.path)
	}
	f = fileRecord{Table: name, Name: r.rec.Time.Format(fileTimeLayout) + "-" + r.rec.ID + ".parquet", Rows: tw.w.Rows()}
	return f, true, nil
}

// commit replaces the state with next, the run pending in it, atomically:
// step 2. On an error the caller aborts the run.
func (r *run) commit(next *diskState) error {
	next.Pending = &r.rec
	if err := saveState(r.out, next, r.o.Step, "commit"); err != nil {
		return explain(fmt.Errorf("committing the run: %w", err), false)
	}
	r.o.Step("committed")
	return nil
}

// publishCommitted moves the committed run's files into place (step 3)
// and adds them to the result. The run is committed: nothing is aborted.
func (r *run) publishCommitted(next *diskState, files []fileRecord) error {
	if err := publish(r.out, next, r.o.Step); err != nil {
		if err := explain(err, true); errors.As(err, new(*DiskFullError)) {
			return err
		}
		return fmt.Errorf("publishing the run (committed: the next run finishes publishing it): %w", err)
	}
	for _, f := range files {
		r.res.Files = append(r.res.Files, FileResult{Table: f.Table, Path: finalPath(r.out, f), Rows: f.Rows})
	}
	return nil
}

// publish moves the pending run's staged files into place, syncs, marks the
// run published and removes its staging directory. It is idempotent: a
// crash anywhere in it is finished by the next call.
func publish(out string, s *diskState, step func(string)) error {
	run := s.Pending
	dirs := map[string]bool{}
	for _, f := range run.Files {
		staged, final := run.stagedPath(out, f), finalPath(out, f)
		if err := mkdirSynced(out, f.Table); err != nil {
			return err
		}
		dirs[filepath.Dir(final)] = true
		_, serr := os.Stat(staged)
		_, ferr := os.Stat(final)
		switch {
		case serr == nil:
			if ferr == nil {
				// Cannot happen (rename is atomic); the published file wins.
				if err := os.Remove(staged); err != nil {
					return err
				}
				continue
			}
			if err := os.Rename(staged, final); err != nil {
				return err
			}
			step("published " + f.Table)
		case ferr == nil:
			// Published before a crash.
		default:
			return fmt.Errorf("run %s is committed, but its file %s is neither staged (%s) nor published: was the directory changed by hand? "+
				"Run `%s`: it publishes the rest of the run, and the next export fetches again the posts the missing file held",
				run.ID, final, staged, RepairCommand(out))
		}
	}
	names := make([]string, 0, len(dirs))
	for d := range dirs {
		names = append(names, d)
	}
	sort.Strings(names)
	for _, d := range names {
		if err := syncDir(d); err != nil {
			return err
		}
	}
	if err := syncDir(filepath.Join(out, stagingDir, run.ID)); err != nil && !os.IsNotExist(err) {
		return err
	}
	step("published files synced")
	s.LastRun, s.Pending = run, nil
	if err := saveState(out, s, step, "mark published"); err != nil {
		return err
	}
	step("marked published")
	if err := os.RemoveAll(filepath.Join(out, stagingDir, run.ID)); err != nil {
		return err
	}
	step("staging removed")
	return nil
}

// Recovery says what the start of a run repaired.
type Recovery struct {
	// PublishedRun is the id of a committed run whose publishing a crash
	// had interrupted, and which was finished.
	PublishedRun string `json:"published_run,omitempty"`
	// DiscardedRuns are runs that never committed: their staged files were
	// deleted (their posts are fetched again).
	DiscardedRuns []string `json:"discarded_runs,omitempty"`
}

// recoverDir brings DIR back to a clean state: finishes publishing a
// committed run and deletes everything staged by runs that did not commit.
func recoverDir(out string, step func(string)) (*diskState, *Recovery, error) {
	s, err := loadState(out)
	if err != nil {
		return nil, nil, err
	}
	rec := &Recovery{}
	os.Remove(filepath.Join(out, stateDir, stateFile+".tmp"))
	if err := cleanGenerations(out, step); err != nil {
		return nil, nil, fmt.Errorf("removing what an unfinished compaction left: %w", err)
	}
	if s.Pending != nil {
		rec.PublishedRun = s.Pending.ID
		if err := publish(out, s, step); err != nil {
			return nil, nil, err
		}
	}
	entries, err := os.ReadDir(filepath.Join(out, stagingDir))
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, err
	}
	for _, e := range entries {
		if s.LastRun == nil || e.Name() != s.LastRun.ID {
			rec.DiscardedRuns = append(rec.DiscardedRuns, e.Name())
		} // else: a published run whose staging directory was not removed yet
		if err := os.RemoveAll(filepath.Join(out, stagingDir, e.Name())); err != nil {
			return nil, nil, err
		}
	}
	if len(entries) > 0 {
		if err := syncDir(filepath.Join(out, stagingDir)); err != nil {
			return nil, nil, err
		}
		step("discarded uncommitted runs")
	}
	if rec.PublishedRun == "" && len(rec.DiscardedRuns) == 0 {
		rec = nil
	}
	return s, rec, nil
}

// Result is what a run did.
type Result struct {
	Out        string
	RunID      string
	RunTime    time.Time
	StartedAt  time.Time
	FinishedAt time.Time
	Files      []FileResult
	Recovered  *Recovery
	// SyncErrors are the errors the SDK's scheduler reported (a resolver
	// that failed); the accounts' reports say the same per account.
	SyncErrors []string
	// Interrupted: the run was interrupted (its context ended) and
	// committed what it had read.
	Interrupted bool
	// Damaged are the files of earlier runs whose footer the run found
	// damaged (the run goes on: the state knows what they held).
	Damaged []DamagedFile

	plugin     *spec.Spec // the plugin's spec, for the summary's messages
	mu         sync.Mutex
	rows       map[string]int // x_bookmarks rows written, by user id
	skip       map[string]int // x_bookmarks rows dropped as already written
	sessions   []*account.Session
	compliance *resources.Compliance // nil when the run checked nothing
}

// FileResult is one file the run published.
type FileResult struct {
	Table string `json:"table"`
	Path  string `json:"path"`
	Rows  int64  `json:"rows"`
}

func (r *Result) wroteBookmark(uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.rows == nil {
		r.rows = map[string]int{}
	}
	r.rows[uid]++
}

func (r *Result) skipped(uid string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.skip == nil {
		r.skip = map[string]int{}
	}
	r.skip[uid]++
}

// Failed lists the accounts that failed, each as an error naming it.
func (r *Result) Failed() []error {
	var out []error
	for _, s := range r.sessions {
		if err := sessionErr(s); err != nil {
			out = append(out, fmt.Errorf("%s: %w", accountName(s), err))
		}
	}
	return out
}

func sessionErr(s *account.Session) error {
	if s.Err != nil {
		return s.Err
	}
	return s.Report().Err()
}

func accountName(s *account.Session) string {
	name := fmt.Sprintf("accounts[%d]", s.Index)
	if s.UserID != "" {
		name += " (user " + s.UserID + ")"
	}
	return name
}
