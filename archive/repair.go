package archive

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/ids"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/internal/plural"
	"github.com/cq-source-x/cq-source-x/walk"
)

type RepairOptions struct {
	DryRun bool
	Tables BookmarkTables
	// ReadData reads every page of every file, and hashes every media file
	// a row says stored; otherwise only footers and sizes are checked.
	ReadData bool
	// Step, when set, is called at each step that matters for crash
	// safety (the kill tests stop the process there).
	Step func(string)
}

type RepairReport struct {
	Out    string
	DryRun bool
	Empty  bool // Out holds neither a state nor an exported file
	// StateProblem is what made the state unusable; "" when it was sound.
	StateProblem string
	Checked      int // Parquet files
	ReadData     bool
	// BookmarkFiles x_bookmarks files hold Posts distinct (user_id,
	// post_id) of Accounts accounts.
	BookmarkFiles, Posts, Accounts int
	// Unfiled counts, per user id, the posts the state said written that
	// no x_bookmarks file holds; Unknown, those the files hold that it did
	// not say written (a state that loaded only).
	Unfiled, Unknown map[string]int
	// Stray counts, per content table of x_bookmarks, the posts whose rows
	// it holds while no x_bookmarks file holds them (State.Stray);
	// StrayUnknown says the state did not record them so.
	Stray        map[string]int
	StrayUnknown bool
	// KeptMemories walk memories were kept; Dropped were not (nor other
	// state keys found damaged).
	KeptMemories int
	Dropped      []DroppedMemory
	// LostFiles are files of the committed run that were neither staged nor
	// published: the run is published without them.
	LostFiles []string
	// Damaged are the files that cannot be read: they are moved to
	// DIR/.damaged/<table>/, and the state rebuilt without them.
	Damaged []DamagedFile
	Media   MediaFindings
	// Leftovers are what a stopped run left, which Recover removes or
	// finishes.
	Leftovers []string
	Changed   bool      // the archive was (with DryRun: would be) changed
	Publish   string    // the committed run whose publishing is finished
	Recovered *Recovery // not with DryRun
}

// DroppedMemory is a walk memory Repair did not keep: the next export reads
// its list in full once.
type DroppedMemory struct {
	Key, Reason string
}

// Repair checks an output directory and makes it whole where it can, under
// its lock, as docs/export.md ("cq-source-x repair") tells. A sound
// directory is left as it is.
func Repair(dir string, o RepairOptions) (*RepairReport, error) {
	out, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if fi, err := os.Stat(out); err != nil || !fi.IsDir() {
		return nil, fmt.Errorf("%s is not an output directory: %v", out, err)
	}
	if o.Tables.Bookmarks == "" {
		return nil, errors.New("repair: the table of the bookmarks is not named (RepairOptions.Tables)")
	}
	if o.Step == nil {
		o.Step = func(string) {}
	}
	rep := &RepairReport{Out: out, DryRun: o.DryRun, ReadData: o.ReadData}
	if files, err := publishedFiles(out); err != nil || (len(files) == 0 && !exists(filepath.Join(out, stateDir, stateFile))) {
		rep.Empty = true
		return rep, err // nothing exported there: nothing to repair, not even a lock to take
	}
	unlock, err := Lock(out, func(lock string) error {
		return fmt.Errorf("an export is running in %s (it holds %s); run this when it has finished", out, lock)
	})
	if err != nil {
		return nil, err
	}
	defer unlock()

	old, err := loadState(out)
	var stateErr *StateError
	switch {
	case errors.As(err, &stateErr):
		rep.StateProblem = stateErr.Problem
	case err != nil:
		return nil, err
	}
	keys, pending, lastRun, err := trustedParts(out, old)
	if err != nil {
		return nil, err
	}
	if rep.Damaged, rep.Checked, err = damagedFiles(out, o.ReadData); err != nil {
		return nil, err
	}
	if pending != nil {
		pending = rep.dropLostFiles(out, pending)
	}
	skip := map[string]bool{}
	for _, d := range rep.Damaged {
		skip[d.Path] = true
	}
	snap, err := openSnapshot(out, pending, nil, skip)
	if err != nil {
		return nil, err
	}
	next, err := rep.rebuild(snap, out, o.Tables, keys, pending, lastRun)
	if err == nil {
		err = rep.compare(old, next)
	}
	var marked bool
	if err == nil {
		marked, err = rep.inspectMedia(snap, out, next, o)
	}
	snap.Close()
	if err != nil {
		return nil, err
	}
	rep.leftovers(out, pending, lastRun)
	stateChanged := old == nil || len(rep.Dropped) > 0 || len(rep.LostFiles) > 0 || len(rep.Damaged) > 0 ||
		len(rep.Unfiled) > 0 || len(rep.Unknown) > 0 || rep.StrayUnknown || marked
	rep.Changed = stateChanged || rep.Media.toRemove() || len(rep.Leftovers) > 0
	if next.Pending != nil {
		rep.Publish = next.Pending.ID
	}
	if !rep.Changed || o.DryRun {
		return rep, nil
	}
	// What cannot be read goes first: the state written next counts none
	// of the posts of those files, and has their media files fetched again
	// (a repair stopped in between is run again).
	for _, d := range append(rep.Damaged, rep.Media.damaged(out)...) {
		if err := moveAside(out, d); err != nil {
			return nil, fmt.Errorf("moving the damaged file %s aside: %w", d.Path, err)
		}
		o.Step("repair moved aside " + d.Path)
	}
	if err := rep.Media.removeUnused(out, o.Step); err != nil {
		return nil, err
	}
	if stateChanged {
		if err := SaveState(out, next, o.Step, "repair"); err != nil {
			return nil, fmt.Errorf("writing the repaired state: %w", err)
		}
	}
	if _, rep.Recovered, err = Recover(out, o.Step); err != nil {
		return rep, fmt.Errorf("the state is repaired, but recovering %s failed: %w", out, err)
	}
	return rep, nil
}

