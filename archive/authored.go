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
	err = snap.Read(table, []string{"user_id", postColumn, "author_id", "created_at"}, func(rec arrow.RecordBatch) error {
		users, uok := Column[*array.String](rec, "user_id")
		posts, pok := Column[*array.String](rec, postColumn)
		authors, aok := Column[*array.String](rec, "author_id")
		created, cok := Column[arrow.Array](rec, "created_at")
		if !uok || !pok || !aok || !cok {
			return fmt.Errorf("it has no user_id, %s, author_id and created_at columns, of strings but the last", postColumn)
		}
		for i := range int(rec.NumRows()) {
			if created.IsValid(i) {
				into[users.Value(i)] = append(into[users.Value(i)], archived.Post{ID: posts.Value(i), AuthorID: authors.Value(i)})
			}
		}
		return nil
	})
	if err != nil {
		return nil, errors.New(cannotRead(err))
	}
	return into, nil
}
