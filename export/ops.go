package export

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/export/pqfile"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/spec"
	"github.com/cq-source-x/cq-source-x/walk"
	"github.com/gofrs/flock"
)

// What the bookmark commands read of an archive, and how they write to it.

// ArchivedPost is one x_bookmarks row of an archive, as the bookmark
// commands see it.
type ArchivedPost struct {
	UserID, PostID string
	FirstSeenAt    time.Time
	// FoundPosition is the post's place in the list when it was found; -1
	// in files written before the column existed.
	FoundPosition int64
	// Missing says what the row lacks of the fields the spec asks for; ""
	// when it holds them all (see Completeness).
	Missing string
}

// alwaysPresent are the tweet fields X returns for every post when they
// are asked for: a row without one of them was not read with it. (The
// others — entities, attachments, note_tweet, referenced_tweets, geo, ... —
// are absent from posts that have none, so a row cannot show it lacks them.)
var alwaysPresent = []string{"created_at", "author_id", "conversation_id", "public_metrics", "edit_history_tweet_ids"}

// Completeness is what a row of x_bookmarks must hold for its post to count
// as archived with all its fields: the post's JSON (the `post` column) with
// its id and text and every post field the request asks for that X returns
// for every post, and, when the request expands author_id, the author.
type Completeness struct {
	fields []string
	author bool
}

// NewCompleteness is the completeness of the fields of a request (the
// spec's RequestFields).
func NewCompleteness(f spec.Fields) Completeness {
	c := Completeness{fields: []string{"id", "text"}}
	for _, name := range alwaysPresent {
		if slices.Contains(f.TweetFields, name) {
			c.fields = append(c.fields, name)
		}
	}
	c.author = slices.Contains(f.Expansions, "author_id")
	return c
}