// compare records how the state old (nil when it did not load) differs
// from next, rebuilt from the files.
func (rep *RepairReport) compare(old, next *State) error {
	if old == nil {
		return nil
	}
	before, err := old.ArchivedPosts()
	if err != nil {
		return err
	}
	after, err := next.ArchivedPosts()
	if err != nil {
		return err
	}
	count := func(a, b map[string]ids.Sorted) map[string]int {
		n := map[string]int{}
		for uid, posts := range a {
			for _, id := range posts {
				if !b[uid].Has(id) {
					n[uid]++
				}
			}
		}
		return n
	}
	rep.Unfiled, rep.Unknown = count(before, after), count(after, before)
	rep.StrayUnknown = !maps.EqualFunc(old.Stray, next.Stray, sameWritten)
	return nil
}

// leftovers records what a stopped run left for Recover.
func (rep *RepairReport) leftovers(out string, pending, lastRun *Run) {
	if pending != nil {
		rep.Leftovers = append(rep.Leftovers, fmt.Sprintf("run %s is committed, and not all published", pending.ID))
	}
	entries, _ := os.ReadDir(filepath.Join(out, stagingDir))
	for _, e := range entries {
		if (pending == nil || e.Name() != pending.ID) && (lastRun == nil || e.Name() != lastRun.ID) {
			rep.Leftovers = append(rep.Leftovers, filepath.Join(out, stagingDir, e.Name())+" holds the files of a run that did not commit")
		}
	}
	if tmp := filepath.Join(out, stateDir, stateFile+".tmp"); exists(tmp) {
		rep.Leftovers = append(rep.Leftovers, tmp+" is a state file half written")
	}
}

// trustedParts are the walk memories and runs of the state: all of them if
// it loaded, else what can be salvaged from its text.
func trustedParts(out string, s *State) (map[string]string, *Run, *Run, error) {
	if s != nil {
		return s.Keys, s.Pending, s.LastRun, nil
	}
	text, err := os.ReadFile(filepath.Join(out, stateDir, stateFile))
	if err != nil && !os.IsNotExist(err) {
		return nil, nil, nil, err
	}
	keys, pending, lastRun := salvage(text)
	return keys, pending, lastRun, nil
}

