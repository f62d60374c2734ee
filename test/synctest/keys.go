package synctest

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
	"github.com/cq-source-x/cq-source-x/resources"
)

// Snapshot tables are written whole by every run that has them: a key
// repeats from run to run, never within one (_cq_sync_time).
var snapshotTables = map[string]bool{resources.FoldersTable: true, resources.FolderPostsTable: true}

// TableKeys counts the primary keys of every row of a table's files in an
// export's directory (DIR/<table>/*.parquet), each key its columns' values
// joined by a tab; a snapshot table's keys carry the run's _cq_sync_time.
func TableKeys(dir string, table *arrow.Schema, name string) (map[string]int, error) {
	var cols []string
	for _, f := range table.Fields() {
		if isPK, _ := f.Metadata.GetValue(schema.MetadataPrimaryKey); isPK == "true" {
			cols = append(cols, f.Name)
		}
	}
	if snapshotTables[name] {
		cols = append(cols, "_cq_sync_time")
	}
	paths, err := filepath.Glob(filepath.Join(dir, name, "*.parquet"))
	if err != nil {
		return nil, err
	}
	keys := map[string]int{}
	for _, path := range paths {
		err := pqfile.ReadRecords(context.Background(), path, cols, func(rec arrow.RecordBatch) error {
			idx := make([]int, len(cols))
			for i, c := range cols {
				found := rec.Schema().FieldIndices(c)
				if len(found) != 1 {
					return fmt.Errorf("%s: no column %s", path, c)
				}
				idx[i] = found[0]
			}
			for row := range int(rec.NumRows()) {
				parts := make([]string, len(idx))
				for i, c := range idx {
					parts[i] = rec.Column(c).ValueStr(row)
				}
				keys[strings.Join(parts, "\t")]++
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// DuplicateKeys reads every table of an export's directory and returns,
// per table, the primary keys found in more than one row (a snapshot
// table's within one run), with their counts; an empty map when none is.
func DuplicateKeys(dir string) (map[string]map[string]int, error) {
	out := map[string]map[string]int{}
	tables := append(resources.Tables().FlattenTables(), archive.Tables()...)
	for _, t := range tables {
		keys, err := TableKeys(dir, t.ToArrowSchema(), t.Name)
		if err != nil {
			return nil, err
		}
		for k, n := range keys {
			if n > 1 {
				if out[t.Name] == nil {
					out[t.Name] = map[string]int{}
				}
				out[t.Name][k] = n
			}
		}
	}
	return out, nil
}
