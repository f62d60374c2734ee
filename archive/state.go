package archive

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/ids"
	"github.com/cq-source-x/cq-source-x/internal/dirsync"
	jsonv2 "github.com/go-json-experiment/json"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// stateFormat is the format this version writes; it reads 1 too.
const stateFormat = 2

// State is DIR/.state/state.json, replaced atomically (SaveState); see
// docs/design/exporter.md, "The state file".
type State struct {
	Format int               `json:"format"`
	Keys   map[string]string `json:"keys"` // the plugin's state keys
	// Written are format 1's posts written, by user id.
	Written map[string]*ids.Set `json:"written,omitempty"`
	// Stray are, by content table and user id, the posts whose rows no
	// x_bookmarks file backs.
	Stray   map[string]map[string]*ids.Set `json:"stray,omitempty"`
	Pending *Run                           `json:"pending,omitempty"`  // committed, maybe not all published
	LastRun *Run                           `json:"last_run,omitempty"` // the last run published
}

// writeTo writes json.Marshal(s), in this version's format, streamed.
func (s *State) writeTo(w io.Writer) error {
	out := *s
	out.Format = stateFormat
	return jsonv2.MarshalWrite(w, &out, jsonv1.DefaultOptionsV1())
}

func newState() *State {
	return &State{Format: stateFormat, Keys: map[string]string{}}
}

// Load reads the committed state of the archive in dir, without
// recovering it or taking its lock.
func Load(dir string) (*State, error) {
	out, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	return loadState(out)
}

// loadState reads DIR/.state/state.json: a missing one is an empty state
// only where there is no exported file, and it must know the files.
func loadState(out string) (*State, error) {
	path := filepath.Join(out, stateDir, stateFile)
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		if files, err := publishedFiles(out); err != nil {
			return nil, err
		} else if len(files) > 0 {
			return nil, &StateError{Dir: out, Problem: fmt.Sprintf("%s is missing, but the directory holds exported files (%s)", path, files[0])}
		}
		return newState(), nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := decodeState(f)
	if err != nil {
		if errors.Is(err, errNewerFormat) {
			return nil, fmt.Errorf("%s %w", path, err)
		}
		return nil, &StateError{Dir: out, Problem: fmt.Sprintf("%s is damaged: %v", path, err)}
	}
	if err := s.knowsFiles(out, path); err != nil {
		return nil, err
	}
	return s, nil
}

// knowsFiles checks that s (read from path) records a run no earlier than
// the newest file of out.
func (s *State) knowsFiles(out, path string) error {
	var known time.Time // the latest run the state records
	for _, run := range []*Run{s.LastRun, s.Pending} {
		if run != nil && run.Time.After(known) {
			known = run.Time
		}
	}
	newest, run, err := newestExportedFile(out, nil)
	switch {
	case err != nil:
		return err
	case run == nil:
		return nil
	case known.IsZero():
		return &StateError{Dir: out, Problem: fmt.Sprintf("%s records no export, but the directory holds exported files (%s): it is not this directory's state", path, newest)}
	case run.Time.After(known):
		return &StateError{Dir: out, Problem: fmt.Sprintf("%s is older than the files beside it: %s was written after the last export it records (%s), so it is not this directory's state (restored from a backup, or copied from elsewhere?)",
			path, newest, known.Format("2006-01-02 15:04:05.000 MST"))}
	}
	return nil
}

// newestExportedFile is the file of out named after the latest time, and
// the run its name names (none: "" and nil), passing over the files of the
// run skip, and the files not named as an export names them.
func newestExportedFile(out string, skip *Run) (path string, run *Run, err error) {
	paths, err := publishedFiles(out)
	for _, p := range paths {
		stamp, id, ok := strings.Cut(strings.TrimSuffix(filepath.Base(p), ".parquet"), "-")
		t, err := time.Parse(fileTimeLayout, stamp)
		if ok && err == nil && isRunID(id) && (skip == nil || id != skip.ID) && (run == nil || t.After(run.Time)) {
			path, run = p, &Run{ID: id, Time: t}
		}
	}
	return path, run, err
}

