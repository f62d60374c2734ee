package archive

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
	"github.com/cq-source-x/cq-source-x/internal/dirsync"
	"github.com/cq-source-x/cq-source-x/media/store"
	"github.com/cq-source-x/cq-source-x/plan"
	"github.com/gofrs/flock"
)

// Lock takes the lock of the directory out, which keeps two commands that
// change it apart. busy words the error when another holds it.
func Lock(out string, busy func(lockPath string) error) (unlock func(), err error) {
	path := filepath.Join(out, lockFile)
	lock := flock.New(path)
	locked, err := lock.TryLock()
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", out, err)
	}
	if !locked {
		return nil, busy(path)
	}
	return func() { lock.Unlock() }, nil
}

// WaitLock takes the lock of out, waiting while another command holds it
// until ctx ends.
func WaitLock(ctx context.Context, out string) (unlock func(), err error) {
	lock := flock.New(filepath.Join(out, lockFile))
	if _, err := lock.TryLockContext(ctx, 200*time.Millisecond); err != nil {
		return nil, fmt.Errorf("waiting for the lock of %s: %w", out, err)
	}
	return func() { lock.Unlock() }, nil
}

// Run is one run and the files it writes: DIR/.staging/<ID>/<table>.parquet
// until published, DIR/<table>/<name> after.
type Run struct {
	ID    string    `json:"id"`
	Time  time.Time `json:"time"`
	Files []File    `json:"files"`
	// Edits are the edits of the rows of posts X reported that the run
	// applies once its files are published, Program and Codec writing the
	// files they rewrite; EditedRows counts the rows they changed.
	Edits      []plan.Edit `json:"edits,omitempty"`
	Program    Program     `json:"program,omitzero"`
	Codec      string      `json:"codec,omitempty"`
	EditedRows int64       `json:"edited_rows,omitempty"`
}

type File struct {
	Table string `json:"table"`
	Name  string `json:"name"`
	Rows  int64  `json:"rows"`
}

// fileTimeLayout names files so that name order is time order.
const fileTimeLayout = "20060102T150405.000Z"

// BeginRun names a new run, later than last (name order is time order),
// and creates its staging directory.
func BeginRun(out string, last *Run, now time.Time) (*Run, error) {
	now = now.UTC().Truncate(time.Millisecond)
	if last != nil && !now.After(last.Time) {
		now = last.Time.Add(time.Millisecond)
	}
	run := &Run{ID: newRunID(), Time: now}
	if err := dirsync.Mkdir(filepath.Join(out, stagingDir), run.ID); err != nil {
		return nil, err
	}
	return run, nil
}

func newRunID() string {
	var b [4]byte
	rand.Read(b[:]) // which never fails
	return hex.EncodeToString(b[:])
}

func (r *Run) File(table string, rows int64) File {
	return File{Table: table, Name: r.Time.Format(fileTimeLayout) + "-" + r.ID + ".parquet", Rows: rows}
}

func (r *Run) StagedPath(out, table string) string {
	return filepath.Join(out, stagingDir, r.ID, table+".parquet")
}

// Create creates the run's staged file of table, with the metadata of
// CloudQuery's file destination and the run's id, written by by.
func (r *Run) Create(out string, table *schema.Table, sourceName, codec string, by Program) (*pqfile.Writer, error) {
	return pqfile.Create(r.StagedPath(out, table.Name), table, pqfile.Options{
		SyncTime:   r.Time,
		SourceName: sourceName,
		Metadata: map[string]string{
			pqfile.MetadataPluginName:    by.Name,
			pqfile.MetadataPluginVersion: by.Version,
			"cq:export_run":              r.ID,
		},
		Codec:     codec,
		CreatedBy: by.String(),
	})
}

func FinalPath(out string, f File) string { return filepath.Join(out, f.Table, f.Name) }

// Stage syncs the run's staging directory once its files are written:
// step 1 of the protocol (docs/design/exporter.md).
func (r *Run) Stage(out string) error {
	return DiskFull(dirsync.Sync(filepath.Join(out, stagingDir, r.ID)), false)
}

