package archive

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
	"github.com/cq-source-x/cq-source-x/internal/dirsync"
	"github.com/cq-source-x/cq-source-x/plan"
)

// applyEdits applies the run's edits to the files of out, as a compaction
// replaces them (docs/design/exporter.md), under the lock the caller
// holds, and returns how many rows it changed or removed.
func (r *Run) applyEdits(out string, step func(string)) (int64, error) {
	ix := plan.NewIndex(r.Edits)
	tables := map[string]bool{}
	for _, e := range r.Edits {
		tables[e.Table] = true
	}
	var changed int64
	for _, table := range slices.Sorted(maps.Keys(tables)) {
		n, err := r.applyToTable(out, table, ix, step)
		if err != nil {
			return changed, fmt.Errorf("%s: %w", table, DiskFull(err, false))
		}
		changed += n
	}
	return changed, nil
}

// applyToTable rewrites the table's files that hold rows to change, and
// removes its retired set if it holds any.
func (r *Run) applyToTable(out, table string, ix plan.Index, step func(string)) (int64, error) {
	retired := filepath.Join(out, tablesDir, table, retiredName)
	if held, _, err := r.filesToEdit(retired, table, ix); err != nil {
		return 0, err
	} else if len(held) > 0 {
		if err := removeDurably(retired); err != nil {
			return 0, err
		}
		step("compliance removed the retired files of " + table)
	}
	touched, keep, err := r.filesToEdit(filepath.Join(out, table), table, ix)
	if err != nil || len(touched) == 0 {
		return 0, err
	}
	var changed int64
	_, old, err := replaceFiles(out, table, r.Time.UTC(), keep, func(dir string) error {
		for _, name := range touched {
			stamp, _, _ := strings.Cut(name, "-")
			n, err := r.rewriteFile(filepath.Join(out, table, name), filepath.Join(dir, stamp+"-"+newRunID()+".parquet"), table, ix)
			if err != nil {
				return err
			}
			changed += n
		}
		return nil
	}, step, "compliance")
	if err != nil {
		return 0, err
	}
	if err := removeDurably(old); err != nil {
		return changed, err
	}
	step("compliance removed the old files of " + table)
	return changed, nil
}

// filesToEdit are the names of the files of dir that hold rows the edits
// change, and of the others.
func (r *Run) filesToEdit(dir, table string, ix plan.Index) (touched, others []string, err error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	for _, p := range paths {
		n, err := r.rewriteFile(p, "", table, ix)
		if err != nil {
			return nil, nil, err
		}
		if n > 0 {
			touched = append(touched, filepath.Base(p))
		} else {
			others = append(others, filepath.Base(p))
		}
	}
	return touched, others, err
}

// removeDurably removes path, and what it holds, and syncs its directory.
func removeDurably(path string) error {
	if err := os.RemoveAll(path); err != nil {
		return err
	}
	return dirsync.Sync(filepath.Dir(path))
}

// rewriteFile counts the rows of the file at path that the edits change
// and, when dst is not "", writes the file with them changed to dst.
func (r *Run) rewriteFile(path, dst, table string, ix plan.Index) (int64, error) {
	var changed int64
	put := func(w *pqfile.Writer, rec arrow.RecordBatch) error {
		edits, err := rowEdits(rec, table, ix)
		changed += int64(len(edits))
		if err != nil || w == nil {
			return err
		}
		return writeEdited(w, rec, edits)
	}
	if dst == "" {
		return changed, pqfile.ReadRecords(context.Background(), path, nil, func(rec arrow.RecordBatch) error { return put(nil, rec) })
	}
	return changed, rewrite(dst, []string{path}, r.Program, r.Codec, func(md map[string]string) {
		md["cq:compliance_applied_by"] = r.Program.String()
	}, put)
}

// edit is what happens to one row: removed, or the columns given new
// values (nil: null).
type edit struct {
	remove bool
	values map[int]*string
}

// rowEdits are the changes the edits make to the record's rows, by row;
// a row already as asked has none.
func rowEdits(rec arrow.RecordBatch, table string, ix plan.Index) (map[int]edit, error) {
	sc := rec.Schema()
	keys := map[string]arrow.Array{}
	for _, name := range append(ix.Columns(table), "user_id") {
		var ok bool
		if keys[name], ok = Column[arrow.Array](rec, name); !ok {
			return nil, fmt.Errorf("no %s column", name)
		}
	}
	edits := map[int]edit{}
	for i := 0; i < int(rec.NumRows()); i++ {
		e, ok := ix.Find(table, keys["user_id"].ValueStr(i), func(name string) string {
			if keys[name].IsNull(i) {
				return ""
			}
			return keys[name].ValueStr(i)
		})
		if !ok {
			continue
		}
		switch e.Op {
		case plan.Remove:
			edits[i] = edit{remove: true}
		case plan.Blank:
			ed := edit{values: map[int]*string{}}
			for c, f := range sc.Fields() {
				if !e.Kept(f.Name) && !rec.Column(c).IsNull(i) {
					ed.values[c] = nil
				}
			}
			if len(ed.values) > 0 {
				edits[i] = ed
			}
		case plan.Scrub:
			if c := sc.FieldIndices(e.Geo); len(c) == 1 && !rec.Column(c[0]).IsNull(i) {
				raw := rec.Column(c[0]).ValueStr(i)
				scrubbed, err := plan.WithoutGeo([]byte(raw))
				if err != nil {
					return nil, fmt.Errorf("the %s JSON of a row of %s: %w", e.Geo, e.PostID, err)
				}
				if v := string(scrubbed); v != raw {
					edits[i] = edit{values: map[int]*string{c[0]: &v}}
				}
			}
		}
	}
	return edits, nil
}

// writeEdited writes rec to w with the edits made: its other rows in
// slices between the edited ones.
func writeEdited(w *pqfile.Writer, rec arrow.RecordBatch, edits map[int]edit) error {
	write := func(part arrow.RecordBatch, err error) error {
		if err != nil {
			return err
		}
		defer part.Release()
		return w.Write(part)
	}
	start, n := int64(0), rec.NumRows()
	for i := int64(0); i <= n; i++ {
		e, edited := edits[int(i)]
		if i < n && !edited {
			continue
		}
		if err := write(rec.NewSlice(start, i), nil); err != nil {
			return err
		}
		start = i + 1
		if edited && !e.remove {
			if err := write(editedRow(rec, i, e.values)); err != nil {
				return err
			}
		}
	}
	return nil
}

// editedRow is row i of rec with the columns of values set to their value,
// or null (nil).
func editedRow(rec arrow.RecordBatch, i int64, values map[int]*string) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for c := range cols {
		v, set := values[c]
		switch {
		case !set:
			cols[c] = array.NewSlice(rec.Column(c), i, i+1)
		case v == nil:
			cols[c] = array.MakeArrayOfNull(memory.DefaultAllocator, rec.Column(c).DataType(), 1)
		default:
			b := array.NewBuilder(memory.DefaultAllocator, rec.Column(c).DataType())
			err := b.AppendValueFromString(*v)
			cols[c] = b.NewArray()
			b.Release()
			if err != nil {
				return nil, err
			}
		}
	}
	return array.NewRecordBatch(rec.Schema(), cols, 1), nil
}
