package archive

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/internal/dirsync"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/resources"
)

// What X's compliance job reported, applied to the files (compliance.on_change):
// the rows of the reported posts are rewritten in place, with compaction's
// machinery. For each table that holds such rows, a new generation holds
// the files rewritten (redacted rows with their content columns null,
// deleted rows left out, a scrub_geo post's JSON without its geo) and the
// others hard linked; DIR/<table> is switched to it atomically, so a reader
// sees the old set or the new one; and the old set is removed at once,
// not kept until the next compaction as compaction keeps it: it holds the
// content X's Developer Policy asks to delete. So is a retired set that
// holds the posts' rows (compaction's, or one a crash left). (A reader still listing the
// old set may then fail to open a file it listed: an error, not rows
// silently missing.) A crash before a table's switch leaves its old set,
// which the next command's Recover cleans up, and the state still records
// the actions as not applied: the next export applies them again. Rows
// already as asked are left alone, so a table switched before the crash
// is not rewritten twice.

// complianceTables are the tables whose rows are a post's: x_bookmarks,
// its content tables, and x_media_files (the URLs of its media).
// x_bookmark_referenced_posts and x_media_files also hold the posts
// bookmarks reference: their column refColumn names those.
var complianceTables = []string{resources.BookmarksTable, resources.BookmarkAuthorsTable, resources.BookmarkMediaTable, resources.ReferencedPostsTable, resources.MediaFilesTable}

var refColumn = map[string]string{resources.ReferencedPostsTable: "referenced_post_id", resources.MediaFilesTable: "media_post_id"}

// actions are the actions of the reported posts by "user_id/post_id": as
// bookmarks (posts), and as posts bookmarks reference (refs).
type actions struct{ posts, refs map[string]compliance.Action }

// ApplyCompliance applies the actions to the files of out, under the lock
// the caller holds, and returns how many rows it changed or removed.
// codec is the rewritten files' compression.
func ApplyCompliance(out string, acts []compliance.AccountActions, codec string, now time.Time, step func(string)) (int64, error) {
	byKey := actions{posts: map[string]compliance.Action{}, refs: map[string]compliance.Action{}}
	for _, a := range acts {
		for _, p := range a.Posts {
			if p.Bookmarked {
				byKey.posts[a.UserID+"/"+p.PostID] = p.Action
			}
			if p.Referenced {
				byKey.refs[a.UserID+"/"+p.PostID] = p.Action
			}
		}
	}
	var changed int64
	for _, table := range complianceTables {
		n, err := applyToTable(out, table, byKey, codec, now, step)
		if err != nil {
			return changed, fmt.Errorf("%s: %w", table, DiskFull(err, false))
		}
		changed += n
	}
	return changed, nil
}

// applyToTable rewrites the table's files that hold rows to change.
func applyToTable(out, table string, byKey actions, codec string, now time.Time, step func(string)) (int64, error) {
	if err := removeRetired(out, table, byKey, step); err != nil {
		return 0, err
	}
	paths, err := filepath.Glob(filepath.Join(out, table, "*.parquet"))
	if err != nil {
		return 0, err
	}
	sort.Strings(paths)
	var touched []string
	for _, p := range paths {
		n, err := rewriteFile(p, "", table, byKey, codec)
		if err != nil {
			return 0, err
		}
		if n > 0 {
			touched = append(touched, p)
		}
	}
	if len(touched) == 0 {
		return 0, nil
	}
	gen, genDir, err := newGeneration(out, table, now.UTC())
	if err != nil {
		return 0, err
	}
	var changed int64
	for _, p := range paths {
		name := filepath.Base(p)
		if !slices.Contains(touched, p) {
			if err := os.Link(p, filepath.Join(genDir, name)); err != nil {
				return 0, err
			}
			continue
		}
		stamp, _, _ := strings.Cut(name, "-")
		n, err := rewriteFile(p, filepath.Join(genDir, stamp+"-"+newRunID()+".parquet"), table, byKey, codec)
		if err != nil {
			return 0, err
		}
		changed += n
	}
	if err := dirsync.Sync(genDir); err != nil {
		return 0, err
	}
	step("compliance staged " + table)
	old, err := switchGeneration(out, table, gen)
	if err != nil {
		return 0, err
	}
	step("compliance committed " + table)
	if err := os.RemoveAll(old); err != nil {
		return changed, err
	}
	if err := dirsync.Sync(filepath.Dir(old)); err != nil {
		return changed, err
	}
	step("compliance removed the old files of " + table)
	return changed, nil
}

