package export_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// exportDir is an output directory exported from a simulator: the setting of
// the tests of what goes wrong in one (docs/export.md, "When something goes
// wrong").
type exportDir struct {
	t        *testing.T
	sim      *xsim.Server
	users    []demoUser
	tokens   map[string]string
	src      *cqspec.Source
	specFile string // "" unless written
	dir      string
}

func newExportDir(t *testing.T, users ...demoUser) *exportDir {
	t.Helper()
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	if len(users) == 0 {
		users = []demoUser{{id: "1001", bookmarks: 300, folders: 1}, {id: "1002", bookmarks: 40}}
	}
	tokens := seed(sim, users)
	src, err := cqspec.Parse([]byte(specYAML(sim.URL(), users, tokens, `["*"]`)), "spec.yml", os.LookupEnv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return &exportDir{t: t, sim: sim, users: users, tokens: tokens, src: src, dir: t.TempDir()}
}

// run exports once; step is the crash-point hook (nil: none).
func (a *exportDir) run(step func(string)) (*export.Summary, error) {
	res, err := export.Run(context.Background(), export.Options{Spec: a.src, Out: a.dir, Step: step})
	if err != nil {
		return nil, err
	}
	if f := res.Failed(); len(f) > 0 {
		a.t.Fatalf("failed accounts: %v", f)
	}
	return res.Summary(), nil
}

func (a *exportDir) mustRun() *export.Summary {
	a.t.Helper()
	s, err := a.run(nil)
	if err != nil {
		a.t.Fatal(err)
	}
	return s
}

func (a *exportDir) statePath() string { return filepath.Join(a.dir, ".state", "state.json") }

func (a *exportDir) readState() []byte {
	a.t.Helper()
	b, err := os.ReadFile(a.statePath())
	if err != nil {
		a.t.Fatal(err)
	}
	return b
}

func (a *exportDir) writeState(b []byte) {
	a.t.Helper()
	if err := os.WriteFile(a.statePath(), b, 0o644); err != nil {
		a.t.Fatal(err)
	}
}

func (a *exportDir) repair() *archive.RepairReport {
	a.t.Helper()
	rep, err := archive.Repair(a.dir, archive.RepairOptions{Tables: export.BookmarkTables()})
	if err != nil {
		a.t.Fatal(err)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	a.t.Logf("repair:\n%s", text.String())
	return rep
}

// refusesToRun checks that an export in the directory fails at once with
// an error containing want and naming the repair command, having billed
// and written nothing.
func (a *exportDir) refusesToRun(want string) {
	a.t.Helper()
	billed := a.sim.TotalPostsReturned()
	files := len(parquetFiles(a.t, a.dir, "x_bookmarks"))
	_, err := a.run(nil)
	if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), "cq-source-x repair --out "+a.dir) {
		a.t.Fatalf("export: %v\nwant an error saying %q and naming the repair command", err, want)
	}
	if a.sim.TotalPostsReturned() != billed || len(parquetFiles(a.t, a.dir, "x_bookmarks")) != files {
		a.t.Fatalf("a refused export billed %d posts and wrote files", a.sim.TotalPostsReturned()-billed)
	}
}

// A state file that holds no state (null, a format alone, a part missing)
// is damaged, not an empty state: an empty state would have the next run
// bill every post again and write each row a second time.
func TestAStateFileThatHoldsNoStateIsDamaged(t *testing.T) {
	a := newExportDir(t)
	a.mustRun()
	for text, why := range map[string]string{
		`null`:                                 "is damaged: null where an object was expected",
		`{"format":1}`:                         "is damaged: its walk memories (\"keys\") are missing",
		`{}`:                                   "is damaged: it holds no state (\"format\" is missing)",
		`{"format":1,"keys":{}}`:               "is damaged: its written-id sets (\"written\") are missing",
		`{"format":1,"written":{}}`:            "is damaged: its walk memories (\"keys\") are missing",
		`{"format":1,"keys":"x","written":{}}`: "is damaged: a string where an object was expected",
	} {
		a.writeState([]byte(text))
		a.refusesToRun(why)
	}
	a.repair()
	s := a.mustRun()
	if s.Totals.BookmarksWritten != 0 || s.Totals.AlreadyArchived != 340 {
		t.Errorf("after the repair: %d rows written, %d already archived; want 0 and 340", s.Totals.BookmarksWritten, s.Totals.AlreadyArchived)
	}
	checkArchive(t, a.dir, a.sim, a.users)
}

