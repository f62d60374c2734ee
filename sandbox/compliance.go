package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cq-source-x/cq-source-x/archive"
)

// Finding is a row of x_post_compliance, for the demo to show.
type Finding struct {
	UserID, PostID, Reason, JobID string
}

// ReadFindings reads the rows of x_post_compliance.
func ReadFindings(dir string) ([]Finding, error) {
	var out []Finding
	err := readTable(dir, "x_post_compliance", []string{"user_id", "post_id", "reason", "job_id"}, func(col []arrow.Array, i int) {
		out = append(out, Finding{UserID: col[0].ValueStr(i), PostID: col[1].ValueStr(i), Reason: col[2].ValueStr(i), JobID: col[3].ValueStr(i)})
	})
	return out, err
}

// readTable calls row with each row of the table's columns.
func readTable(dir, table string, columns []string, row func(col []arrow.Array, i int)) error {
	snap, err := archive.OpenSnapshot(dir)
	if err != nil {
		return err
	}
	defer snap.Close()
	return snap.Read(table, columns, func(rec arrow.RecordBatch) error {
		col := make([]arrow.Array, len(columns))
		for c, name := range columns {
			var ok bool
			if col[c], ok = archive.Column[arrow.Array](rec, name); !ok {
				return fmt.Errorf("not a file of %s: no column %s", table, name)
			}
		}
		for i := range int(rec.NumRows()) {
			row(col, i)
		}
		return nil
	})
}

// CheckRedacted checks that the archive in dir holds nothing of the post's
// content, as compliance.on_change: redact leaves it: its x_bookmarks row
// keeps its key and dates only, and no row of the content tables or
// x_media_files is left.
func CheckRedacted(dir, userID, postID string) error {
	var found []string
	for _, table := range []string{"x_bookmarks", "x_bookmark_authors", "x_bookmark_media", "x_bookmark_referenced_posts", "x_media_files"} {
		columns := []string{"user_id", "post_id"}
		if table == "x_bookmarks" {
			columns = append(columns, "text", "full_text", "post")
		}
		err := readTable(dir, table, columns, func(col []arrow.Array, i int) {
			if col[0].ValueStr(i) != userID || col[1].ValueStr(i) != postID {
				return
			}
			if table != "x_bookmarks" {
				found = append(found, fmt.Sprintf("%s still holds a row of post %s", table, postID))
			}
			for c, name := range columns[2:] {
				if col[2+c].IsValid(i) {
					found = append(found, fmt.Sprintf("the x_bookmarks row of post %s still holds its %s", postID, name))
				}
			}
		})
		if err != nil {
			return err
		}
	}
	if len(found) > 0 {
		return errors.New(found[0])
	}
	return nil
}

// StoredFiles are the keys of the media files the rows of x_media_files
// in dir say stored, with the (user id, post id) of each row naming them.
func StoredFiles(dir string) (map[string][][2]string, error) {
	out := map[string][][2]string{}
	err := readTable(dir, "x_media_files", []string{"user_id", "post_id", "file_key", "status"}, func(col []arrow.Array, i int) {
		if col[3].ValueStr(i) == "stored" {
			key := col[2].ValueStr(i)
			out[key] = append(out[key], [2]string{col[0].ValueStr(i), col[1].ValueStr(i)})
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
