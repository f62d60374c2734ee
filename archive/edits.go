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

// applyToTable rewrites the table's files that hold rows to change.
func (r *Run) applyToTable(out, table string, ix plan.Index, step func(string)) (int64, error) {
	if err := r.removeRetired(out, table, ix, step); err != nil {
		return 0, err
	}
	paths, err := filepath.Glob(filepath.Join(out, table, "*.parquet"))
	if err != nil {
		return 0, err
	}
	var touched, keep []string
	for _, p := range paths {
		n, err := r.rewriteFile(p, "", table, ix)
		if err != nil {
			return 0, err
		}
		if n > 0 {
			touched = append(touched, p)
		} else {
			keep = append(keep, filepath.Base(p))
		}
	}
	if len(touched) == 0 {
		return 0, nil
	}
	var changed int64
	_, old, err := replaceFiles(out, table, r.Time.UTC(), keep, func(dir string) error {
		for _, p := range touched {
			stamp, _, _ := strings.Cut(filepath.Base(p), "-")
			n, err := r.rewriteFile(p, filepath.Join(dir, stamp+"-"+newRunID()+".parquet"), table, ix)
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
	if err := os.RemoveAll(old); err != nil {
		return changed, err
	}
	if err := dirsync.Sync(filepath.Dir(old)); err != nil {
		return changed, err
	}
	step("compliance removed the old files of " + table)
	return changed, nil
}

// removeRetired removes the table's retired set when it holds rows of the
// reported posts.
func (r *Run) removeRetired(out, table string, ix plan.Index, step func(string)) error {
	retired := filepath.Join(out, tablesDir, table, retiredName)
	paths, err := filepath.Glob(filepath.Join(retired, "*.parquet"))
	if err != nil {
		return err
	}
	for _, p := range paths {
		n, err := r.rewriteFile(p, "", table, ix)
		if err != nil {
			return err
		}
		if n == 0 {
			continue
		}
		if err := os.RemoveAll(retired); err != nil {
			return err
		}
		if err := dirsync.Sync(filepath.Dir(retired)); err != nil {
			return err
		}
		step("compliance removed the retired files of " + table)
		return nil
	}
	return nil
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
	users, ok := Column[arrow.Array](rec, "user_id")
	if !ok {
		return nil, fmt.Errorf("no user_id column")
	}
	keys := map[string]arrow.Array{}
	for _, name := range ix.Columns(table) {
		if keys[name], ok = Column[arrow.Array](rec, name); !ok {
			return nil, fmt.Errorf("no %s column", name)
		}
	}
	edits := map[int]edit{}
	for i := 0; i < int(rec.NumRows()); i++ {
		e, ok := ix.Find(table, users.ValueStr(i), func(name string) string {
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

// writeEdited writes rec to w with the edits made.
func writeEdited(w *pqfile.Writer, rec arrow.RecordBatch, edits map[int]edit) error {
	write := func(from, to int64, values map[int]*string) error {
		cols := make([]arrow.Array, rec.NumCols())
		defer func() {
			for _, c := range cols {
				if c != nil {
					c.Release()
				}
			}
		}()
		for c := range cols {
			var err error
			if v, set := values[c]; set {
				cols[c], err = valueArray(rec.Column(c).DataType(), v)
			} else {
				cols[c] = array.NewSlice(rec.Column(c), from, to)
			}
			if err != nil {
				return err
			}
		}
		part := array.NewRecordBatch(rec.Schema(), cols, to-from)
		defer part.Release()
		return w.Write(part)
	}
	start, n := int64(0), rec.NumRows()
	for i := int64(0); i <= n; i++ {
		e, edited := edits[int(i)]
		if i < n && !edited {
			continue
		}
		if err := write(start, i, nil); err != nil {
			return err
		}
		start = i + 1
		if edited && !e.remove {
			if err := write(i, i+1, e.values); err != nil {
				return err
			}
		}
	}
	return nil
}

// valueArray is an array of one value of type dt: v, or null.
func valueArray(dt arrow.DataType, v *string) (arrow.Array, error) {
	if v == nil {
		return array.MakeArrayOfNull(memory.DefaultAllocator, dt, 1), nil
	}
	b := array.NewBuilder(memory.DefaultAllocator, dt)
	defer b.Release()
	if err := b.AppendValueFromString(*v); err != nil {
		return nil, err
	}
	return b.NewArray(), nil
}