// A state file deleted beside the files it described is a lost state: the
// export refuses to start; the repair rebuilds the written ids from the
// files, so the next run bills each list once more but writes no row twice.
func TestADeletedStateBesideFilesIsRebuiltFromThem(t *testing.T) {
	a := newExportDir(t)
	a.mustRun()
	if err := os.Remove(a.statePath()); err != nil {
		t.Fatal(err)
	}
	a.refusesToRun("is missing, but the directory holds exported files")

	rep := a.repair()
	if !rep.Changed || rep.Posts != 340 || rep.Accounts != 2 || rep.KeptMemories != 0 {
		t.Errorf("repair: %+v", rep)
	}
	added := a.sim.SeedBookmarks("1001", 3)
	a.sim.ResetUsage()
	s := a.mustRun()
	if s.Totals.BookmarksWritten != 3 || s.Totals.AlreadyArchived != 340 {
		t.Errorf("after the repair: %d rows written, %d already archived; want the 3 new and 340", s.Totals.BookmarksWritten, s.Totals.AlreadyArchived)
	}
	if billed := a.sim.TotalPostsReturned(); billed < 343 {
		t.Errorf("after the repair the lists were not read in full: %d posts billed", billed)
	}
	keys := checkArchive(t, a.dir, a.sim, a.users)
	if keys[[2]string{"1001", added[0]}] != 1 {
		t.Errorf("the new post %s is not archived", added[0])
	}
	// The walks remember again: the run after is incremental.
	a.sim.ResetUsage()
	a.mustRun()
	if billed := a.sim.TotalPostsReturned(); billed > 10 {
		t.Errorf("the second run after the repair billed %d posts", billed)
	}
}

// A state that does not know the files beside it is not their state: an
// empty one, which records no export, or one older than the files (a
// backup restored). The export refuses to start, as for a lost state; the
// repair rebuilds it from the files, and no row is written twice.
func TestAStateThatDoesNotKnowTheFilesBesideItIsRefused(t *testing.T) {
	a := newExportDir(t)
	a.mustRun()
	backup := a.readState()
	a.writeState([]byte(`{"format":1,"keys":{},"written":{}}`))
	a.refusesToRun("records no export, but the directory holds exported files")
	a.writeState(backup)

	a.sim.SeedBookmarks("1001", 3)
	a.mustRun()
	a.writeState(backup)
	a.refusesToRun("is older than the files beside it")
	a.repair()
	s := a.mustRun()
	if s.Totals.BookmarksWritten != 0 || s.Totals.AlreadyArchived < 3 {
		t.Errorf("after the repair: %d rows written, %d already archived; want none written, the 3 newer than the backup among the archived",
			s.Totals.BookmarksWritten, s.Totals.AlreadyArchived)
	}
	checkArchive(t, a.dir, a.sim, a.users)
	a.mustRun() // the repaired state knows the files of the runs after it
}

// flipHeldBit damages the held list of the walk memory key in the state
// text as a disk error would, keeping it valid JSON.
func flipHeldBit(t *testing.T, state []byte, key string) []byte {
	t.Helper()
	var s map[string]json.RawMessage
	var keys map[string]string
	if err := json.Unmarshal(state, &s); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(s["keys"], &keys); err != nil {
		t.Fatal(err)
	}
	mem := keys[key]
	at := strings.Index(mem, `"held":"`) + len(`"held":"`) + 40
	if at < 50 || at >= len(mem) {
		t.Fatalf("no held list long enough in %s", key)
	}
	b := []byte(mem)
	if b[at] ^= 0x01; b[at] == '"' || b[at] == '\\' {
		b[at] ^= 0x03
	}
	keys[key] = string(b)
	s["keys"], _ = json.Marshal(keys)
	out, _ := json.Marshal(s)
	return out
}

// One flipped bit in a walk memory made its account fail at every run with
// no way out. The export now refuses to start, naming the memory and the
// repair; the repair drops that memory alone, so the next run reads that
// list in full once and every other list incrementally.
func TestADamagedWalkMemoryIsDroppedByTheRepair(t *testing.T) {
	a := newExportDir(t)
	a.mustRun()
	a.writeState(flipHeldBit(t, a.readState(), "x_bookmarks/1001"))
	a.refusesToRun("the state key x_bookmarks/1001 is damaged")

	rep := a.repair()
	if len(rep.Dropped) != 1 || rep.Dropped[0].Key != "x_bookmarks/1001" || rep.KeptMemories != 4 {
		t.Errorf("repair dropped %+v, kept %d; want x_bookmarks/1001 alone dropped", rep.Dropped, rep.KeptMemories)
	}
	a.sim.ResetUsage()
	s := a.mustRun()
	if s.Totals.BookmarksWritten != 0 {
		t.Errorf("after the repair %d rows were written again", s.Totals.BookmarksWritten)
	}
	if billed := a.sim.TotalPostsReturned(); billed < 300 || billed > 300+10 {
		t.Errorf("after the repair %d posts were billed; want 1001's 300 once and little more", billed)
	}
	checkArchive(t, a.dir, a.sim, a.users)
}

