package sandbox

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
	"github.com/cq-source-x/cq-source-x/plan"
	"github.com/cq-source-x/cq-source-x/resources"
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

// CheckRedacted checks that the archive in dir holds nothing of the post's
// content, as the tables declare a redaction leaves it (plan.Holding): the
// row of a table that keeps one (x_bookmarks) has every column null but
// the kept ones, and no other table holds a row of the post.
func CheckRedacted(dir, userID, postID string) error {
	for _, h := range resources.Holdings() {
		files, err := filepath.Glob(filepath.Join(dir, h.Table, "*.parquet"))
		if err != nil {
			return err
		}
		kept := plan.Edit{Keeps: h.Keeps}
		for _, path := range files {
			err := pqfile.ReadRecords(context.Background(), path, nil, func(rec arrow.RecordBatch) error {
				users, posts := rec.Schema().FieldIndices("user_id"), rec.Schema().FieldIndices(h.Of)
				if len(users) != 1 || len(posts) != 1 {
					return fmt.Errorf("no user_id and %s columns", h.Of)
				}
				for i := range int(rec.NumRows()) {
					if rec.Column(users[0]).ValueStr(i) != userID || rec.Column(posts[0]).ValueStr(i) != postID {
						continue
					}
					if h.Keeps == nil {
						return fmt.Errorf("%s still holds a row of post %s", h.Table, postID)
					}
					for c, f := range rec.Schema().Fields() {
						if !kept.Kept(f.Name) && !rec.Column(c).IsNull(i) {
							return fmt.Errorf("the %s row of post %s still holds its %s", h.Table, postID, f.Name)
						}
					}
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
	}
	return nil
}

// StoredFiles are the keys of the media files the rows of x_media_files
// in dir say stored, with the (user id, post id) of each row naming them.
func StoredFiles(dir string) (map[string][][2]string, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "x_media_files", "*.parquet"))
	if err != nil {
		return nil, err
	}
	out := map[string][][2]string{}
	for _, path := range paths {
		columns := []string{"user_id", "post_id", "file_key", "status"}
		err := pqfile.ReadRecords(context.Background(), path, columns, func(rec arrow.RecordBatch) error {
			var col [4]arrow.Array
			for i, name := range columns {
				idx := rec.Schema().FieldIndices(name)
				if len(idx) != 1 {
					return fmt.Errorf("not an x_media_files file: no column %s", name)
				}
				col[i] = rec.Column(idx[0])
			}
			for i := range int(rec.NumRows()) {
				if col[3].ValueStr(i) == "stored" {
					key := col[2].ValueStr(i)
					out[key] = append(out[key], [2]string{col[0].ValueStr(i), col[1].ValueStr(i)})
				}
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	}
	return out, nil
}

// CheckFilesRemoved checks that each media file in keys is gone from
// DIR/media, unless a row of x_media_files in dir still names it (another
// post uses the same file).
func CheckFilesRemoved(dir string, keys []string) error {
	still, err := StoredFiles(dir)
	if err != nil {
		return err
	}
	for _, key := range keys {
		_, err := os.Stat(filepath.Join(archive.MediaPath(dir), filepath.FromSlash(key)))
		if err == nil && len(still[key]) == 0 {
			return fmt.Errorf("media file %s is still in %s", key, archive.MediaPath(dir))
		}
	}
	return nil
}