func (r *Run) Abort(out string) { os.RemoveAll(filepath.Join(out, stagingDir, r.ID)) }

// Commit replaces the state with next, the run pending in it, atomically:
// step 2. On an error the caller aborts the run.
func (r *Run) Commit(out string, next *State, step func(string)) error {
	next.Pending = r
	if err := SaveState(out, next, step, "commit"); err != nil {
		return err
	}
	step("committed")
	return nil
}

// Publish moves the pending run's staged files into place (step 3),
// applies its edits, marks it published and removes its staging directory.
// A crash anywhere in it is finished by the next call.
func Publish(out string, s *State, step func(string)) error {
	run := s.Pending
	for _, f := range run.Files { // one a table
		staged, final := run.StagedPath(out, f.Table), FinalPath(out, f)
		if err := dirsync.Mkdir(out, f.Table); err != nil {
			return err
		}
		switch {
		case exists(final): // published before a crash
		case exists(staged):
			if err := os.Rename(staged, final); err != nil {
				return err
			}
			step("published " + f.Table)
		default:
			return fmt.Errorf("run %s is committed, but its file %s is neither staged (%s) nor published: was the directory changed by hand? "+
				"Run `%s`: it publishes the rest of the run, and the next export fetches again the posts the missing file held",
				run.ID, final, staged, RepairCommand(out))
		}
		if err := dirsync.Sync(filepath.Dir(final)); err != nil {
			return err
		}
	}
	if err := dirsync.Sync(filepath.Join(out, stagingDir, run.ID)); err != nil && !os.IsNotExist(err) {
		return err
	}
	step("published files synced")
	if len(run.Edits) > 0 {
		n, err := run.applyEdits(out, step)
		if err != nil {
			return fmt.Errorf("applying what X's compliance job reported (the run is committed; the next command applies it): %w", err)
		}
		run.Edits, run.EditedRows = nil, n
		step("compliance applied")
	}
	s.LastRun, s.Pending = run, nil
	if err := SaveState(out, s, step, "mark published"); err != nil {
		return err
	}
	step("marked published")
	if err := os.RemoveAll(filepath.Join(out, stagingDir, run.ID)); err != nil {
		return err
	}
	step("staging removed")
	return nil
}

// Recovery says what the start of a run repaired: the committed run whose
// publishing it finished, and the runs that never committed, whose staged
// files it deleted.
type Recovery struct {
	PublishedRun  string   `json:"published_run,omitempty"`
	DiscardedRuns []string `json:"discarded_runs,omitempty"`
}

// Recover brings the directory out back to a clean state, and returns its
// state: it finishes publishing a committed run, and deletes what runs
// and compactions that did not finish left. Every command that changes an
// archive starts with it, under the lock.
func Recover(out string, step func(string)) (*State, *Recovery, error) {
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
		if err := Publish(out, s, step); err != nil {
			return nil, nil, err
		}
	}
	entries, err := os.ReadDir(filepath.Join(out, stagingDir))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, nil, err
	}
	for _, e := range entries {
		if s.LastRun == nil || e.Name() != s.LastRun.ID { // else published, its staging not removed yet
			rec.DiscardedRuns = append(rec.DiscardedRuns, e.Name())
		}
		if err := os.RemoveAll(filepath.Join(out, stagingDir, e.Name())); err != nil {
			return nil, nil, err
		}
	}
	if len(entries) > 0 {
		if err := dirsync.Sync(filepath.Join(out, stagingDir)); err != nil {
			return nil, nil, err
		}
		step("discarded uncommitted runs")
	}
	if err := store.RemoveSpools(MediaPath(out)); err != nil {
		return nil, nil, fmt.Errorf("removing the media files a stopped run was fetching: %w", err)
	}
	if rec.PublishedRun == "" && len(rec.DiscardedRuns) == 0 {
		rec = nil
	}
	return s, rec, nil
}
