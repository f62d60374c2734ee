package sandbox

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/plan"
	"github.com/cq-source-x/cq-source-x/resources"
)

// Finding is a row of x_post_compliance, for the demo to show.
type Finding struct {
	UserID, PostID, Reason, JobID string
}

// ReadFindings reads the rows of x_post_compliance.
func ReadFindings(dir string) ([]Finding, error) {
	var out []Finding
	err := archive.ReadRows(dir, "x_post_compliance", []string{"user_id", "post_id", "reason", "job_id"}, nil, func(c *archive.Cols, i int) {
		out = append(out, Finding{UserID: c.Str("user_id", i), PostID: c.Str("post_id", i), Reason: c.Str("reason", i), JobID: c.Str("job_id", i)})
	})
	return out, err
}

// CheckRedacted checks that the archive in dir holds nothing of the post's
// content, as the tables declare a redaction leaves it (plan.Holding): the
// row of a table that keeps one (x_bookmarks) has every column null but
// the kept ones, and no other table holds a row of the post.
func CheckRedacted(dir, userID, postID string) error {
	snap, err := archive.OpenSnapshot(dir)
	if err != nil {
		return err
	}
	defer snap.Close()
	for _, h := range resources.Holdings() {
		kept := plan.Edit{Keeps: h.Keeps}
		err := snap.Read(h.Table, nil, func(rec arrow.RecordBatch) error {
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
			return err
		}
	}
	return nil
}

// StoredFiles are the keys of the media files the rows of x_media_files
// in dir say stored, with the (user id, post id) of each row naming them.
func StoredFiles(dir string) (map[string][][2]string, error) {
	out := map[string][][2]string{}
	err := archive.ReadRows(dir, "x_media_files", []string{"user_id", "post_id", "file_key", "status"}, nil, func(c *archive.Cols, i int) {
		if c.Raw("status", i) == "stored" {
			key := c.Str("file_key", i)
			out[key] = append(out[key], [2]string{c.Str("user_id", i), c.Str("post_id", i)})
		}
	})
	return out, err
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