// A state file that no longer parses as JSON loses only the memory the
// damage is in: the repair finds every other one by its own name.
func TestADamagedStateLosesOnlyTheMemoryTheDamageIsIn(t *testing.T) {
	a := newExportDir(t)
	a.mustRun()
	state := a.readState()
	at := bytes.Index(state, []byte(`"x_bookmarks/1001":"`))
	if at < 0 {
		t.Fatal("no x_bookmarks/1001 in the state")
	}
	state[at+80] = '"' // inside its held list: the JSON ends there
	a.writeState(state)
	a.refusesToRun("is damaged: invalid character")

	rep := a.repair()
	if len(rep.Dropped) != 1 || rep.Dropped[0].Key != "x_bookmarks/1001" || rep.KeptMemories != 4 {
		t.Errorf("repair dropped %+v, kept %d; want x_bookmarks/1001 alone dropped", rep.Dropped, rep.KeptMemories)
	}
	a.sim.ResetUsage()
	if s := a.mustRun(); s.Totals.BookmarksWritten != 0 {
		t.Errorf("after the repair %d rows were written again", s.Totals.BookmarksWritten)
	}
	if billed := a.sim.TotalPostsReturned(); billed > 300+10 {
		t.Errorf("after the repair %d posts were billed; want 1001's 300 once and little more", billed)
	}
	checkArchive(t, a.dir, a.sim, a.users)
}

// Wherever one bit of the state file flips, the export either runs as if
// nothing happened or refuses to start; after the repair it runs, and the
// archive holds every bookmark exactly once.
func TestAnyFlippedBitOfTheStateIsRepaired(t *testing.T) {
	a := newExportDir(t, demoUser{id: "1001", bookmarks: 120, folders: 1}, demoUser{id: "1002", bookmarks: 30})
	a.mustRun()
	a.sim.SeedBookmarks("1001", 5)
	a.mustRun()
	good := a.readState()
	files := map[string]bool{}
	for _, f := range everyFile(t, a.dir) {
		files[f] = true
	}
	rng := rand.New(rand.NewPCG(15, 15))
	for range 40 {
		at, bit := rng.IntN(len(good)), byte(1)<<rng.IntN(8)
		damaged := bytes.Clone(good)
		damaged[at] ^= bit
		a.writeState(damaged)
		_, err := a.run(nil)
		var stateErr *archive.StateError
		switch {
		case errors.As(err, &stateErr):
			a.repair()
			if _, err := a.run(nil); err != nil {
				t.Fatalf("byte %d (%q), bit %#x: after the repair: %v", at, good[at], bit, err)
			}
		case err != nil:
			t.Fatalf("byte %d (%q), bit %#x: %v", at, good[at], bit, err)
		}
		checkArchive(t, a.dir, a.sim, a.users)
		// Back to the state before, for the next flip: the run's new files go.
		for _, f := range everyFile(t, a.dir) {
			if !files[f] {
				os.Remove(f)
			}
		}
		a.writeState(good)
	}
}

// everyFile is the Parquet files of every table of dir.
func everyFile(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	for _, table := range export.TableNames() {
		files = append(files, parquetFiles(t, dir, table)...)
	}
	return files
}

// crashAt returns a step hook that stops the run at the named step, as a
// kill would (the deferred unlock aside), and a func that reports whether
// it did.
func crashAt(name string) (func(string), func(t *testing.T)) {
	type crash struct{}
	hit := false
	step := func(s string) {
		if s == name && !hit {
			hit = true
			panic(crash{})
		}
	}
	return step, func(t *testing.T) {
		t.Helper()
		if r := recover(); r != nil {
			if _, ok := r.(crash); !ok {
				panic(r)
			}
		}
		if !hit {
			t.Fatalf("the run did not reach step %q", name)
		}
	}
}

