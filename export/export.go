// Package export runs an export: the plugin in-process, with the spec file a
// CloudQuery sync uses, as the destination of its sync (docs/architecture.md).
package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cloudquery/plugin-sdk/v4/message"
	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/ids"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/media/store"
	"github.com/cq-source-x/cq-source-x/plan"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/spec"
	"github.com/cq-source-x/cq-source-x/walk"
	"github.com/google/uuid"
	"github.com/rs/zerolog"
)

type Options struct {
	Spec      *cqspec.Source
	Out       string            // created if missing
	Clock     clock.Clock       // default the wall clock
	Transport http.RoundTripper // default http.DefaultTransport
	// Progress receives progress lines and log messages (stderr); nil
	// discards them. Terminal redraws the lines in place; otherwise a line
	// per account is printed every ProgressInterval (0: 10s) and at the end.
	Progress         io.Writer
	Terminal         bool
	ProgressInterval time.Duration
	Quiet            bool   // prints only errors, and the rate-limit waits of a minute or more
	Compression      string // one of pqfile.Codecs; "" is pqfile.DefaultCodec
	// Step, when set, is called at each step that matters for crash safety
	// (the kill tests stop the process there).
	Step func(name string)
}

// Run exports once: recovery of an earlier run if needed, then a sync of
// every account into new Parquet files, committed and published. The error
// is about the export itself; accounts that failed are in the Result
// (Summary.Failed), their state not advanced where their walks failed. ctx
// ending interrupts the run (Ctrl-C): what it read is committed (stopRun).
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
	unlock, err := archive.Lock(out, func(lock string) error {
		return fmt.Errorf("another export is running in %s (it holds %s); wait for it to finish", out, lock)
	})
	if err != nil {
		return nil, err
	}
	defer unlock()

	res := &Result{run: Summary{Out: out, StartedAt: o.Clock.Now().UTC(), Files: []FileResult{}},
		plugin: o.Spec.Plugin, rows: map[string]int{}, skip: map[string]int{}}
	st, rec, err := archive.Recover(out, o.Step)
	if err != nil {
		return nil, fmt.Errorf("recovering %s: %w", out, archive.DiskFull(err, true))
	}
	res.run.Recovered = rec
	if res.run.Damaged, err = archive.DamagedFiles(out); err != nil {
		return nil, err
	}

	r := &run{o: o, out: out, state: st, res: res, writers: map[string]*tableWriter{}}
	if err := r.sync(ctx); err != nil {
		r.abort()
		return res, archive.DiskFull(err, false)
	}
	if err := r.commitAndPublish(); err != nil {
		return res, err
	}
	res.run.FinishedAt = o.Clock.Now().UTC()
	return res, nil
}

type run struct {
	o       Options
	out     string
	state   *archive.State // as the run found it committed
	res     *Result
	rec     *archive.Run
	writers map[string]*tableWriter
	order   []string // tables in the order announced
	// archived holds, per account, the posts of the x_bookmarks rows
	// written, by earlier runs (HasEarlier) and by this one.
	archived map[string]*ids.Set
	prog     *progress
	keys     *runState       // committed with the run's files
	stop     context.Context // ends the run's reads from X (stopRun)
	media    *store.Store    // DIR/media; nil when the spec stores no media
	edits    []plan.Edit     // what the sync's compliance check reported (Edit)
}

type tableWriter struct {
	table *schema.Table
	w     *pqfile.Writer
	path  string
	// for x_bookmarks and its content tables: the columns of the bookmark's
	// key, by which rows already written are dropped; -1 for the others
	userCol, postCol int
	child            bool // a content table: its rows go with their bookmark's
}

// sync runs the plugin's sync, writing its records to the staged files.
// ctx ending stops its reads (stopRun); the sync itself runs on a context
// that does not end.
func (r *run) sync(ctx context.Context) error {
	if ctx.Err() != nil {
		return errors.New("export interrupted before it read anything from X; nothing was committed")
	}
	var err error
	if r.rec, err = archive.BeginRun(r.out, r.state.LastRun, r.o.Clock.Now()); err != nil {
		return err
	}
	r.res.run.RunID, r.res.run.RunTime = r.rec.ID, r.rec.Time
	r.prog = newProgress(r.o)
	interrupt, unwatch := r.stopRun(ctx)
	defer unwatch()
	syncCtx := context.WithoutCancel(ctx)
	// DIR/media, when the spec stores media files, whatever media_files.store
	// says (a CloudQuery sync's). A file stored and not committed is found
	// by its URL, or its content, by the next run.
	if r.o.Spec.Plugin.MediaFiles != nil {
		if r.media, err = store.OpenDir(archive.MediaPath(r.out)); err != nil {
			return err
		}
		defer r.media.Close()
		r.media.OnStep(func(name string) { r.o.Step("media " + name) })
	}
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
	r.res.run.Interrupted = errors.Is(context.Cause(r.stop), walk.ErrInterrupted)
	return nil
}

