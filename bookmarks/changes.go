package bookmarks

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archive"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/walk"
)

// The changes of x_bookmark_changes: what a bookmark command did, as X
// confirmed it.
const (
	ChangeRemoved = "removed"
	ChangeAdded   = "added"
)

// changesRecords are the records of table (x_bookmark_changes) of the
// posts of plan done, as X confirmed them: one, or none for no post.
func changesRecords(table *schema.Table, plan OpPlan, done []JournalEntry) []arrow.RecordBatch {
	if len(done) == 0 {
		return nil
	}
	change := ChangeAdded
	if plan.Kind == OpRemove {
		change = ChangeRemoved
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, table.ToArrowSchema())
	defer b.Release()
	text := func(i int, s string) { b.Field(i).(*array.StringBuilder).Append(s) }
	for _, d := range done {
		text(0, plan.ID)
		text(1, plan.UserID)
		text(2, d.PostID)
		text(3, change)
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(d.At.UnixMicro()))
		b.Field(5).(*array.BooleanBuilder).Append(d.Bookmarked)
		text(6, plan.Command)
		if plan.SourceUserID == "" {
			b.Field(7).AppendNull()
		} else {
			text(7, plan.SourceUserID)
		}
	}
	return []arrow.RecordBatch{b.NewRecordBatch()}
}

// Changes are the archive's x_bookmark_changes, by user and post.
type Changes struct {
	// Latest is each post's latest change (ChangeRemoved or
	// ChangeAdded), by user id and post id.
	Latest map[string]map[string]string
	// rows counts the rows of each operation and user.
	rows map[[2]string]int
}

// ReadChanges reads the archive's x_bookmark_changes.
func ReadChanges(dir string) (*Changes, error) {
	ch := &Changes{Latest: map[string]map[string]string{}, rows: map[[2]string]int{}}
	snap, err := archive.OpenSnapshot(dir)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	at := map[[2]string]time.Time{}
	err = snap.Read(archive.ChangesTable, []string{"operation_id", "user_id", "post_id", "change", "changed_at"}, func(rec arrow.RecordBatch) error {
		op, ok1 := archive.Column[*array.String](rec, "operation_id")
		users, ok2 := archive.Column[*array.String](rec, "user_id")
		posts, ok3 := archive.Column[*array.String](rec, "post_id")
		change, ok4 := archive.Column[*array.String](rec, "change")
		when, ok5 := archive.Column[*array.Timestamp](rec, "changed_at")
		if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
			return errors.New("a column of x_bookmark_changes is missing or of another type")
		}
		for i := range int(rec.NumRows()) {
			uid, pid := users.Value(i), posts.Value(i)
			ch.rows[[2]string{op.Value(i), uid}]++
			k, t := [2]string{uid, pid}, when.Value(i).ToTime(arrow.Microsecond)
			if prev, ok := at[k]; ok && prev.After(t) {
				continue
			}
			at[k] = t
			if ch.Latest[uid] == nil {
				ch.Latest[uid] = map[string]string{}
			}
			ch.Latest[uid][pid] = change.Value(i)
		}
		return nil
	})
	return ch, err
}

// record writes what the journal has and x_bookmark_changes does not, with
// its cost and the walk memory without the posts removed, and removes a
// journal that is over (docs/design/exporter.md, on the journal).
func (r *accountRun) record(ctx context.Context) error {
	// The answers of a commit that fails are in the journal: the next run
	// records them.
	j, m := r.j, r.a.api.Meter().Take(r.a.userID, r.o.Verb().Op)
	usage := &resources.Usage{Usage: m, Account: account.Label(r.a.index)}
	out, err := filepath.Abs(r.o.Out)
	if err != nil {
		return err
	}
	unlock, err := archive.WaitLock(ctx, out)
	if err != nil {
		return err
	}
	defer unlock()
	s, _, err := archive.Recover(out, r.o.Step)
	if err != nil {
		return fmt.Errorf("recovering %s: %w", out, archive.DiskFull(err, true))
	}
	changes, err := ReadChanges(out)
	if err != nil {
		return err
	}
	written := changes.rows[[2]string{j.Plan.ID, j.Plan.UserID}]
	done := j.Done[min(written, len(j.Done)):]
	// An earlier run that stopped before it recorded them left these
	// answers: requests X answered, and billed.
	n := max(j.replayed-written, 0)
	usage.Requests, usage.OK, usage.WritesBilled = usage.Requests+n, usage.OK+n, usage.WritesBilled+n
	usage.WritesUSD = r.o.rates.WritesUSD(usage.WritesBilled)
	usage.USD = usage.WritesUSD
	if usage.Requests == 0 {
		usage = nil
	}
	next := *s
	next.Keys = maps.Clone(s.Keys)
	memoryChanged := false
	if j.Plan.Kind == OpRemove {
		if memoryChanged, err = forget(next.Keys, j.Plan.UserID, j.Done); err != nil {
			return err
		}
	}
	if len(done) > 0 || usage != nil || memoryChanged {
		if err := r.commitRun(out, s, &next, done, usage); err != nil {
			return err
		}
	}
	if len(j.Remaining()) == 0 && j.Sent == "" {
		return j.remove()
	}
	return nil
}

