package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"time"
)

// Layout of an output directory.
const (
	stateDir    = ".state"
	stateFile   = "state.json"
	stagingDir  = ".staging"
	lockFile    = ".lock"
	stateFormat = 1
)

// diskState is DIR/.state/state.json. It is replaced atomically (write a
// temporary file, fsync, rename, fsync the directory), so it is always
// either the old or the new version.
type diskState struct {
	Format int `json:"format"`
	// Keys are the key/values the plugin's state client holds: the walk
	// memories of every account's lists.
	Keys map[string]string `json:"keys"`
	// Written lists, per user id, the post ids of the x_bookmarks rows in
	// the committed files, so a post bookmarked again after it was removed
	// (which the walk emits as new) is not written twice.
	Written map[string]*idSet `json:"written"`
	// Pending is a committed run whose files may not all be published yet.
	Pending *runRecord `json:"pending,omitempty"`
	// LastRun is the last run published.
	LastRun *runRecord `json:"last_run,omitempty"`

	// bulk is Keys and Written encoded, once: they are most of the file (a
	// few bytes per post held and written) and the same in a run's two
	// saves, commit and published mark.
	bulk *stateBulk
}

// stateBulk is the JSON of a state's Keys and Written.
type stateBulk struct {
	keys, written []byte
}

// encodeBulk encodes Keys and Written, unless done already. Neither may
// change afterwards. It can run while the run's files are still being
// closed: nothing it reads is written then.
func (s *diskState) encodeBulk() error {
	if s.bulk != nil {
		return nil
	}
	keys, err := json.Marshal(s.Keys)
	if err != nil {
		return err
	}
	// As json.Marshal(s.Written), without copying each set's text (base64:
	// nothing to escape) once more: {"<user id>":"<text>",...}, sorted.
	uids := make([]string, 0, len(s.Written))
	for uid := range s.Written {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	var written bytes.Buffer
	written.WriteByte('{')
	for i, uid := range uids {
		if i > 0 {
			written.WriteByte(',')
		}
		key, err := json.Marshal(uid)
		if err != nil {
			return err
		}
		text, err := s.Written[uid].MarshalText()
		if err != nil {
			return err
		}
		written.Grow(len(key) + len(text) + 3)
		written.Write(key)
		written.WriteString(`:"`)
		written.Write(text)
		written.WriteByte('"')
	}
	written.WriteByte('}')
	s.bulk = &stateBulk{keys: keys, written: written.Bytes()}
	return nil
}

// writeTo writes json.Marshal(s) to w, from the bulk encoded once
// (TestStateEncodingIsJSONMarshal holds it to that).
func (s *diskState) writeTo(w io.Writer) error {
	if err := s.encodeBulk(); err != nil {
		return err
	}
	head := fmt.Appendf(nil, `{"format":%d,"keys":`, s.Format)
	var tail []byte
	for _, f := range []struct {
		name string
		run  *runRecord
	}{{"pending", s.Pending}, {"last_run", s.LastRun}} {
		if f.run == nil {
			continue
		}
		run, err := json.Marshal(f.run)
		if err != nil {
			return err
		}
		tail = fmt.Appendf(tail, `,%q:`, f.name)
		tail = append(tail, run...)
	}
	tail = append(tail, '}')
	for _, part := range [][]byte{head, s.bulk.keys, []byte(`,"written":`), s.bulk.written, tail} {
		if _, err := w.Write(part); err != nil {
			return err
		}
	}
	return nil
}

// runRecord is one run and the files it writes: DIR/.staging/<ID>/<name>
// until published, DIR/<table>/<name> after.
type runRecord struct {
	ID    string       `json:"id"`
	Time  time.Time    `json:"time"`
	Files []fileRecord `json:"files"`
}

type fileRecord struct {
	Table string `json:"table"`
	Name  string `json:"name"`
	Rows  int64  `json:"rows"`
}

func (r *runRecord) stagedPath(out string, f fileRecord) string {
	return filepath.Join(out, stagingDir, r.ID, f.Table+".parquet")
}

func finalPath(out string, f fileRecord) string {
	return filepath.Join(out, f.Table, f.Name)
}

func newDiskState() *diskState {
	return &diskState{Format: stateFormat, Keys: map[string]string{}, Written: map[string]*idSet{}}
}

// loadState reads DIR/.state/state.json; a missing file is an empty state
// (a new directory).
func loadState(out string) (*diskState, error) {
	path := filepath.Join(out, stateDir, stateFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newDiskState(), nil
	}
	if err != nil {
		return nil, err
	}
	s := newDiskState()
	if err := json.Unmarshal(b, s); err != nil {
		return nil, fmt.Errorf("%s is damaged: %w", path, err)
	}
	if s.Format != stateFormat {
		return nil, fmt.Errorf("%s has format %d; this version reads format %d", path, s.Format, stateFormat)
	}
	if s.Keys == nil {
		s.Keys = map[string]string{}
	}
	if s.Written == nil {
		s.Written = map[string]*idSet{}
	}
	for uid, set := range s.Written {
		if set == nil {
			return nil, fmt.Errorf("%s is damaged: the written-id set of user %s is null", path, uid)
		}
	}
	return s, nil
}

// saveState replaces DIR/.state/state.json atomically. step marks the crash
// points: the new version written and synced under a temporary name, then
// renamed over the old one (the rename is the commit).
func saveState(out string, s *diskState, step func(string), what string) error {
	dir := filepath.Join(out, stateDir)
	if err := mkdirSynced(out, stateDir); err != nil {
		return err
	}
	return writeFileAtomic(dir, stateFile, s.writeTo, func(s string) { step(what + ": " + s) })
}

// writeFileAtomic writes name in dir (its content by write) via a synced
// temporary file renamed over it, then syncs dir so the rename is durable.
func writeFileAtomic(dir, name string, write func(io.Writer) error, step func(string)) error {
	tmp := filepath.Join(dir, name+".tmp")
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	buf := bufio.NewWriterSize(f, 1<<20)
	err = write(buf)
	if err == nil {
		err = buf.Flush()
	}
	if err == nil {
		err = f.Sync()
	}
	if err := errors.Join(err, f.Close()); err != nil {
		return err
	}
	step("temporary file synced")
	if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
		return err
	}
	step("renamed")
	return syncDir(dir)
}

// syncDir makes the entries of dir (creations, renames, removals) durable.
// Windows cannot fsync a directory (NTFS journals its metadata): no-op there.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	return errors.Join(err, d.Close())
}

// mkdirSynced creates parent/name if needed, and syncs parent when it did.
func mkdirSynced(parent, name string) error {
	path := filepath.Join(parent, name)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return err
	}
	return syncDir(parent)
}