// publishedFiles are the paths of DIR/<table>/*.parquet, in table then
// name order.
func publishedFiles(out string) ([]string, error) {
	tables, err := TablesIn(out)
	if err != nil {
		return nil, err
	}
	var paths []string
	for _, table := range tables {
		found, err := filepath.Glob(filepath.Join(out, table, "*.parquet"))
		if err != nil {
			return nil, err
		}
		paths = append(paths, found...)
	}
	return paths, nil
}

// StateError is a state that cannot be used as it is: damaged, or lost
// beside the files it described. `cq-source-x repair` rebuilds it.
type StateError struct {
	Dir     string // the output directory
	Problem string
}

func (e *StateError) Error() string {
	return fmt.Sprintf("%s. Nothing was fetched or written. Run `%s` to rebuild the state from the files: "+
		"it keeps what is intact, and no row is ever written twice (docs/export.md, \"When something goes wrong\")",
		e.Problem, RepairCommand(e.Dir))
}

func RepairCommand(dir string) string {
	return "cq-source-x repair --out " + ShellQuote(dir)
}

// ShellQuote quotes s for a POSIX shell, when it needs it.
func ShellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./:@+=,") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// decodeState decodes and checks a state file: anything this program does
// not write is damaged. Every walk memory is decoded too, so that a damaged
// one stops the export before anything is billed.
func decodeState(r io.Reader) (*State, error) {
	var s *State
	if err := jsonv2.UnmarshalRead(r, &s, jsonv1.DefaultOptionsV1()); err != nil {
		var te *jsonv1.UnmarshalTypeError
		if errors.As(err, &te) && (te.Type.Kind() == reflect.Map || te.Field == "") { // the state's objects
			return nil, fmt.Errorf("%s where an object was expected", jsonKinds[te.Value])
		}
		return nil, err
	}
	switch {
	case s == nil:
		return nil, errors.New("null where an object was expected")
	case s.Format > stateFormat:
		return nil, fmt.Errorf("has format %d; this version reads format %d: %w", s.Format, stateFormat, errNewerFormat)
	case s.Format == 0:
		return nil, errors.New("it holds no state (\"format\" is missing)")
	case s.Format != stateFormat && s.Format != 1:
		return nil, fmt.Errorf("\"format\" is %d", s.Format)
	case s.Keys == nil:
		return nil, errors.New("its walk memories (\"keys\") are missing")
	case s.Format == 1 && s.Written == nil:
		return nil, errors.New("its written-id sets (\"written\") are missing")
	}
	maps.DeleteFunc(s.Keys, func(key, _ string) bool { return isArchivedKey(key) })
	if err := nullSet(s.Written, "the written-id set"); err != nil {
		return nil, err
	}
	for table, sets := range s.Stray {
		if !isTableName(table) {
			return nil, fmt.Errorf("stray rows of %q, which is not a table's name", table)
		}
		if err := nullSet(sets, "the stray rows of "+table); err != nil {
			return nil, err
		}
	}
	for _, run := range []*Run{s.Pending, s.LastRun} {
		if err := run.check(); err != nil {
			return nil, err
		}
	}
	for key, value := range s.Keys {
		if _, err := account.CheckKey(key, value); err != nil {
			return nil, fmt.Errorf("the state key %s is damaged: %w", key, err)
		}
	}
	return s, nil
}

// jsonKinds name, for a person, the kinds of JSON value jsonv1's errors name.
var jsonKinds = map[string]string{"string": "a string", "number": "a number", "bool": "true or false", "array": "an array"}

var errNewerFormat = errors.New("use the cq-source-x that wrote it, or a newer one")

// nullSet refuses a null among sets, named what in its error.
func nullSet(sets map[string]*ids.Set, what string) error {
	for uid, set := range sets {
		if set == nil {
			return fmt.Errorf("%s of user %s is null", what, uid)
		}
	}
	return nil
}