func (r *run) startPlugin(ctx context.Context) (*plugin.Plugin, error) {
	st := &runState{Store: memstate.NewWith(r.state.Keys), r: r}
	if err := r.loadRecords(ctx, st); err != nil {
		return nil, err
	}
	r.keys = st
	// The store holds them now; the walks replace them as they save, and
	// the ones they replace are not kept (a few bytes a post held).
	r.state.Keys = nil
	opts := []xplugin.Option{
		xplugin.WithClock(r.o.Clock),
		xplugin.WithState(st),
		xplugin.WithObserver(r),
		xplugin.WithClientOptions(client.WithWaitHook(r.prog.waitStarted), client.WithStop(r.stop, pageGrace)),
	}
	if r.o.Transport != nil {
		opts = append(opts, xplugin.WithTransport(r.o.Transport))
	}
	if r.media != nil {
		opts = append(opts, xplugin.WithMediaStore(r.media, r.stop))
	}
	p := xplugin.New(opts...)
	p.SetLogger(r.logger())
	if err := p.Init(ctx, r.o.Spec.PluginSpec, plugin.NewClientOptions{InvocationID: uuid.NewString()}); err != nil {
		return nil, fmt.Errorf("starting the plugin: %w", err)
	}
	return p, nil
}

// loadRecords reads the posts each account's record says earlier runs
// wrote, whose rows the run drops, once the records of a state of format 1
// are made from its written ids. With the compliance section, a record
// that holds no authors gets them from the files (seedAuthors).
func (r *run) loadRecords(ctx context.Context, st *runState) error {
	for uid, set := range r.state.Written {
		if err := account.MigrateRecord(ctx, st, uid, set.Numbers()); err != nil {
			return err
		}
	}
	if r.o.Spec.Plugin.Compliance != nil {
		st.freeze()
		if err := r.seedAuthors(ctx, st); err != nil {
			return err
		}
	}
	if err := st.Store.Flush(ctx); err != nil {
		return err
	}
	posts, err := (&archive.State{Keys: st.Committed()}).ArchivedPosts()
	if err != nil {
		return err
	}
	r.archived = make(map[string]*ids.Set, len(posts))
	for uid, nums := range posts {
		r.archived[uid] = ids.SetOf(nums)
	}
	return nil
}

// seedAuthors gives the records that hold no authors (an archive made
// before the walks recorded them) those the files say, and the referenced
// posts.
func (r *run) seedAuthors(ctx context.Context, st *runState) error {
	var due []*account.Session
	for key := range st.Committed() {
		if k, ok := account.ParseKey(key); ok && k.Kind == account.ArchivedRecord {
			s := &account.Session{UserID: k.User, State: st, RowsKept: true}
			if rec, err := s.Record(ctx); err != nil {
				return err
			} else if !rec.AuthorsKept() {
				due = append(due, s)
			}
		}
	}
	if len(due) == 0 {
		return nil
	}
	bookmarks, err := archive.ReadAuthored(r.out, resources.BookmarksTable, "post_id")
	if err != nil {
		return fmt.Errorf("reading the authors of the archive's posts for the compliance checks: %w", err)
	}
	referenced, err := archive.ReadAuthored(r.out, resources.ReferencedPostsTable, "referenced_post_id")
	if err != nil {
		return fmt.Errorf("reading the posts the archive's bookmarks reference for the compliance checks: %w", err)
	}
	for _, s := range due {
		err := s.EditRecord(ctx, func(rec *archived.Record) error {
			rec.AddBookmarks(bookmarks[s.UserID], false)
			rec.AddReferenced(referenced[s.UserID])
			return nil
		})
		if err := errors.Join(err, s.SaveRecord(ctx)); err != nil {
			return err
		}
	}
	return nil
}

