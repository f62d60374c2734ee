package archive

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
	"github.com/cq-source-x/cq-source-x/walk"
	"github.com/gofrs/flock"
)

// ChangesTable is the name of the table of bookmarks removed and added by
// `cq-source-x bookmarks remove` and `bookmarks add`.
const ChangesTable = "x_bookmark_changes"

// Changes of x_bookmark_changes.
const (
	ChangeRemoved = "removed"
	ChangeAdded   = "added"
)

// Change is one row of x_bookmark_changes: a bookmark that `cq-source-x
// bookmarks remove` or `bookmarks add` removed or added, as X confirmed it.
type Change struct {
	UserID, PostID string
	// Change is ChangeRemoved or ChangeAdded.
	Change string
	// ChangedAt is when X answered the request.
	ChangedAt time.Time
	// Bookmarked is X's answer (data.bookmarked): false after a removal,
	// true after an addition.
	Bookmarked bool
	// Operation is the id of the command's run; Command its command line.
	Operation, Command string
	// SourceUserID is, for an addition from an archive, the account whose
	// archive the post came from.
	SourceUserID string
}

// Tables are the tables of an archive that no sync writes: the records of
// the archive's own commands. They are documented with the plugin's
// (docs/tables).
func Tables() schema.Tables { return schema.Tables{ChangesTableDef()} }

// ChangesTableDef is the x_bookmark_changes table.
func ChangesTableDef() *schema.Table {
	key := func(c schema.Column) schema.Column { c.PrimaryKey, c.NotNull = true, true; return c }
	text := func(name, description string) schema.Column {
		return schema.Column{Name: name, Type: arrow.BinaryTypes.String, Description: description}
	}
	return &schema.Table{
		Name:  ChangesTable,
		Title: "X Bookmark Changes",
		Description: "Bookmarks removed or added with `cq-source-x bookmarks remove` and `bookmarks add`, one row per post and run, written when X confirmed the change. " +
			"Only in the exporter's archive: a sync does not write it, and changes made in X's app are not in it. " +
			"The bookmarks held now are the `x_bookmarks` rows whose latest change here is not `removed` (docs/export.md).",
		Columns: schema.ColumnList{
			key(text("operation_id", "Id of the run of the command that made the change.")),
			key(text("user_id", "X user id of the account whose bookmark changed.")),
			key(text("post_id", "Post id.")),
			text("change", "`removed` or `added`."),
			{Name: "changed_at", Type: arrow.FixedWidthTypes.Timestamp_us, Description: "When X confirmed the change."},
			{Name: "bookmarked", Type: arrow.FixedWidthTypes.Boolean, Description: "X's answer: whether the post is bookmarked after the request (false after a removal, true after an addition)."},
			text("command", "The command that made the change, with its selection."),
			text("source_user_id", "For an addition from an archive, the account whose archive the post came from."),
		},
	}
}