func (rep *RepairReport) rebuild(snap *Snapshot, out string, tables BookmarkTables, keys map[string]string, pending, lastRun *Run) (*State, error) {
	next := newState()
	written := map[string]*ids.Set{}
	files := rep.readKeys(snap, tables.Bookmarks, func(uid, postID string) { addTo(written, uid, postID) })
	next.Stray = rep.readStray(snap, tables.Content, written)
	next.Pending, next.LastRun = pending, lastRun
	// A state that lost its last run, or is older than the files: the next
	// run's files must sort after theirs (see knowsFiles).
	if _, newest, _ := newestExportedFile(out, pending); lastRun == nil || (newest != nil && newest.Time.After(lastRun.Time)) {
		next.LastRun = newest
	}
	rep.BookmarkFiles, rep.Accounts = files, len(written)
	for _, set := range written {
		rep.Posts += set.Len()
	}
	for key, value := range keys {
		if reason := distrust(key, value, written); reason != "" {
			rep.Dropped = append(rep.Dropped, DroppedMemory{Key: key, Reason: reason})
			continue
		}
		next.Keys[key] = value
		if k, _ := account.ParseKey(key); strings.HasPrefix(key, "x_bookmark") && k.Kind != account.ArchivedRecord {
			rep.KeptMemories++ // the lists' memories, folder lists and cap records
		}
	}
	sort.Slice(rep.Dropped, func(i, j int) bool { return rep.Dropped[i].Key < rep.Dropped[j].Key })
	return next, next.setWritten(written)
}

// setWritten makes the posts each account's record says it wrote the posts
// its x_bookmarks files hold, so that no row is written twice, nor a post
// taken for archived that no file holds. An account of a state an earlier
// version wrote has its record made first (account.MigrateRecord).
func (s *State) setWritten(written map[string]*ids.Set) error {
	users := map[string]bool{}
	for uid := range written {
		users[uid] = true
	}
	for key := range s.Keys {
		if k, ok := account.ParseKey(key); ok && (k.Kind == account.ArchivedRecord || k.Kind == account.MediaFiles || k.Kind == account.AuthorIDs) {
			users[k.User] = true
		}
	}
	ctx, st := context.Background(), memstate.NewWith(s.Keys) // whose calls do not fail
	for uid := range users {
		key := account.RecordKey(uid)
		if s.Keys[key] == "" {
			if err := account.MigrateRecord(ctx, st, uid, nil); err != nil {
				return err
			}
		}
		value, _ := st.GetKey(ctx, key)
		rec, err := archived.Unmarshal(value, "the state key "+key) // checked by distrust
		if err != nil {
			return err
		}
		rec.SetBookmarks(written[uid].Numbers())
		if value, err = rec.Marshal(); err != nil {
			return err
		}
		st.SetKey(ctx, key, value)
	}
	st.Flush(ctx)
	s.Keys = st.Committed()
	maps.DeleteFunc(s.Keys, func(_, value string) bool { return value == "" })
	return nil
}

// distrust says why a walk memory cannot be kept, or "" if it can.
func distrust(key, value string, written map[string]*ids.Set) string {
	if _, err := account.CheckKey(key, value); err != nil {
		return "damaged (" + err.Error() + ")"
	}
	uid, ok := strings.CutPrefix(key, account.BookmarksKey(""))
	if !ok {
		return ""
	}
	mem, _ := walk.UnmarshalMemory(value) // checked above
	if mem == nil || mem.Held == nil {
		return ""
	}
	set, missing := written[uid], 0
	for i := range mem.Held.Len() {
		if set == nil || !set.Has(mem.Held.At(i)) {
			missing++
		}
	}
	if missing > 0 {
		return fmt.Sprintf("%d of the %s it holds %s in no file", missing, plural.Count(mem.Held.Len(), "post", "posts"), plural.Pick(missing, "is", "are"))
	}
	return ""
}