// forget drops the removed posts from the user's bookmarks walk memory in
// keys; it reports whether the memory changed.
func forget(keys map[string]string, userID string, removed []JournalEntry) (bool, error) {
	key := account.BookmarksKey(userID)
	mem, err := walk.UnmarshalMemory(keys[key])
	if err != nil || mem == nil || mem.Held == nil {
		return false, err
	}
	gone := map[string]bool{}
	for _, d := range removed {
		if !d.Bookmarked {
			gone[d.PostID] = true
		}
	}
	kept := walk.NewIDList()
	for i := range mem.Held.Len() {
		if id := mem.Held.At(i); !gone[id] {
			kept.Append(id)
		}
	}
	if kept.Len() == mem.Held.Len() {
		return false, nil
	}
	mem.Held = kept
	value, err := mem.Marshal()
	if err != nil {
		return false, err
	}
	keys[key] = value
	return true, nil
}

// commitRun stages the rows of x_bookmark_changes of the posts done and the
// usage row, commits them with the state next, and publishes them.
func (r *accountRun) commitRun(out string, prev, next *archive.State, done []JournalEntry, usage *resources.Usage) error {
	step := r.o.Step
	run, err := archive.BeginRun(out, prev.LastRun, r.o.Clock.Now())
	if err != nil {
		return err
	}
	var usageRows []*resources.Usage
	if usage != nil {
		usage.SyncID, usage.SyncStartedAt = run.ID, run.Time
		usageRows = append(usageRows, usage)
	}
	changes := archive.ChangesTableDef()
	usageTable, usageRecs := resources.UsageRecords(usageRows)
	abort := func(err error) error {
		run.Abort(out)
		return archive.DiskFull(err, false)
	}
	if err := r.stage(out, run, changes, changesRecords(changes, r.j.Plan, done)); err != nil {
		return abort(err)
	}
	if err := r.stage(out, run, usageTable, usageRecs); err != nil {
		return abort(err)
	}
	if err := run.Stage(out); err != nil {
		return abort(err)
	}
	if err := run.Commit(out, next, step); err != nil {
		return abort(fmt.Errorf("committing the bookmark changes: %w", err))
	}
	if err := archive.Publish(out, next, step); err != nil {
		return fmt.Errorf("publishing the bookmark changes (committed: the next run finishes publishing them): %w", archive.DiskFull(err, true))
	}
	return nil
}

// stage writes the run's file of table, of recs (which it releases), if
// there are any.
func (r *accountRun) stage(out string, run *archive.Run, table *schema.Table, recs []arrow.RecordBatch) error {
	if len(recs) == 0 {
		return nil
	}
	w, err := run.Create(out, table, r.sourceName, "", archive.Program{Name: xplugin.Name, Version: xplugin.Version})
	if err != nil {
		return err
	}
	var rows int64
	for _, rec := range recs {
		if err == nil {
			err = w.Write(rec)
			rows += rec.NumRows()
		}
		rec.Release()
	}
	if err := errors.Join(err, w.Close()); err != nil {
		return fmt.Errorf("writing %s: %w", run.StagedPath(out, table.Name), err)
	}
	run.Files = append(run.Files, run.File(table.Name, rows))
	r.o.Step("staged " + table.Name)
	return nil
}
