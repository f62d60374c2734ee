package archive

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
)

// Snapshot is the committed files of an archive's tables, as one state of
// it names them, each table's directory opened once: every reader of the
// rows reads one, and sees one archive while others change it
// (docs/design/exporter.md). A file removed since fails the read with
// fs.ErrNotExist: take a new snapshot.
type Snapshot struct {
	tables map[string]*tableFiles
}

type tableFiles struct {
	dir    *os.Root          // DIR/<table> as opened; nil when it does not exist
	names  []string          // the files, in name order (time order)
	staged map[string]string // of names, those of the pending run still staged: their paths
}

// OpenSnapshot takes a snapshot of the archive in dir without its lock,
// reading the state's runs from the end of its file, where it records them.
func OpenSnapshot(dir string) (*Snapshot, error) {
	out, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	tail, err := stateTail(filepath.Join(out, stateDir, stateFile))
	if err != nil {
		return nil, err
	}
	pending, last := runAfter(tail, `,"pending":`), runAfter(tail, `,"last_run":`)
	if pending != nil {
		last = pending
	}
	return openSnapshot(out, pending, last, nil)
}

// stateTail is the end of the state file at path, which holds its runs
// (State.writeTo); nil when there is no state file.
func stateTail(path string) ([]byte, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, err
	}
	defer f.Close()
	const runs = 64 << 10 // two run records of a file per table each
	if fi, err := f.Stat(); err != nil {
		return nil, err
	} else if fi.Size() > runs {
		if _, err := f.Seek(fi.Size()-runs, io.SeekStart); err != nil {
			return nil, err
		}
	}
	return io.ReadAll(f)
}

// openSnapshot lists the files of every table of out: the published ones
// but those of skip (paths) and those of runs later than last (nil: of
// none), and those of pending, published or staged.
func openSnapshot(out string, pending, last *Run, skip map[string]bool) (*Snapshot, error) {
	s := &Snapshot{tables: map[string]*tableFiles{}}
	tables, err := TablesIn(out)
	if err != nil {
		return nil, err
	}
	var pendingFiles []File
	if pending != nil {
		pendingFiles = pending.Files
	}
	for _, f := range pendingFiles {
		tables = append(tables, f.Table)
	}
	for _, table := range tables {
		if s.tables[table] != nil {
			continue
		}
		t := &tableFiles{staged: map[string]string{}}
		s.tables[table] = t
		if fi, err := os.Stat(filepath.Join(out, table)); err == nil && fi.IsDir() {
			root, err := os.OpenRoot(filepath.Join(out, table))
			if err != nil {
				s.Close()
				return nil, err
			}
			t.dir = root
			entries, err := fs.ReadDir(root.FS(), ".")
			if err != nil {
				s.Close()
				return nil, err
			}
			for _, e := range entries {
				name := e.Name()
				if strings.HasSuffix(name, ".parquet") && !skip[filepath.Join(out, table, name)] && !laterThan(name, last) {
					t.names = append(t.names, name)
				}
			}
		}
		for _, f := range pendingFiles { // one a table
			if staged := pending.StagedPath(out, table); f.Table == table && !slices.Contains(t.names, f.Name) && exists(staged) {
				t.names = append(t.names, f.Name)
				t.staged[f.Name] = staged
			}
		}
		slices.Sort(t.names)
	}
	return s, nil
}

// Version names the archive's committed state in dir: it changes each time
// the state file is replaced. "" when there is none.
func Version(dir string) string {
	fi, err := os.Stat(filepath.Join(dir, stateDir, stateFile))
	if err != nil {
		return ""
	}
	return fmt.Sprintf("%d-%d", fi.ModTime().UnixNano(), fi.Size())
}

// laterThan says whether the file name names a time later than last's: a
// run that committed after the state a snapshot was taken of (a compaction
// names its merged files after the newest they merge).
func laterThan(name string, last *Run) bool {
	if last == nil {
		return false
	}
	stamp, _, _ := strings.Cut(name, "-")
	t, err := time.Parse(fileTimeLayout, stamp)
	return err == nil && t.After(last.Time)
}

func (s *Snapshot) Close() {
	for _, t := range s.tables {
		if t.dir != nil {
			t.dir.Close()
		}
	}
}

// Read calls batch with each record batch of the files of table, file
// after file in name order (time order), as pqfile.ReadRecords reads them:
// columns names those to read (nil: all); a column a file lacks is absent
// from its batches (Column). Its errors, batch's too, name the file.
func (s *Snapshot) Read(table string, columns []string, batch func(arrow.RecordBatch) error) error {
	return s.readFiles(table, columns, batch, func(_ string, err error) error { return err })
}

