package archive

import (
	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cloudquery/plugin-sdk/v4/schema"
)

// ChangesTable is the name of the table of bookmarks removed and added by
// `cq-source-x bookmarks remove` and `bookmarks add`.
const ChangesTable = "x_bookmark_changes"

// Tables are the archive's own tables, which no sync writes: the records
// of the bookmark commands (package bookmarks writes and reads their rows).
// They are documented with the plugin's (docs/tables).
func Tables() schema.Tables { return schema.Tables{ChangesTableDef()} }

func ChangesTableDef() *schema.Table {
	key := func(c schema.Column) schema.Column { c.PrimaryKey, c.NotNull = true, true; return c }
	text := func(name, description string) schema.Column {
		return schema.Column{Name: name, Type: arrow.BinaryTypes.String, Description: description}
	}
	return &schema.Table{
		Name:  ChangesTable,
		Title: "X Bookmark Changes",
		Description: "Bookmarks removed or added with `cq-source-x bookmarks remove` and `bookmarks add`, one row per post and run, written when X confirmed the change. " +
			"Only in the exporter's archive: a sync does not write it, and changes made in X's app are not in it. " +
			"The bookmarks held now are the `x_bookmarks` rows whose latest change here is not `removed` (docs/export.md).",
		Columns: schema.ColumnList{
			key(text("operation_id", "Id of the run of the command that made the change.")),
			key(text("user_id", "X user id of the account whose bookmark changed.")),
			key(text("post_id", "Post id.")),
			text("change", "`removed` or `added`."),
			{Name: "changed_at", Type: arrow.FixedWidthTypes.Timestamp_us, Description: "When X confirmed the change."},
			{Name: "bookmarked", Type: arrow.FixedWidthTypes.Boolean, Description: "X's answer: whether the post is bookmarked after the request (false after a removal, true after an addition)."},
			text("command", "The command that made the change, with its selection."),
			text("source_user_id", "For an addition from an archive, the account whose archive the post came from."),
		},
	}
}