// logger sends the plugin's warnings to the progress output.
func (r *run) logger() zerolog.Logger {
	if r.o.Quiet { // the run's error says what failed
		return zerolog.Nop()
	}
	console := zerolog.ConsoleWriter{Out: r.prog, NoColor: true, TimeFormat: time.TimeOnly}
	return zerolog.New(dropReported{console}).With().Timestamp().Logger().Level(zerolog.WarnLevel)
}

// runSync runs the plugin's sync on ctx and writes what it sends, until
// the sync closes the channel (docs/design/exporter.md#the-syncs-rows-exportexportgo).
func (r *run) runSync(ctx context.Context, interrupt context.CancelCauseFunc, p *plugin.Plugin) error {
	o := r.o
	ch := make(chan message.SyncMessage, 8)
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

var _ xplugin.Destination = (*run)(nil)

func (r *run) SyncStarted(s *account.Set, c *compliance.Check) {
	r.res.sessions, r.res.compliance = s.Sessions, c
	r.prog.attach(s)
}

// RecordRows is the size of the records the exporter asks the scheduler
// for (docs/design/exporter.md#the-syncs-rows-exportexportgo).
func (*run) RecordRows() int { return 4096 }

// dropReported leaves out the log lines that only repeat a failure the
// summary reports: the plugin's, which say so (account.Reported), and the
// scheduler's of a table resolver that failed, which name the table and
// the client, and no column.
type dropReported struct{ w io.Writer }

func (d dropReported) Write(p []byte) (int, error) {
	var e map[string]any
	if json.Unmarshal(p, &e) == nil && (e[account.Reported] == true ||
		e[zerolog.LevelFieldName] == zerolog.LevelErrorValue && e["table"] != nil && e["client"] != nil && e["column"] == nil) {
		return len(p), nil
	}
	return d.w.Write(p)
}

// withDeclaredKeys is t with the primary key the table declares, as
// docs/tables/ documents it: with deterministic_cq_id the scheduler
// announces _cq_id as the only primary key, for destinations that upsert.
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
		// A resolver that failed: the accounts' reports say so, per account.
	}
	return nil
}

func (r *run) openTable(t *schema.Table) error {
	if _, ok := r.writers[t.Name]; ok {
		return nil
	}
	t = withDeclaredKeys(t)
	w, err := r.rec.Create(r.out, t, r.o.Spec.Name, r.o.Compression, Program)
	if err != nil {
		return err
	}
	tw := &tableWriter{table: t, w: w, path: r.rec.StagedPath(r.out, t.Name), userCol: -1, postCol: -1}
	tw.child = resources.IsBookmarkContent(t.Name)
	if t.Name == resources.BookmarksTable || tw.child { // their key, as resources declares it
		tw.userCol, tw.postCol = t.Columns.Index("user_id"), t.Columns.Index("post_id")
	}
	r.writers[t.Name] = tw
	r.order = append(r.order, t.Name)
	return nil
}