// readFiles is Read file by file: after each file, done is told its path
// and the error that stopped its read (nil: it read whole), and returns
// the error that stops the reading.
func (s *Snapshot) readFiles(table string, columns []string, batch func(arrow.RecordBatch) error, done func(path string, err error) error) error {
	t := s.tables[table]
	if t == nil {
		return nil // no file of it
	}
	for _, name := range t.names {
		if err := done(t.read(name, columns, batch)); err != nil {
			return err
		}
	}
	return nil
}

// read reads the file name where it is staged, else in the directory as
// opened, and returns its path.
func (t *tableFiles) read(name string, columns []string, batch func(arrow.RecordBatch) error) (path string, err error) {
	var f *os.File
	if path = t.staged[name]; path != "" {
		f, err = os.Open(path)
	}
	if f == nil && t.dir != nil { // published, or since the listing
		path = filepath.Join(t.dir.Name(), name)
		if f, err = t.dir.Open(name); err != nil {
			err = &fs.PathError{Op: "open", Path: path, Err: errors.Unwrap(err)}
		}
	}
	if err != nil {
		return path, err
	}
	defer f.Close()
	return path, pqfile.ReadFile(context.Background(), f, columns, batch)
}

// Column is the column name of rec as a T (such as *array.String); ok is
// false when rec has no such column, or one of another type.
func Column[T arrow.Array](rec arrow.RecordBatch, name string) (col T, ok bool) {
	if i := rec.Schema().FieldIndices(name); len(i) == 1 {
		col, ok = rec.Column(i[0]).(T)
	}
	return col, ok
}

// ReadRows calls row with each row of the files of table, as Read reads
// them: want names the columns every file must have, optional those a file
// may lack.
func (s *Snapshot) ReadRows(table string, want, optional []string, row func(c *Cols, i int)) error {
	return s.Read(table, slices.Concat(want, optional), rowsOf(want, optional, row))
}

// ReadRows is Snapshot.ReadRows of the published files of the output
// directory dir.
func ReadRows(dir, table string, want, optional []string, row func(c *Cols, i int)) error {
	snap, err := OpenSnapshot(dir)
	if err != nil {
		return err
	}
	defer snap.Close()
	return snap.ReadRows(table, want, optional, row)
}

func rowsOf(want, optional []string, row func(c *Cols, i int)) func(arrow.RecordBatch) error {
	return func(rec arrow.RecordBatch) error {
		c := &Cols{cols: map[string]arrow.Array{}}
		for _, name := range slices.Concat(want, optional) {
			if col, ok := Column[arrow.Array](rec, name); ok {
				c.cols[name] = col
			} else if slices.Contains(want, name) {
				return fmt.Errorf("it has no column %s", name)
			}
		}
		for i := range int(rec.NumRows()) {
			row(c, i)
		}
		return c.err
	}
}

// Cols are a batch's columns by name. Their values are zero when null or
// absent; a column of another type than its reader's makes the batch's
// read fail.
type Cols struct {
	cols map[string]arrow.Array
	err  error
}

// Str is the string at row i of the named column (the text of a value of
// another type), copied out of the batch.
func (c *Cols) Str(name string, i int) string { return strings.Clone(c.Raw(name, i)) }

// Raw is Str in the batch's memory, to look up, not to keep.
func (c *Cols) Raw(name string, i int) string {
	if s, ok := c.cols[name].(*array.String); ok && s.IsValid(i) {
		return s.Value(i)
	} else if a := c.cols[name]; !ok && a != nil && a.IsValid(i) {
		return a.ValueStr(i)
	}
	return ""
}

func (c *Cols) Time(name string, i int) time.Time {
	t, ok := c.cols[name].(*array.Timestamp)
	if !ok {
		c.wrongType(name, "a timestamp")
	} else if t.IsValid(i) {
		return t.Value(i).ToTime(t.DataType().(*arrow.TimestampType).Unit)
	}
	return time.Time{}
}

// Int is the integer at row i of the named column; ok is false when there
// is none.
func (c *Cols) Int(name string, i int) (n int64, ok bool) {
	a, ok := c.cols[name].(*array.Int64)
	if !ok {
		c.wrongType(name, "int64")
	}
	if ok && a.IsValid(i) {
		return a.Value(i), true
	}
	return 0, false
}

// wrongType records that the column name, if the batch has it, is not of
// the type want.
func (c *Cols) wrongType(name, want string) {
	if a := c.cols[name]; a != nil && c.err == nil {
		c.err = fmt.Errorf("its column %s is of type %s, not %s", name, a.DataType(), want)
	}
}
