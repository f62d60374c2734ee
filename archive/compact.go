package archive

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
)

type CompactOptions struct {
	Tables []string // none means every table
	// CurrentMonth merges the files of the current month (UTC) too; by
	// default only months that are over are, so that a month's files are
	// merged once.
	CurrentMonth bool
	DryRun       bool
	Compression  string // "" is pqfile.DefaultCodec
	Now          func() time.Time
	Program      Program
	Step         func(name string) // called at each step that matters for crash safety
}

type CompactReport struct {
	Out    string            `json:"out"`
	DryRun bool              `json:"dry_run"`
	Tables []TableCompaction `json:"tables"`
}

type TableCompaction struct {
	Table       string        `json:"table"`
	FilesBefore int           `json:"files_before"`
	FilesAfter  int           `json:"files_after"`
	Merged      []MergedFiles `json:"merged,omitempty"`
	Generation  string        `json:"generation,omitempty"` // the directory the table links to now
}

// MergedFiles is one month's files of one schema, merged into one file.
type MergedFiles struct {
	Month string `json:"month"`
	Files int    `json:"files"`
	Rows  int64  `json:"rows"`
	Name  string `json:"name,omitempty"`
}

// Compact merges each month's files of each table into one file, under
// the export's lock, as docs/export.md ("Compaction") tells: a merged file
// holds its inputs' rows, in their order, with their _cq_sync_time; files
// of different columns (written by different versions) are merged apart.
func Compact(dir string, o CompactOptions) (*CompactReport, error) {
	out, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Step == nil {
		o.Step = func(string) {}
	}
	tables, err := compactTables(out, o.Tables)
	if err != nil {
		return nil, err
	}
	if files, err := publishedFiles(out); err != nil {
		return nil, err
	} else if len(files) == 0 {
		return nil, fmt.Errorf("%s holds no exported file: nothing to compact", out)
	}
	unlock, err := Lock(out, func(lock string) error {
		return fmt.Errorf("an export is running in %s (it holds %s); compact it when it has finished", out, lock)
	})
	if err != nil {
		return nil, err
	}
	defer unlock()
	if _, _, err := Recover(out, o.Step); err != nil {
		return nil, fmt.Errorf("recovering %s: %w", out, DiskFull(err, true))
	}

	rep := &CompactReport{Out: out, DryRun: o.DryRun}
	now := o.Now().UTC()
	for _, table := range tables {
		plan, err := planCompaction(out, table, now, o.CurrentMonth)
		if err != nil {
			return rep, fmt.Errorf("%s: %w", table, err)
		}
		tc := plan.report()
		if len(plan.groups) > 0 && !o.DryRun {
			if err := plan.run(out, now, o, &tc); err != nil {
				return rep, fmt.Errorf("compacting %s (readers still see its files as they were): %w", table, DiskFull(err, false))
			}
		}
		rep.Tables = append(rep.Tables, tc)
	}
	return rep, nil
}

func compactTables(out string, asked []string) ([]string, error) {
	if len(asked) == 0 {
		return TablesIn(out)
	}
	for _, t := range asked {
		if !isTableName(t) {
			return nil, fmt.Errorf("%q is not a table's name", t)
		}
	}
	return slices.Compact(slices.Sorted(slices.Values(asked))), nil
}

type compactionPlan struct {
	table  string
	files  []string // names in DIR/<table>, in name order
	groups []*mergeGroup
}

// mergeGroup is the files of one month and one schema, in name order.
type mergeGroup struct {
	month string
	files []string
	rows  int64
	name  string // the merged file's, once written
}

// planCompaction groups the table's files by month (of the run that wrote
// them, from their names) and columns. Files whose names are not an
// export's, and the current month's unless asked, stay as they are.
func planCompaction(out, table string, now time.Time, currentMonth bool) (*compactionPlan, error) {
	paths, err := filepath.Glob(filepath.Join(out, table, "*.parquet"))
	if err != nil {
		return nil, err
	}
	p := &compactionPlan{table: table}
	byKey := map[string]*mergeGroup{}
	var order []*mergeGroup
	for _, path := range paths {
		name := filepath.Base(path)
		p.files = append(p.files, name)
		stamp, _, _ := strings.Cut(name, "-")
		t, err := time.Parse(fileTimeLayout, stamp)
		if err != nil {
			continue
		}
		month := t.UTC().Format("2006-01")
		if month == now.Format("2006-01") && !currentMonth {
			continue
		}
		sc, rows, err := pqfile.ReadSchema(path)
		if err != nil {
			return nil, fmt.Errorf("%s: run `%s`, which moves a damaged file aside, then compact again", cannotRead(err), RepairCommand(out))
		}
		key := month + "\n" + columnsKey(sc)
		g := byKey[key]
		if g == nil {
			g = &mergeGroup{month: month}
			byKey[key] = g
			order = append(order, g)
		}
		g.files = append(g.files, name)
		g.rows += rows
	}
	p.groups = slices.DeleteFunc(order, func(g *mergeGroup) bool { return len(g.files) < 2 })
	return p, nil
}