// dropLostFiles returns the committed run without its files that are
// neither staged nor published, and records them.
func (rep *RepairReport) dropLostFiles(out string, run *Run) *Run {
	kept := *run
	kept.Files = nil
	for _, f := range run.Files {
		if exists(run.StagedPath(out, f.Table)) || exists(FinalPath(out, f)) {
			kept.Files = append(kept.Files, f)
			continue
		}
		rep.LostFiles = append(rep.LostFiles, FinalPath(out, f))
	}
	return &kept
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// readStray finds, in the files of each content table of x_bookmarks, the
// posts whose rows they hold while no x_bookmarks file holds the post (its
// file was removed): State.Stray, which it counts in rep.Stray.
func (rep *RepairReport) readStray(snap *Snapshot, content []string, written map[string]*ids.Set) map[string]map[string]*ids.Set {
	stray := map[string]map[string]*ids.Set{}
	rep.Stray = map[string]int{}
	for _, table := range content {
		byUser := map[string]*ids.Set{}
		rep.readKeys(snap, table, func(uid, postID string) {
			if !written[uid].Has(postID) {
				addTo(byUser, uid, postID)
			}
		})
		for _, set := range byUser {
			stray[table] = byUser
			rep.Stray[table] += set.Len()
		}
	}
	return stray
}

// readKeys calls add with the (user_id, post_id) of every row of the
// table's files that read whole, and returns how many did.
func (rep *RepairReport) readKeys(snap *Snapshot, table string, add func(uid, postID string)) int {
	return rep.readWhole(snap, table, []string{"user_id", "post_id"}, nil, func(c *Cols, i int) {
		add(c.Str("user_id", i), c.Str("post_id", i))
	})
}

// readWhole calls row with the rows of each file of table in snap once the
// file has read whole (ReadRows), and returns how many did. A file that
// does not is damaged, and adds no row.
func (rep *RepairReport) readWhole(snap *Snapshot, table string, want, optional []string, row func(c *Cols, i int)) int {
	var batches []arrow.RecordBatch
	whole := 0
	rows := rowsOf(want, optional, row)
	snap.readFiles(table, slices.Concat(want, optional), func(rec arrow.RecordBatch) error {
		rec.Retain()
		batches = append(batches, rec)
		return nil
	}, func(path string, err error) error {
		for _, rec := range batches {
			if err == nil {
				err = rows(rec)
			}
			rec.Release()
		}
		batches = batches[:0]
		if err != nil {
			rep.Damaged = append(rep.Damaged, damagedFile(table, path, "its rows", err))
		} else {
			whole++
		}
		return nil
	})
	return whole
}

func addTo(sets map[string]*ids.Set, uid, postID string) {
	set := sets[uid]
	if set == nil {
		set = &ids.Set{}
		sets[uid] = set
	}
	set.Add(postID)
}

// cannotRead words an error of pqfile's as "FILE cannot be read (WHY)".
func cannotRead(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Sprintf("%s cannot be read (%v)", pe.Path, pe.Err)
	}
	return err.Error()
}

func sameWritten(a, b map[string]*ids.Set) bool {
	return maps.EqualFunc(a, b, func(x, y *ids.Set) bool { return slices.Equal(x.IDs(), y.IDs()) })
}

// salvage finds in the text of a damaged state file every walk memory and
// run record that reads whole: each key is looked for by its own name, so
// a damaged one loses only itself. Repair then checks every memory.
func salvage(text []byte) (keys map[string]string, pending, lastRun *Run) {
	keys = map[string]string{}
	conflicting := map[string]bool{}
	for i := 0; ; i++ {
		at := bytes.Index(text[i:], []byte(`"x_`))
		if at < 0 {
			break
		}
		i += at
		key, end, ok := jsonString(text, i)
		if k, known := account.ParseKey(key); !ok || !known || k.Kind == account.ArchivedIDs || end >= len(text) || text[end] != ':' {
			continue
		}
		value, _, ok := jsonString(text, end+1)
		if !ok {
			continue
		}
		if old, seen := keys[key]; seen && old != value {
			conflicting[key] = true
		}
		keys[key] = value
	}
	for key := range conflicting {
		delete(keys, key)
	}
	return keys, runAfter(text, `,"pending":`), runAfter(text, `,"last_run":`)
}

// jsonString reads the JSON string at text[at], and the index after it.
func jsonString(text []byte, at int) (string, int, bool) {
	if at >= len(text) || text[at] != '"' {
		return "", 0, false
	}
	dec := json.NewDecoder(bytes.NewReader(text[at:]))
	var s string
	if dec.Decode(&s) != nil {
		return "", 0, false
	}
	return s, at + int(dec.InputOffset()), true
}

// runAfter decodes the run record that follows the last occurrence of
// field in text, if it reads whole and is a run record.
func runAfter(text []byte, field string) *Run {
	at := bytes.LastIndex(text, []byte(field))
	if at < 0 {
		return nil
	}
	var run Run
	if json.NewDecoder(bytes.NewReader(text[at+len(field):])).Decode(&run) != nil || run.check() != nil {
		return nil
	}
	return &run
}

