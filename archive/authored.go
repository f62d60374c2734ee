package archive

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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
	if err := readAuthored(snap, table, postColumn, into); err != nil {
		return nil, errors.New(cannotRead(err))
	}
	return into, nil
}

// readAuthored adds the posts of the table whose post X returned
// (created_at is set) to into.
func readAuthored(snap *Snapshot, table, postColumn string, into map[string][]archived.Post) error {
	columns := []string{"user_id", postColumn, "author_id", "created_at"}
	return snap.Read(table, columns, func(rec arrow.RecordBatch) error {
		var cols [4]arrow.Array
		for i, name := range columns {
			f := rec.Schema().FieldIndices(name)
			if len(f) != 1 {
				return fmt.Errorf("it has no column %s", name)
			}
			cols[i] = rec.Column(f[0])
		}
		users, uok := cols[0].(*array.String)
		posts, pok := cols[1].(*array.String)
		authors, aok := cols[2].(*array.String)
		if !uok || !pok || !aok {
			return fmt.Errorf("user_id, %s or author_id is not a string column", postColumn)
		}
		for i := range int(rec.NumRows()) {
			if cols[3].IsNull(i) {
				continue
			}
			into[users.Value(i)] = append(into[users.Value(i)], archived.Post{ID: posts.Value(i), AuthorID: authors.Value(i)})
		}
		return nil
	})
}