// removeRetired removes the table's retired set (compaction's, or one a
// crash between a switch and the removal of the old set left) when it
// holds rows of the reported posts.
func removeRetired(out, table string, byKey actions, step func(string)) error {
	retired := filepath.Join(out, tablesDir, table, retiredName)
	paths, err := filepath.Glob(filepath.Join(retired, "*.parquet"))
	if err != nil {
		return err
	}
	for _, p := range paths {
		n, err := rewriteFile(p, "", table, byKey, "")
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

// rewriteFile counts the rows of the file at path that the actions change
// and, when dst is not "", writes the file with them changed to dst.
func rewriteFile(path, dst, table string, byKey actions, codec string) (int64, error) {
	sc, _, err := pqfile.ReadSchema(path)
	if err != nil {
		return 0, err
	}
	var w *pqfile.Writer
	if dst != "" {
		md := sc.Metadata().ToMap()
		md["cq:compliance_applied_by"] = "cq-source-x " + xplugin.Version
		meta := arrow.MetadataFrom(md)
		sc = arrow.NewSchema(sc.Fields(), &meta)
		if w, err = pqfile.CreateWritten(dst, sc, pqfile.Options{Codec: codec, CreatedBy: "cq-source-x " + xplugin.Version}); err != nil {
			return 0, err
		}
	}
	var changed int64
	err = pqfile.ReadRecords(context.Background(), path, nil, func(rec arrow.RecordBatch) error {
		edits, err := rowEdits(rec, table, byKey)
		if err != nil {
			return err
		}
		changed += int64(len(edits))
		if w == nil {
			return nil
		}
		next, err := applyEdits(rec, sc, edits)
		if err != nil {
			return err
		}
		defer next.Release()
		return w.Write(next)
	})
	if w != nil {
		if cerr := w.Close(); err == nil {
			err = cerr
		}
	}
	return changed, err
}

// edit is what happens to one row: removed, or the columns given new
// values (nil: null).
type edit struct {
	remove bool
	values map[int]*string
}

// rowEdits are the changes the actions make to the record's rows, by row;
// a row already as asked has none.
func rowEdits(rec arrow.RecordBatch, table string, byKey actions) (map[int]edit, error) {
	sc := rec.Schema()
	column := func(name string) arrow.Array {
		if c := sc.FieldIndices(name); len(c) == 1 {
			return rec.Column(c[0])
		}
		return nil
	}
	uc, pc, rc := column("user_id"), column("post_id"), column(refColumn[table])
	if uc == nil || pc == nil || (refColumn[table] != "" && rc == nil) {
		return nil, fmt.Errorf("no user_id, post_id or %s column", refColumn[table])
	}
	edits := map[int]edit{}
	for i := 0; i < int(rec.NumRows()); i++ {
		act, ref := byKey.posts[uc.ValueStr(i)+"/"+pc.ValueStr(i)], compliance.Keep
		if rc != nil && !rc.IsNull(i) {
			ref = byKey.refs[uc.ValueStr(i)+"/"+rc.ValueStr(i)]
		}
		bookmarks := table == resources.BookmarksTable
		switch {
		case ref >= compliance.Redact, !bookmarks && act >= compliance.Redact, bookmarks && act == compliance.Delete:
			edits[i] = edit{remove: true}
		case bookmarks && act == compliance.Redact:
			e := edit{values: map[int]*string{}}
			for c, f := range sc.Fields() {
				if !resources.KeptWhenRedacted(f.Name) && !rec.Column(c).IsNull(i) {
					e.values[c] = nil
				}
			}
			if len(e.values) > 0 {
				edits[i] = e
			}
		case bookmarks && act == compliance.ScrubGeo, table == resources.ReferencedPostsTable && ref == compliance.ScrubGeo:
			if c := sc.FieldIndices("post"); len(c) == 1 && !rec.Column(c[0]).IsNull(i) {
				raw := rec.Column(c[0]).ValueStr(i)
				scrubbed, err := resources.WithoutGeo([]byte(raw))
				if err != nil {
					return nil, fmt.Errorf("the post JSON of a row of %s: %w", pc.ValueStr(i), err)
				}
				if v := string(scrubbed); v != raw {
					edits[i] = edit{values: map[int]*string{c[0]: &v}}
				}
			}
		}
	}
	return edits, nil
}

// applyEdits is rec with the edits made, as a record of sc.
func applyEdits(rec arrow.RecordBatch, sc *arrow.Schema, edits map[int]edit) (arrow.RecordBatch, error) {
	n := int(rec.NumRows())
	kept := 0
	for i := 0; i < n; i++ {
		if !edits[i].remove {
			kept++
		}
	}
	cols := make([]arrow.Array, rec.NumCols())
	defer func() {
		for _, c := range cols {
			if c != nil {
				c.Release()
			}
		}
	}()
	for c := range cols {
		var parts []arrow.Array
		start := 0
		flush := func(end int) {
			if end > start {
				parts = append(parts, array.NewSlice(rec.Column(c), int64(start), int64(end)))
			}
		}
		for i := 0; i < n; i++ {
			e, ok := edits[i]
			if !ok {
				continue
			}
			v, set := e.values[c]
			if !e.remove && !set {
				continue
			}
			flush(i)
			start = i + 1
			if e.remove {
				continue
			}
			one, err := valueArray(rec.Column(c).DataType(), v)
			if err != nil {
				return nil, err
			}
			parts = append(parts, one)
		}
		flush(n)
		var err error
		if len(parts) == 0 {
			cols[c] = array.MakeArrayOfNull(memory.DefaultAllocator, rec.Column(c).DataType(), 0)
		} else {
			cols[c], err = array.Concatenate(parts, memory.DefaultAllocator)
		}
		for _, p := range parts {
			p.Release()
		}
		if err != nil {
			return nil, err
		}
	}
	return array.NewRecordBatch(sc, cols, int64(kept)), nil
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
