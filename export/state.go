package export

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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
}

// writeTo writes json.Marshal(s) to w (TestStateEncodingIsJSONMarshal holds
// it to that), one key and one set at a time: the walk memories and the
// written ids are most of the state, a few bytes per post held, and an
// export of many accounts would otherwise hold them twice more in memory
// (the encoded JSON, and the buffer it grew in) while it saves them.
func (s *diskState) writeTo(w io.Writer) error {
	ew := &errWriter{w: w}
	fmt.Fprintf(ew, `{"format":%d,"keys":`, s.Format)
	writeObject(ew, s.Keys, func(v string) ([]byte, error) { return json.Marshal(v) })
	ew.WriteString(`,"written":`)
	writeObject(ew, s.Written, func(set *idSet) ([]byte, error) {
		text, err := set.MarshalText() // base64: nothing to escape
		return append(append([]byte{'"'}, text...), '"'), err
	})
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
		fmt.Fprintf(ew, `,%q:`, f.name)
		ew.Write(run)
	}
	ew.WriteString("}")
	return ew.err
}

// writeObject writes m as json.Marshal does (keys sorted, null when nil),
// each value encoded by value.
func writeObject[V any](ew *errWriter, m map[string]V, value func(V) ([]byte, error)) {
	if m == nil {
		ew.WriteString("null")
		return
	}
	keys := slices.Sorted(maps.Keys(m))
	ew.WriteString("{")
	for i, k := range keys {
		if i > 0 {
			ew.WriteString(",")
		}
		key, err := json.Marshal(k)
		ew.fail(err)
		v, err := value(m[k])
		ew.fail(err)
		ew.Write(key)
		ew.WriteString(":")
		ew.Write(v)
	}
	ew.WriteString("}")
}

// errWriter keeps the first error of a sequence of writes.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) fail(err error) {
	if e.err == nil {
		e.err = err
	}
}

func (e *errWriter) Write(b []byte) (int, error) {
	if e.err != nil {
		return 0, e.err
	}
	n, err := e.w.Write(b)
	e.fail(err)
	return n, err
}

func (e *errWriter) WriteString(s string) { e.Write([]byte(s)) }

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
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return newDiskState(), nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s := &diskState{}
	if err := s.readFrom(f); err != nil {
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
	return s, nil
}

// readFrom decodes the JSON writeTo writes, one key and one set at a time,
// so that the file is not held in memory beside what it decodes to (at
// 10,000 accounts, hundreds of megabytes each).
func (s *diskState) readFrom(r io.Reader) error {
	dec := json.NewDecoder(bufio.NewReaderSize(r, 1<<20))
	err := decodeObject(dec, func(field string) error {
		switch field {
		case "format":
			return dec.Decode(&s.Format)
		case "keys":
			return decodeObject(dec, func(key string) error {
				var v string
				err := dec.Decode(&v)
				if s.Keys == nil {
					s.Keys = map[string]string{}
				}
				s.Keys[key] = v
				return err
			})
		case "written":
			return decodeObject(dec, func(uid string) error {
				var set *idSet
				if err := dec.Decode(&set); err != nil {
					return err
				}
				if set == nil {
					return fmt.Errorf("the written-id set of user %s is null", uid)
				}
				if s.Written == nil {
					s.Written = map[string]*idSet{}
				}
				s.Written[uid] = set
				return nil
			})
		case "pending":
			return dec.Decode(&s.Pending)
		case "last_run":
			return dec.Decode(&s.LastRun)
		}
		var unknown json.RawMessage
		return dec.Decode(&unknown)
	})
	if err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the state's JSON object")
	}
	return nil
}

// decodeObject reads a JSON object (or null) from dec, calling field for
// each key with the value next in dec.
func decodeObject(dec *json.Decoder, field func(key string) error) error {
	tok, err := dec.Token()
	if err != nil || tok == nil { // null
		return err
	}
	if tok != json.Delim('{') {
		return fmt.Errorf("%v where an object was expected", tok)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if err := field(tok.(string)); err != nil {
			return err
		}
	}
	_, err = dec.Token() // '}'
	return err
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