func columnsKey(sc *arrow.Schema) string {
	var b strings.Builder
	for _, f := range sc.Fields() {
		fmt.Fprintf(&b, "%s %s %t\n", f.Name, f.Type, f.Nullable)
	}
	return b.String()
}

func (p *compactionPlan) report() TableCompaction {
	tc := TableCompaction{Table: p.table, FilesBefore: len(p.files), FilesAfter: len(p.files)}
	for _, g := range p.groups {
		tc.FilesAfter -= len(g.files) - 1
		tc.Merged = append(tc.Merged, MergedFiles{Month: g.month, Files: len(g.files), Rows: g.rows})
	}
	return tc
}

// run makes the table a new generation of its files, the groups merged,
// and retires the old one.
func (p *compactionPlan) run(out string, now time.Time, o CompactOptions, tc *TableCompaction) error {
	keep := slices.DeleteFunc(slices.Clone(p.files), func(f string) bool {
		return slices.ContainsFunc(p.groups, func(g *mergeGroup) bool { return slices.Contains(g.files, f) })
	})
	gen, old, err := replaceFiles(out, p.table, now, keep, func(dir string) error {
		for i, g := range p.groups {
			if err := g.merge(out, p.table, dir, o); err != nil {
				return err
			}
			tc.Merged[i].Name = g.name
			o.Step("compact merged " + p.table)
		}
		return nil
	}, o.Step, "compact")
	if err != nil {
		return err
	}
	tc.Generation = filepath.Join(tablesDir, p.table, gen)
	if err := retire(out, p.table, old); err != nil {
		return fmt.Errorf("the table is compacted; retiring its old files (%s) failed, and the next export or compaction does: %w", old, err)
	}
	o.Step("compact retired " + p.table)
	return nil
}

// merge writes the group's rows, file after file, into one file in dir,
// named after the newest file's time so that name order stays time order,
// and checks that it holds them all.
func (g *mergeGroup) merge(out, table, dir string, o CompactOptions) error {
	stamp, _, _ := strings.Cut(g.files[len(g.files)-1], "-")
	g.name = stamp + "-" + newRunID() + ".parquet"
	path, srcs := filepath.Join(dir, g.name), []string{}
	for _, f := range g.files {
		srcs = append(srcs, filepath.Join(out, table, f))
	}
	err := rewrite(path, srcs, o.Program, o.Compression, func(md map[string]string) {
		delete(md, "cq:export_run")
		md["cq:compacted_from"] = strings.Join(g.files, ",")
		md["cq:compacted_by"] = o.Program.String()
	}, (*pqfile.Writer).Write)
	if err != nil {
		return fmt.Errorf("merging: %w", err)
	}
	_, rows, err := pqfile.ReadSchema(path)
	if err != nil {
		return fmt.Errorf("checking the merged file: %w", err)
	}
	if rows != g.rows {
		return fmt.Errorf("the merged file %s holds %d rows, its %d files %d", path, rows, len(g.files), g.rows)
	}
	return nil
}

// rewrite writes the rows of the files srcs, file after file, to a new
// file dst as put writes each batch: a file of the newest's schema, its
// metadata changed by md, written by by with codec.
func rewrite(dst string, srcs []string, by Program, codec string, md func(map[string]string), put func(*pqfile.Writer, arrow.RecordBatch) error) error {
	sc, _, err := pqfile.ReadSchema(srcs[len(srcs)-1])
	if err != nil {
		return err
	}
	m := sc.Metadata().ToMap()
	md(m)
	meta := arrow.MetadataFrom(m)
	w, err := pqfile.CreateWritten(dst, arrow.NewSchema(sc.Fields(), &meta), pqfile.Options{Codec: codec, CreatedBy: by.String()})
	if err != nil {
		return err
	}
	for _, src := range srcs {
		if err := pqfile.ReadRecords(context.Background(), src, nil, func(rec arrow.RecordBatch) error { return put(w, rec) }); err != nil {
			w.Close()
			return err
		}
	}
	return w.Close()
}

func (rep *CompactReport) WriteText(w io.Writer) {
	before, after := 0, 0
	for _, tc := range rep.Tables {
		before, after = before+tc.FilesBefore, after+tc.FilesAfter
		if len(tc.Merged) == 0 {
			fmt.Fprintf(w, "%-24s %d file(s): nothing to merge\n", tc.Table, tc.FilesBefore)
			continue
		}
		fmt.Fprintf(w, "%-24s %d file(s) -> %d\n", tc.Table, tc.FilesBefore, tc.FilesAfter)
		for _, m := range tc.Merged {
			into := ""
			if m.Name != "" {
				into = " into " + m.Name
			}
			fmt.Fprintf(w, "  %s: %d files, %d rows%s\n", m.Month, m.Files, m.Rows, into)
		}
	}
	switch {
	case before == after:
		fmt.Fprintln(w, "Nothing to compact: each month has one file per table (the current month's are merged once it is over, or with --current-month).")
	case rep.DryRun:
		fmt.Fprintf(w, "Dry run: %d files would become %d; nothing was changed.\n", before, after)
	default:
		fmt.Fprintf(w, "Compacted: %d files are now %d, holding the same rows. Readers of DIR/<table>/*.parquet saw the old files or the new ones, never both.\n", before, after)
	}
}
