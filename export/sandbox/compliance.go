package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// Finding is a row of x_post_compliance, for the demo to show.
type Finding struct {
	UserID, PostID, Reason, JobID string
}

// ReadFindings reads the rows of DIR/x_post_compliance/*.parquet.
func ReadFindings(dir string) ([]Finding, error) {
	files, err := filepath.Glob(filepath.Join(dir, "x_post_compliance", "*.parquet"))
	if err != nil {
		return nil, err
	}
	var out []Finding
	for _, path := range files {
		if err := readFindings(path, &out); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return out, nil
}

func readFindings(path string, out *[]Finding) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	pr, err := file.NewParquetReader(f)
	if err != nil {
		return err
	}
	defer pr.Close()
	fr, err := pqarrow.NewFileReader(pr, pqarrow.ArrowReadProperties{BatchSize: 1024}, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	table, err := fr.ReadTable(context.Background())
	if err != nil {
		return err
	}
	defer table.Release()
	tr := array.NewTableReader(table, 1024)
	defer tr.Release()
	for tr.Next() {
		rec := tr.RecordBatch()
		col := func(name string) arrow.Array {
			if idx := rec.Schema().FieldIndices(name); len(idx) == 1 {
				return rec.Column(idx[0])
			}
			return nil
		}
		users, posts, reasons, jobs := col("user_id"), col("post_id"), col("reason"), col("job_id")
		if users == nil || posts == nil || reasons == nil || jobs == nil {
			return fmt.Errorf("not an x_post_compliance file")
		}
		for i := range int(rec.NumRows()) {
			*out = append(*out, Finding{UserID: users.ValueStr(i), PostID: posts.ValueStr(i), Reason: reasons.ValueStr(i), JobID: jobs.ValueStr(i)})
		}
	}
	return tr.Err()
}