// check refuses a run record that is not one this program writes: its id
// and file names become paths (a staging directory removed, files renamed),
// which must stay inside the output directory.
func (r *Run) check() error {
	if r == nil {
		return nil
	}
	if !isRunID(r.ID) {
		return fmt.Errorf("run id %q is not a run id", r.ID)
	}
	for _, f := range r.Files {
		if !isTableName(f.Table) || f.Name != r.Time.UTC().Format(fileTimeLayout)+"-"+r.ID+".parquet" {
			return fmt.Errorf("run %s: file %q of table %q is not a file of that run", r.ID, f.Name, f.Table)
		}
	}
	for _, e := range r.Edits {
		if !isTableName(e.Table) {
			return fmt.Errorf("run %s: an edit of %q, which is not a table's name", r.ID, e.Table)
		}
	}
	return nil
}

// isRunID reports whether id is a run id, as newRunID makes them.
func isRunID(id string) bool {
	return len(id) == 8 && strings.Trim(id, "0123456789abcdef") == ""
}

// isArchivedKey reports whether key is where versions before the
// accounts' records kept their archived post ids, which a state leaves out.
func isArchivedKey(key string) bool {
	k, _ := account.ParseKey(key)
	return k.Kind == account.ArchivedIDs
}

// TablesIn are the tables whose files out holds, in name order: the
// entries of out that are neither hidden nor its media store, and the
// tables a compaction has generations, or a switch left a link, of.
func TablesIn(out string) ([]string, error) {
	names := map[string]bool{}
	entries, err := os.ReadDir(out)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if swapped, ok := strings.CutSuffix(strings.TrimPrefix(e.Name(), "."), ".swap"); ok && strings.HasPrefix(e.Name(), ".") {
			names[swapped] = true
		} else if !strings.HasPrefix(e.Name(), ".") && e.Name() != mediaDir {
			names[e.Name()] = true
		}
	}
	compacted, err := os.ReadDir(filepath.Join(out, tablesDir))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	for _, e := range compacted {
		names[e.Name()] = true
	}
	return slices.Sorted(maps.Keys(names)), nil
}

// isTableName reports whether name is a table's name as the plugin names
// them: it becomes a path.
func isTableName(name string) bool {
	return name != "" && name != mediaDir && strings.Trim(name, "abcdefghijklmnopqrstuvwxyz0123456789_") == ""
}

// ForeignEntries are the entries of dir, in name order, that no export
// makes there: named after none of tables, and not hidden (an export's
// own entries are; so is a desktop's .DS_Store).
func ForeignEntries(dir string, tables []string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	var foreign []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), ".") && !slices.Contains(tables, e.Name()) && !isMediaDir(dir, e) {
			foreign = append(foreign, e.Name())
		}
	}
	return foreign, nil
}

// isMediaDir reports whether e, an entry of the output directory dir, is
// its media store: the directory media holding the spool the store
// creates as it opens (.tmp).
func isMediaDir(dir string, e fs.DirEntry) bool {
	if e.Name() != mediaDir || !e.IsDir() {
		return false
	}
	fi, err := os.Stat(filepath.Join(dir, mediaDir, ".tmp"))
	return err == nil && fi.IsDir()
}

func HasFiles(out, table string) bool {
	files, _ := filepath.Glob(filepath.Join(out, table, "*.parquet"))
	return len(files) > 0
}

// SaveState replaces DIR/.state/state.json atomically; step marks the
// crash points, named after what.
func SaveState(out string, s *State, step func(string), what string) error {
	dir := filepath.Join(out, stateDir)
	if err := dirsync.Mkdir(out, stateDir); err != nil {
		return err
	}
	return dirsync.WriteFile(dir, stateFile, s.writeTo, func(s string) { step(what + ": " + s) })
}

// ArchivedPosts are, per user id, the posts of the x_bookmarks rows in the
// committed files: those the accounts' records name, or, for an account a
// state of format 1 kept no record of, its written ids.
func (s *State) ArchivedPosts() (map[string]ids.Sorted, error) {
	out := map[string]ids.Sorted{}
	for uid, set := range s.Written {
		out[uid] = set.Numbers()
	}
	for key, value := range s.Keys {
		if k, ok := account.ParseKey(key); ok && k.Kind == account.ArchivedRecord {
			rec, err := archived.Unmarshal(value, "the state key "+key)
			if err != nil {
				return nil, err
			}
			out[k.User] = rec.Bookmarks()
		}
	}
	return out, nil
}