// write writes a record of the sync but the rows already written, as runs
// of consecutive rows (docs/design/exporter.md#rows-written-once-exportexportgo).
func (r *run) write(tw *tableWriter, rec arrow.RecordBatch) error {
	if tw.userCol < 0 {
		return r.writeRows(tw, rec)
	}
	users, posts := rec.Column(tw.userCol).(*array.String), rec.Column(tw.postCol).(*array.String)
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

// keep reports whether a row of the account's bookmark of postID is
// written: a bookmark the first time, content unless an earlier run wrote
// its bookmark or the table holds the post's rows already (State.Stray).
func (r *run) keep(tw *tableWriter, uid, postID string) bool {
	if tw.child {
		return !r.archived[uid].HasEarlier(postID) && !r.state.Stray[tw.table.Name][uid].Has(postID)
	}
	if r.archived[uid] == nil {
		r.archived[uid] = &ids.Set{}
	}
	if !r.archived[uid].Add(postID) {
		r.res.skip[uid]++
		return false
	}
	r.res.rows[uid]++
	r.prog.addRows(uid, 1)
	return true
}

// strayLeft is State.Stray but the posts whose bookmark is written now.
func (r *run) strayLeft() map[string]map[string]*ids.Set {
	out := map[string]map[string]*ids.Set{}
	for table, byUser := range r.state.Stray {
		left := map[string]*ids.Set{}
		for uid, set := range byUser {
			for _, id := range set.IDs() {
				if !r.archived[uid].Has(id) {
					if left[uid] == nil {
						left[uid] = &ids.Set{}
					}
					left[uid].Add(id)
				}
			}
		}
		if len(left) > 0 {
			out[table] = left
		}
	}
	return out
}

func (r *run) writeRows(tw *tableWriter, rec arrow.RecordBatch) error {
	if err := tw.w.Write(rec); err != nil {
		return fmt.Errorf("%s: %w", tw.path, err)
	}
	r.o.Step("write " + tw.table.Name)
	return nil
}

func (r *run) abort() {
	for _, tw := range r.writers {
		tw.w.Close()
	}
	if r.rec != nil {
		r.rec.Abort(r.out)
	}
}

func (r *run) commitAndPublish() error {
	next := &archive.State{
		Keys:    r.keys.Committed(),
		Stray:   r.strayLeft(),
		LastRun: r.state.LastRun,
	}
	files, err := r.stage()
	if err != nil {
		r.abort()
		return err
	}
	r.rec.Files = files
	r.rec.Edits, r.rec.Program, r.rec.Codec = r.edits, Program, r.o.Compression
	if err := r.rec.Commit(r.out, next, r.o.Step); err != nil {
		r.abort()
		return archive.DiskFull(fmt.Errorf("committing the run: %w", err), false)
	}
	// Committed: nothing is aborted now.
	if err := archive.Publish(r.out, next, r.o.Step); err != nil {
		if err := archive.DiskFull(err, true); errors.As(err, new(*archive.DiskFullError)) {
			return err
		}
		return fmt.Errorf("publishing the run (committed: the next run finishes publishing it): %w", err)
	}
	for _, f := range files {
		r.res.run.Files = append(r.res.run.Files, FileResult{Table: f.Table, Path: archive.FinalPath(r.out, f), Rows: f.Rows})
	}
	r.res.ComplianceRows = next.LastRun.EditedRows
	return nil
}

// Edit takes the edits of what X's compliance job reported: the run commits
// them with its files and applies them once those are published, so a post
// reported in the run that archived it is edited too.
func (r *run) Edit(edits []plan.Edit) { r.edits = append(r.edits, edits...) }

// stage closes every file and syncs the staging directory. A table gets a
// file of no rows only when it has none yet, which tells readers its
// columns (the others' are removed); the archive's own tables get theirs
// beside x_bookmarks.
func (r *run) stage() ([]archive.File, error) {
	for _, t := range archive.Tables() {
		if r.writers[resources.BookmarksTable] != nil && !archive.HasFiles(r.out, t.Name) {
			if err := r.openTable(t); err != nil {
				return nil, err
			}
		}
	}
	var files []archive.File
	for _, name := range r.order {
		tw := r.writers[name]
		if err := tw.w.Close(); err != nil {
			return nil, archive.DiskFull(fmt.Errorf("writing %s: %w", tw.path, err), false)
		}
		if tw.w.Rows() == 0 && archive.HasFiles(r.out, name) {
			if err := os.Remove(tw.path); err != nil {
				return nil, err
			}
			continue
		}
		files = append(files, r.rec.File(name, tw.w.Rows()))
		r.o.Step("staged " + name)
	}
	if err := r.rec.Stage(r.out); err != nil {
		return nil, err
	}
	r.o.Step("staging synced")
	return files, nil
}

var Program = archive.Program{Name: xplugin.Name, Version: xplugin.Version}

// TableNames are the tables an archive can hold, in name order: the
// plugin's, and the archive's own (x_bookmark_changes).
func TableNames() []string {
	return slices.Sorted(slices.Values(append(resources.Tables().FlattenTables(), archive.Tables()...).TableNames()))
}

func BookmarkTables() archive.BookmarkTables {
	return archive.BookmarkTables{Bookmarks: resources.BookmarksTable, Content: resources.Bookmarks().Relations.TableNames()}
}

// Result is a run's outcome, told by its Summary.
type Result struct {
	run Summary // what the run did, to which Summary adds the accounts'
	// ComplianceRows is how many rows of posts X's compliance job reported
	// the run redacted or removed (compliance.on_change).
	ComplianceRows int64

	plugin     *spec.Spec     // the plugin's spec, for the summary's messages
	rows       map[string]int // x_bookmarks rows written, by user id
	skip       map[string]int // x_bookmarks rows dropped as already written
	sessions   []*account.Session
	compliance *compliance.Check // nil when the run checked nothing
}

type FileResult struct {
	Table string `json:"table"`
	Path  string `json:"path"`
	Rows  int64  `json:"rows"`
}