// A staged file removed after its run committed made every later run fail.
// The failure names the repair, which publishes the rest of the run and
// drops the memories that vouch for the lost file's posts: the next run
// fetches them again, and writes nothing twice.
func TestAStagedFileRemovedAfterTheCommitIsRepaired(t *testing.T) {
	a := newExportDir(t)
	a.mustRun()
	added := a.sim.SeedBookmarks("1001", 6)
	step, crashed := crashAt("committed")
	func() {
		defer crashed(t)
		a.run(step)
	}()
	staged, _ := filepath.Glob(filepath.Join(a.dir, ".staging", "*", "x_bookmarks.parquet"))
	if len(staged) != 1 {
		t.Fatalf("staged x_bookmarks files: %v", staged)
	}
	if err := os.Remove(staged[0]); err != nil {
		t.Fatal(err)
	}
	a.refusesToRun("is neither staged")

	rep := a.repair()
	if len(rep.LostFiles) != 1 || !strings.Contains(rep.LostFiles[0], "x_bookmarks") {
		t.Errorf("lost files %v", rep.LostFiles)
	}
	if len(rep.Dropped) != 1 || rep.Dropped[0].Key != "x_bookmarks/1001" || !strings.Contains(rep.Dropped[0].Reason, "6 of the 306 posts it holds are in no file") {
		t.Errorf("dropped %+v; want x_bookmarks/1001 alone, for the 6 posts of the lost file", rep.Dropped)
	}
	if rep.Recovered == nil || rep.Recovered.PublishedRun == "" {
		t.Errorf("the committed run was not published: %+v", rep.Recovered)
	}
	s := a.mustRun()
	if s.Totals.BookmarksWritten != 6 {
		t.Errorf("after the repair %d rows written; want the 6 of the lost file", s.Totals.BookmarksWritten)
	}
	if keys := checkArchive(t, a.dir, a.sim, a.users); keys[[2]string{"1001", added[0]}] != 1 {
		t.Errorf("post %s of the lost file is not archived", added[0])
	}
}

// A run record is a path: a state whose run id or file names would lead
// out of the output directory is damaged, and nothing is removed or moved
// (such a pending run used to have the recovery delete DIR/x_bookmarks).
func TestARunRecordLeadingOutOfTheDirectoryIsDamaged(t *testing.T) {
	a := newExportDir(t)
	a.mustRun()
	var s map[string]json.RawMessage
	if err := json.Unmarshal(a.readState(), &s); err != nil {
		t.Fatal(err)
	}
	for _, run := range []string{
		`{"id":"../x_bookmarks","time":"2026-11-22T10:15:00Z","files":[]}`,
		`{"id":"0a1b2c3d","time":"2026-11-22T10:15:00Z","files":[{"table":"../../elsewhere","name":"20261122T101500.000Z-0a1b2c3d.parquet"}]}`,
		`{"id":"0a1b2c3d","time":"2026-11-22T10:15:00Z","files":[{"table":"x_bookmarks","name":"../../../elsewhere.parquet"}]}`,
	} {
		s["pending"] = json.RawMessage(run)
		text, _ := json.Marshal(s)
		a.writeState(text)
		a.refusesToRun("is damaged")
		if len(parquetFiles(t, a.dir, "x_bookmarks")) != 1 {
			t.Fatalf("pending run %s: the x_bookmarks files are gone", run)
		}
	}
}

// A repair of a sound directory changes nothing; a dry run changes nothing
// either, and says what the repair would do.
func TestRepairLeavesASoundDirectoryAloneAndADryRunChangesNothing(t *testing.T) {
	a := newExportDir(t)
	a.mustRun()
	good := a.readState()
	if rep := a.repair(); rep.Changed || rep.StateProblem != "" || rep.Posts != 340 || rep.KeptMemories != 5 {
		t.Errorf("repair of a sound directory: %+v", rep)
	}
	if !bytes.Equal(a.readState(), good) {
		t.Error("the repair of a sound directory rewrote its state")
	}
	a.writeState(flipHeldBit(t, good, "x_bookmarks/1002"))
	damaged := a.readState()
	rep, err := archive.Repair(a.dir, archive.RepairOptions{DryRun: true, Tables: export.BookmarkTables()})
	if err != nil || !rep.Changed || len(rep.Dropped) != 1 {
		t.Fatalf("dry run: %+v, %v", rep, err)
	}
	var text bytes.Buffer
	rep.WriteText(&text)
	if !strings.Contains(text.String(), "Dry run: nothing was changed") || !strings.Contains(text.String(), "x_bookmarks/1002") {
		t.Errorf("dry run says:\n%s", text.String())
	}
	if !bytes.Equal(a.readState(), damaged) {
		t.Error("a dry run changed the state")
	}
}

