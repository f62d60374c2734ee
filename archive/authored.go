package archive

import (
	"errors"

	"github.com/cq-source-x/cq-source-x/archived"
)

// ReadAuthored reads, from the published files of table, the posts its
// rows hold whose post X returned (created_at is set): by user id, the post
// of postColumn and its author_id. The records of an archive made before
// they kept the authors have them from there.
func ReadAuthored(out, table, postColumn string) (map[string][]archived.Post, error) {
	snap, err := OpenSnapshot(out)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	into := map[string][]archived.Post{}
	err = snap.ReadRows(table, []string{"user_id", postColumn, "author_id", "created_at"}, nil, func(c *Cols, i int) {
		if !c.Time("created_at", i).IsZero() {
			uid := c.Str("user_id", i)
			into[uid] = append(into[uid], archived.Post{ID: c.Str(postColumn, i), AuthorID: c.Str("author_id", i)})
		}
	})
	if err != nil {
		return nil, errors.New(cannotRead(err))
	}
	return into, nil
}