// WriteText prints the report: what was wrong, what was kept and dropped,
// and what the next export costs because of it.
func (rep *RepairReport) WriteText(w io.Writer) {
	switch {
	case rep.Empty:
		fmt.Fprintf(w, "%s holds no export. Nothing to repair.\n", rep.Out)
		return
	case rep.StateProblem != "":
		fmt.Fprintf(w, "state: %s\n", rep.StateProblem)
	default:
		fmt.Fprintln(w, "state: readable")
	}
	for _, d := range rep.Damaged {
		fmt.Fprintf(w, "damaged: %s: %s; %s to %s\n", d.Path, d.Problem, pick(rep.DryRun, "to be moved", "moved"), filepath.Join(rep.Out, damagedDir, d.Table))
	}
	fmt.Fprintf(w, "files: %d x_bookmarks file(s) hold %d post(s) of %d account(s)\n", rep.BookmarkFiles, rep.Posts, rep.Accounts)
	for _, f := range rep.LostFiles {
		fmt.Fprintf(w, "lost: %s, a file of the committed run %s, is neither staged nor published; the run is published without it\n", f, rep.Publish)
	}
	for _, table := range slices.Sorted(maps.Keys(rep.Stray)) {
		fmt.Fprintf(w, "content: %s holds the rows of %s that no x_bookmarks file holds; a walk that reads them again writes their bookmark, not these rows again\n",
			table, plural.Count(rep.Stray[table], "post", "posts"))
	}
	for _, uid := range slices.Sorted(maps.Keys(rep.Unfiled)) {
		fmt.Fprintf(w, "written: the state said %s of user %s archived that no x_bookmarks file holds; the next export fetches again those still bookmarked\n", plural.Count(rep.Unfiled[uid], "post", "posts"), uid)
	}
	for _, uid := range slices.Sorted(maps.Keys(rep.Unknown)) {
		fmt.Fprintf(w, "written: x_bookmarks files hold %s of user %s the state did not say archived\n", plural.Count(rep.Unknown[uid], "post", "posts"), uid)
	}
	fmt.Fprintf(w, "walk memories: %d kept, %d dropped\n", rep.KeptMemories, len(rep.Dropped))
	for _, d := range rep.Dropped {
		fmt.Fprintf(w, "  dropped %s: %s\n", d.Key, d.Reason)
	}
	rep.Media.writeText(w, rep.Out, rep.DryRun)
	for _, l := range rep.Leftovers {
		fmt.Fprintf(w, "leftover: %s; %s\n", l, pick(rep.DryRun, "to be finished", "finished"))
	}
	switch {
	case !rep.Changed:
		fmt.Fprintln(w, "Nothing to repair.")
		return
	case rep.DryRun:
		fmt.Fprintf(w, "Dry run: nothing was changed. Run `%s` to repair it.\n", rep.repairCommand())
	default:
		fmt.Fprintln(w, "The archive is repaired.")
		if rep.Recovered != nil && rep.Recovered.PublishedRun != "" {
			fmt.Fprintf(w, "Run %s is published.\n", rep.Recovered.PublishedRun)
		}
	}
	rep.writeCost(w)
}

func (rep *RepairReport) writeCost(w io.Writer) {
	var lists []string
	for _, d := range rep.Dropped {
		lists = append(lists, d.Key)
	}
	switch {
	case rep.KeptMemories == 0 && rep.Posts > 0:
		fmt.Fprintln(w, "\nNo walk memory was kept: the next export reads every list of every account in full once, and bills every post in them again.")
	case len(lists) > 0:
		fmt.Fprintf(w, "\nThe next export reads these lists in full once, and bills every post in them again: %s.\n", strings.Join(lists, ", "))
	default:
		fmt.Fprintln(w, "\nEvery walk memory was kept: the next export is as incremental as ever.")
		return
	}
	fmt.Fprintln(w, "It writes only the posts that no file holds: no row is written twice.")
	if len(rep.LostFiles) > 0 {
		fmt.Fprintln(w, "Posts of the lost file that are no longer bookmarked cannot be fetched again.")
	}
	if len(rep.Damaged) > 0 {
		fmt.Fprintln(w, "Posts of the damaged files that are no longer bookmarked cannot be fetched again; the rows of other tables they held are lost (the files stay in "+
			filepath.Join(rep.Out, damagedDir)+" for you to inspect or remove).")
	}
}