// missing says what a row lacks: post is the `post` column's JSON (nil if
// null), hasAuthor whether the `author` column is not null.
func (c Completeness) missing(postID string, post []byte, hasAuthor bool) string {
	if post == nil {
		return "the post's JSON (column post) is null"
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(post, &obj); err != nil {
		return "the post's JSON (column post) is not a JSON object"
	}
	var id string
	if json.Unmarshal(obj["id"], &id) != nil || id != postID {
		return "the post's JSON (column post) is of another post"
	}
	for _, f := range c.fields {
		if _, ok := obj[f]; !ok {
			return "the post's JSON (column post) has no " + f
		}
	}
	if c.author {
		var authorID string
		if json.Unmarshal(obj["author_id"], &authorID) == nil && authorID != "" && !hasAuthor {
			return "the author (column author), which the spec asks for, is null"
		}
	}
	return ""
}

// ReadBookmarks reads the x_bookmarks rows of an archive that keep says to
// keep (nil keeps all), with what each lacks of c.
func ReadBookmarks(dir string, c Completeness, keep func(userID, postID string) bool) ([]ArchivedPost, error) {
	paths, err := filepath.Glob(filepath.Join(dir, resources.BookmarksTable, "*.parquet"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var out []ArchivedPost
	for _, path := range paths {
		if err := readBookmarkRows(path, c, keep, &out); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func readBookmarkRows(path string, c Completeness, keep func(userID, postID string) bool, out *[]ArchivedPost) error {
	return readColumns(path, []string{"user_id", "post_id", "first_seen_at", "found_position", "post", "author"}, func(cols map[string]arrow.Array, i int) error {
		users, uok := cols["user_id"].(*array.String)
		posts, pok := cols["post_id"].(*array.String)
		seen, sok := cols["first_seen_at"].(*array.Timestamp)
		json, jok := cols["post"].(*array.String)
		if !uok || !pok || !sok || !jok {
			return errors.New("user_id, post_id, first_seen_at or post is missing or of another type")
		}
		uid, pid := users.Value(i), posts.Value(i)
		if keep != nil && !keep(uid, pid) {
			return nil
		}
		p := ArchivedPost{UserID: uid, PostID: pid, FirstSeenAt: seen.Value(i).ToTime(arrow.Microsecond), FoundPosition: -1}
		if pos, ok := cols["found_position"].(*array.Int64); ok && pos.IsValid(i) {
			p.FoundPosition = pos.Value(i)
		}
		var post []byte
		if json.IsValid(i) {
			post = []byte(json.Value(i))
		}
		author := cols["author"]
		p.Missing = c.missing(pid, post, author != nil && author.IsValid(i))
		*out = append(*out, p)
		return nil
	})
}

// readColumns calls row for each row of the Parquet file at path, with the
// named columns it has (a column the file lacks is absent from cols). Its
// errors name the file.
func readColumns(path string, names []string, row func(cols map[string]arrow.Array, i int) error) error {
	return pqfile.ReadRecords(context.Background(), path, names, func(rec arrow.RecordBatch) error {
		cols := map[string]arrow.Array{}
		for i, f := range rec.Schema().Fields() {
			cols[f.Name] = rec.Column(i)
		}
		for i := range int(rec.NumRows()) {
			if err := row(cols, i); err != nil {
				return err
			}
		}
		return nil
	})
}

// Changes are the archive's x_bookmark_changes, by user and post.
type Changes struct {
	// Latest is each post's latest change (resources.ChangeRemoved or
	// ChangeAdded), by user id and post id.
	Latest map[string]map[string]string
	// rows counts the rows of each operation and user.
	rows map[[2]string]int
}

// ReadChanges reads the archive's x_bookmark_changes.
func ReadChanges(dir string) (*Changes, error) {
	ch := &Changes{Latest: map[string]map[string]string{}, rows: map[[2]string]int{}}
	paths, err := filepath.Glob(filepath.Join(dir, resources.BookmarkChangesTable, "*.parquet"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	at := map[[2]string]time.Time{}
	for _, path := range paths {
		err := readColumns(path, []string{"operation_id", "user_id", "post_id", "change", "changed_at"}, func(cols map[string]arrow.Array, i int) error {
			op, ok1 := cols["operation_id"].(*array.String)
			users, ok2 := cols["user_id"].(*array.String)
			posts, ok3 := cols["post_id"].(*array.String)
			change, ok4 := cols["change"].(*array.String)
			when, ok5 := cols["changed_at"].(*array.Timestamp)
			if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 {
				return errors.New("a column of x_bookmark_changes is missing or of another type")
			}
			uid, pid := users.Value(i), posts.Value(i)
			ch.rows[[2]string{op.Value(i), uid}]++
			k, t := [2]string{uid, pid}, when.Value(i).ToTime(arrow.Microsecond)
			if prev, ok := at[k]; ok && prev.After(t) {
				return nil
			}
			at[k] = t
			if ch.Latest[uid] == nil {
				ch.Latest[uid] = map[string]string{}
			}
			ch.Latest[uid][pid] = change.Value(i)
			return nil
		})
		if err != nil {
			return nil, err
		}
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
	if _, err := lock.TryLockContext(ctx, 200*time.Millisecond); err != nil {
		return 0, fmt.Errorf("waiting for the lock of %s: %w", out, err)
	}
	defer lock.Unlock()
	s, _, err := recoverDir(out, step)
	if err != nil {
		return 0, fmt.Errorf("recovering %s: %w", out, explain(err, true))
	}
	changes, err := ReadChanges(out)
	if err != nil {
		return 0, err
	}
	var rows []*resources.BookmarkChange
	next := &diskState{Format: stateFormat, Keys: map[string]string{}, Written: s.Written, Stray: s.Stray, LastRun: s.LastRun}
	for k, v := range s.Keys {
		next.Keys[k] = v
	}
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

func (j *Journal) change(d JournalEntry) *resources.BookmarkChange {
	c := &resources.BookmarkChange{UserID: j.Plan.UserID, PostID: d.PostID, ChangedAt: d.At, Bookmarked: d.Bookmarked,
		Operation: j.Plan.ID, Command: j.Plan.Command, Change: resources.ChangeAdded, SourceUserID: j.Plan.SourceUserID}
	if j.Plan.Kind == OpRemove {
		c.Change = resources.ChangeRemoved
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
func commitChangeRun(out string, prev, next *diskState, rows []*resources.BookmarkChange, o CommitOptions) error {
	step := o.Step
	t := o.Now().UTC().Truncate(time.Millisecond)
	if prev.LastRun != nil && !t.After(prev.LastRun.Time) {
		t = prev.LastRun.Time.Add(time.Millisecond)
	}
	run := runRecord{ID: newRunID(), Time: t}
	if err := mkdirSynced(out, stagingDir); err != nil {
		return err
	}
	if err := mkdirSynced(filepath.Join(out, stagingDir), run.ID); err != nil {
		return err
	}
	abort := func(err error) error {
		os.RemoveAll(filepath.Join(out, stagingDir, run.ID))
		return explain(err, false)
	}
	if len(rows) > 0 {
		table := resources.BookmarkChanges()
		f := fileRecord{Table: table.Name, Name: run.Time.Format(fileTimeLayout) + "-" + run.ID + ".parquet", Rows: int64(len(rows))}
		path := run.stagedPath(out, f)
		w, err := pqfile.Create(path, table, pqfile.Options{
			SyncTime: run.Time, SourceName: o.SourceName,
			Metadata:  map[string]string{pqfile.MetadataPluginName: xplugin.Name, pqfile.MetadataPluginVersion: xplugin.Version, "cq:export_run": run.ID},
			CreatedBy: "cq-source-x " + xplugin.Version,
		})
		if err != nil {
			return abort(err)
		}
		rec, err := resources.BookmarkChangeRecord(table, rows)
		if err == nil {
			err = w.Write(rec)
			rec.Release()
		}
		if err := errors.Join(err, w.Close()); err != nil {
			return abort(fmt.Errorf("writing %s: %w", path, err))
		}
		run.Files = []fileRecord{f}
		step("staged " + table.Name)
	}
	if err := syncDir(filepath.Join(out, stagingDir, run.ID)); err != nil {
		return abort(err)
	}
	next.Pending = &run
	if err := saveState(out, next, step, "commit"); err != nil {
		return abort(fmt.Errorf("committing the bookmark changes: %w", err))
	}
	step("committed")
	if err := publish(out, next, step); err != nil {
		return fmt.Errorf("publishing the bookmark changes (committed: the next run finishes publishing them): %w", explain(err, true))
	}
	return nil
}