// A state written by a newer version is not the repair's to rewrite; a
// Parquet file whose footer cannot be read is moved aside, to
// DIR/.damaged/<table>/, and the state rebuilt without it.
func TestRepairRefusesANewerStateAndMovesAnUnreadableFileAside(t *testing.T) {
	a := newExportDir(t)
	a.mustRun()
	a.writeState([]byte(`{"format":3,"keys":{},"written":{}}`))
	if _, err := archive.Repair(a.dir, archive.RepairOptions{Tables: export.BookmarkTables()}); err == nil || !strings.Contains(err.Error(), "has format 3") {
		t.Errorf("repair of a newer state: %v", err)
	}
	if err := os.Remove(a.statePath()); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(a.dir, "x_bookmarks", "20261122T101500.000Z-0a1b2c3d.parquet")
	if err := os.WriteFile(bad, []byte("PAR1 not really"), 0o644); err != nil {
		t.Fatal(err)
	}
	dry, err := archive.Repair(a.dir, archive.RepairOptions{DryRun: true, Tables: export.BookmarkTables()})
	if err != nil || len(dry.Damaged) != 1 || dry.Damaged[0].Path != bad {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	if _, err := os.Stat(bad); err != nil {
		t.Fatal("a dry run moved the damaged file")
	}
	rep := a.repair()
	if len(rep.Damaged) != 1 || rep.Posts != 340 {
		t.Errorf("repair: %+v", rep)
	}
	if _, err := os.Stat(filepath.Join(a.dir, ".damaged", "x_bookmarks", filepath.Base(bad))); err != nil {
		t.Errorf("the damaged file is not in .damaged: %v", err)
	}
	if s := a.mustRun(); s.Totals.BookmarksWritten != 0 || len(s.Damaged) != 0 {
		t.Errorf("after the repair: %+v", s)
	}
}

// A directory that holds no export is left as it is: no lock file, no
// state.
func TestRepairLeavesADirectoryWithoutAnExportAlone(t *testing.T) {
	dir := t.TempDir()
	rep, err := archive.Repair(dir, archive.RepairOptions{Tables: export.BookmarkTables()})
	if err != nil || !rep.Empty || rep.Changed {
		t.Fatalf("repair of an empty directory: %+v, %v", rep, err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Errorf("the repair left %v", entries)
	}
}

// Parquet files deleted by hand are still counted as written by the state;
// the repair counts what the files hold, and drops the memories that hold
// the lost posts: the next run fetches again those still bookmarked.
func TestFilesDeletedByHandAreFetchedAgainAfterTheRepair(t *testing.T) {
	a := newExportDir(t)
	a.mustRun()
	added := a.sim.SeedBookmarks("1002", 5)
	a.mustRun()
	files := parquetFiles(t, a.dir, "x_bookmarks")
	if err := os.Remove(files[len(files)-1]); err != nil {
		t.Fatal(err)
	}
	rep := a.repair()
	if !rep.Changed || rep.Posts != 340 || len(rep.Dropped) != 1 || rep.Dropped[0].Key != "x_bookmarks/1002" {
		t.Errorf("repair: %+v", rep)
	}
	if s := a.mustRun(); s.Totals.BookmarksWritten != 5 {
		t.Errorf("after the repair %d rows written; want the 5 of the deleted file", s.Totals.BookmarksWritten)
	}
	if keys := checkArchive(t, a.dir, a.sim, a.users); keys[[2]string{"1002", added[0]}] != 1 {
		t.Errorf("post %s of the deleted file is not archived", added[0])
	}
}

// The day's billing ledger (x_api_usage/billed/<user>) is a state key as
// the walk memories are: a repair that salvages a damaged state keeps it,
// or the next run of the day would count as billed again what X billed
// once.
func TestRepairKeepsTheDaysBillingLedger(t *testing.T) {
	a := newExportDir(t)
	a.mustRun()
	const key = "x_api_usage/billed/1001"
	keys := func() map[string]string {
		var s struct{ Keys map[string]string }
		if err := json.Unmarshal(a.readState(), &s); err != nil {
			t.Fatal(err)
		}
		return s.Keys
	}
	ledger := keys()[key]
	if ledger == "" {
		t.Fatalf("the run stored no ledger under %s", key)
	}
	state := a.readState()
	a.writeState(state[:len(state)-2]) // the end cut off: damaged, every key whole
	if rep := a.repair(); rep.StateProblem == "" {
		t.Fatal("the repair found the state sound")
	}
	if got := keys()[key]; got != ledger {
		t.Errorf("after the repair the state holds %q under %s, want the ledger it held", got, key)
	}
}
