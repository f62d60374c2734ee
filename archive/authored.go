package archive

import (
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/resources"
)

// AuthoredPosts is what the files say of each account's posts for the
// compliance checks: its bookmarked posts and the posts they reference
// (the rows of x_bookmark_referenced_posts whose post X returned), each
// with its author. The checks keep their own record of these in the state
// (compliance.Archiver); an archive made before they did has it seeded
// from its files (compliance.Seed).
type AuthoredPosts struct {
	Bookmarks, Referenced map[string][]compliance.Authored // by user id
}

// ReadAuthored reads the published files of x_bookmarks and
// x_bookmark_referenced_posts.
func ReadAuthored(out string) (*AuthoredPosts, error) {
	snap, err := OpenSnapshot(out)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	a := &AuthoredPosts{Bookmarks: map[string][]compliance.Authored{}, Referenced: map[string][]compliance.Authored{}}
	for _, t := range []struct {
		table, post string
		into        map[string][]compliance.Authored
	}{
		{resources.BookmarksTable, "post_id", a.Bookmarks},
		{resources.ReferencedPostsTable, "referenced_post_id", a.Referenced},
	} {
		if err := readAuthored(snap, t.table, t.post, t.into); err != nil {
			return nil, errors.New(cannotRead(err))
		}
	}
	return a, nil
}

// readAuthored adds the posts of the table whose post X returned
// (created_at is set) to into.
func readAuthored(snap *Snapshot, table, postColumn string, into map[string][]compliance.Authored) error {
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
			into[users.Value(i)] = append(into[users.Value(i)], compliance.Authored{PostID: posts.Value(i), AuthorID: authors.Value(i)})
		}
		return nil
	})
}
