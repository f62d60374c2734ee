package sandbox

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
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
			return nil, err
		}
	}
	return out, nil
}

func readFindings(path string, out *[]Finding) error {
	return pqfile.ReadRecords(context.Background(), path, nil, func(rec arrow.RecordBatch) error {
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
		return nil
	})
}