// changesRecord is the record of table (x_bookmark_changes) that holds
// changes.
func changesRecord(table *schema.Table, changes []*Change) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, table.ToArrowSchema())
	defer b.Release()
	text := func(i int, s string) { b.Field(i).(*array.StringBuilder).Append(s) }
	for _, c := range changes {
		text(0, c.Operation)
		text(1, c.UserID)
		text(2, c.PostID)
		text(3, c.Change)
		b.Field(4).(*array.TimestampBuilder).Append(arrow.Timestamp(c.ChangedAt.UnixMicro()))
		b.Field(5).(*array.BooleanBuilder).Append(c.Bookmarked)
		text(6, c.Command)
		if c.SourceUserID == "" {
			b.Field(7).AppendNull()
		} else {
			text(7, c.SourceUserID)
		}
	}
	return b.NewRecordBatch()
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
	snap, err := OpenSnapshot(dir)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	at := map[[2]string]time.Time{}
	err = snap.Read(ChangesTable, []string{"operation_id", "user_id", "post_id", "change", "changed_at"}, func(rec arrow.RecordBatch) error {
		op, ok1 := Column[*array.String](rec, "operation_id")
		users, ok2 := Column[*array.String](rec, "user_id")
		posts, ok3 := Column[*array.String](rec, "post_id")
		change, ok4 := Column[*array.String](rec, "change")
		when, ok5 := Column[*array.Timestamp](rec, "changed_at")
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
	if err != nil {
		return nil, err
	}
	return ch, nil
}

// CommitOptions configure CommitChanges.
type CommitOptions struct {
	// SourceName is the spec's name, for _cq_source_name.
	SourceName string
	// Now is the time of the run (default time.Now).
	Now func() time.Time
	// Step, when set, is called at each step that matters for crash safety.
	Step func(string)
}

// CommitChanges writes what the journals' operations did and the archive
// does not hold yet into x_bookmark_changes, and drops the posts removed
// from their account's bookmarks walk memory (the walk would otherwise
// read past them as posts removed since it last ran: see docs/walk.md),
// as one run of the export's protocol: stage, commit, publish. It takes
// the directory's lock, waiting for an export that holds it. Journals
// whose operations are over and written are removed. It returns the rows
// written.
func CommitChanges(ctx context.Context, dir string, journals []*Journal, o CommitOptions) (int, error) {
	if o.Step == nil {
		o.Step = func(string) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	step := o.Step
	out, err := filepath.Abs(dir)
	if err != nil {
		return 0, err
	}
	lock := flock.New(filepath.Join(out, lockFile))
	if _, err := lock.TryLockContext(ctx, 200*time.Millisecond); err != nil { // an export ends in its time
		return 0, fmt.Errorf("waiting for the lock of %s: %w", out, err)
	}
	defer lock.Unlock()
	s, _, err := Recover(out, step)
	if err != nil {
		return 0, fmt.Errorf("recovering %s: %w", out, DiskFull(err, true))
	}
	changes, err := ReadChanges(out)
	if err != nil {
		return 0, err
	}
	var rows []*Change
	next := &State{Keys: maps.Clone(s.Keys), Archived: s.Archived, Stray: s.Stray, LastRun: s.LastRun}
	memoryChanged := false
	for _, j := range journals {
		written := changes.rows[[2]string{j.Plan.ID, j.Plan.UserID}]
		for _, d := range j.Done[min(written, len(j.Done)):] {
			rows = append(rows, j.change(d))
		}
		if j.Plan.Kind == OpRemove {
			changed, err := forget(next.Keys, j.Plan.UserID, j.Done)
			if err != nil {
				return 0, err
			}
			memoryChanged = memoryChanged || changed
		}
	}
	if len(rows) > 0 || memoryChanged {
		if err := commitChangeRun(out, s, next, rows, o); err != nil {
			return 0, err
		}
	}
	for _, j := range journals {
		if len(j.Remaining()) == 0 && j.Sent == "" {
			if err := j.remove(); err != nil {
				return len(rows), err
			}
		}
	}
	return len(rows), nil
}

func (j *Journal) change(d JournalEntry) *Change {
	c := &Change{UserID: j.Plan.UserID, PostID: d.PostID, ChangedAt: d.At, Bookmarked: d.Bookmarked,
		Operation: j.Plan.ID, Command: j.Plan.Command, Change: ChangeAdded, SourceUserID: j.Plan.SourceUserID}
	if j.Plan.Kind == OpRemove {
		c.Change = ChangeRemoved
	}
	return c
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

// commitChangeRun stages x_bookmark_changes' new rows, commits them with
// the state next, and publishes them.
func commitChangeRun(out string, prev, next *State, rows []*Change, o CommitOptions) error {
	run, err := BeginRun(out, prev.LastRun, o.Now())
	if err != nil {
		return err
	}
	abort := func(err error) error {
		run.Abort(out)
		return DiskFull(err, false)
	}
	if len(rows) > 0 {
		table := ChangesTableDef()
		w, err := run.Create(out, table, o.SourceName, "")
		if err != nil {
			return abort(err)
		}
		rec := changesRecord(table, rows)
		err = w.Write(rec)
		rec.Release()
		if err := errors.Join(err, w.Close()); err != nil {
			return abort(fmt.Errorf("writing %s: %w", run.StagedPath(out, table.Name), err))
		}
		run.Files = []File{run.File(table.Name, int64(len(rows)))}
		o.Step("staged " + table.Name)
	}
	if err := run.Stage(out); err != nil {
		return abort(err)
	}
	if err := run.Commit(out, next, o.Step); err != nil {
		return abort(fmt.Errorf("committing the bookmark changes: %w", err))
	}
	if err := Publish(out, next, o.Step); err != nil {
		return fmt.Errorf("publishing the bookmark changes (committed: the next run finishes publishing them): %w", DiskFull(err, true))
	}
	return nil
}
