package resources

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cloudquery/plugin-sdk/v4/scalar"
	"github.com/cloudquery/plugin-sdk/v4/schema"
)

// BookmarkChangesTable is the name of the table of bookmarks removed and
// added by `cq-source-x bookmarks remove` and `bookmarks add`.
const BookmarkChangesTable = "x_bookmark_changes"

// Changes of x_bookmark_changes.
const (
	ChangeRemoved = "removed"
	ChangeAdded   = "added"
)

// BookmarkChange is one row of x_bookmark_changes: a bookmark that
// `cq-source-x bookmarks remove` or `bookmarks add` removed or added, as
// X confirmed it.
type BookmarkChange struct {
	UserID, PostID string
	// Change is ChangeRemoved or ChangeAdded.
	Change string
	// ChangedAt is when X answered the request.
	ChangedAt time.Time
	// Bookmarked is X's answer (data.bookmarked): false after a removal,
	// true after an addition.
	Bookmarked bool
	// Operation is the id of the command's run; Command its command line.
	Operation, Command string
	// SourceUserID is, for an addition from an archive, the account whose
	// archive the post came from.
	SourceUserID string
}

// BookmarkChanges is the x_bookmark_changes table. Its rows are written by
// the archive's commands, not by a sync: it belongs to the exporter's
// archive (ArchiveTables), not to the plugin's tables.
func BookmarkChanges() *schema.Table {
	return &schema.Table{
		Name:  BookmarkChangesTable,
		Title: "X Bookmark Changes",
		Description: "Bookmarks removed or added with `cq-source-x bookmarks remove` and `bookmarks add`, one row per post and run, written when X confirmed the change. " +
			"Only in the exporter's archive: a sync does not write it, and changes made in X's app are not in it. " +
			"The bookmarks held now are the `x_bookmarks` rows whose latest change here is not `removed` (docs/export.md).",
		Columns: columnList(bookmarkChangeColumns),
	}
}

var bookmarkChangeColumns = []column[*BookmarkChange]{
	primaryKey(stringColumn("operation_id", "Id of the run of the command that made the change.", func(c *BookmarkChange) string { return c.Operation })),
	primaryKey(stringColumn("user_id", "X user id of the account whose bookmark changed.", func(c *BookmarkChange) string { return c.UserID })),
	primaryKey(stringColumn("post_id", "Post id.", func(c *BookmarkChange) string { return c.PostID })),
	stringColumn("change", "`removed` or `added`.", func(c *BookmarkChange) string { return c.Change }),
	timeColumn("changed_at", "When X confirmed the change.", func(c *BookmarkChange) time.Time { return c.ChangedAt }),
	typedColumn("bookmarked", "X's answer: whether the post is bookmarked after the request (false after a removal, true after an addition).", arrow.FixedWidthTypes.Boolean, func(c *BookmarkChange) bool { return c.Bookmarked }),
	stringColumn("command", "The command that made the change, with its selection.", func(c *BookmarkChange) string { return c.Command }),
	optStringColumn("source_user_id", "For an addition from an archive, the account whose archive the post came from.", func(c *BookmarkChange) string { return c.SourceUserID }),
}

// ArchiveTables are the tables of the exporter's archive that no sync
// writes: the records of the archive's own commands.
func ArchiveTables() schema.Tables {
	return schema.Tables{BookmarkChanges()}
}

// BookmarkChangeRecord is the record of x_bookmark_changes (table) that
// holds changes, built by the table's column resolvers as a sync builds
// the rows of the other tables.
func BookmarkChangeRecord(table *schema.Table, changes []*BookmarkChange) (arrow.RecordBatch, error) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, table.ToArrowSchema())
	defer b.Release()
	for _, c := range changes {
		r := schema.NewResourceData(table, nil, c)
		for _, col := range table.Columns {
			if col.Resolver == nil {
				continue
			}
			if err := col.Resolver(context.Background(), nil, r, col); err != nil {
				return nil, err
			}
		}
		scalar.AppendToRecordBuilder(b, r.GetValues())
	}
	return b.NewRecordBatch(), nil
}
