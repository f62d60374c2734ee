// Package resources declares the plugin's tables, one file per table, and
// their resolvers. The walks themselves live in package walk; resolvers wire
// them to the API client and the state backend of an account.Session.
package resources

import (
	"context"
	"maps"
	"slices"
	"strings"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/transformers"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/plan"
)

const (
	BookmarksTable       = "x_bookmarks"
	BookmarkAuthorsTable = "x_bookmark_authors"
	BookmarkMediaTable   = "x_bookmark_media"
	ReferencedPostsTable = "x_bookmark_referenced_posts"
	FoldersTable         = "x_bookmark_folders"
	FolderPostsTable     = "x_bookmark_folder_posts"
	MediaFilesTable      = "x_media_files"
	PostComplianceTable  = "x_post_compliance"
	APIUsageTable        = "x_api_usage"
)

// Tables returns the plugin's tables, with the SDK's _cq_id and
// _cq_parent_id columns added. x_api_usage is last: it is resolved after the
// others, once their walks are done.
func Tables() schema.Tables {
	tables := schema.Tables{Bookmarks(), Folders(), MediaFiles(), PostCompliance(), APIUsage()}
	transformers.SetParents(tables, nil)
	for _, t := range tables {
		schema.AddCqIDs(t)
	}
	maskErrors(tables)
	for _, t := range tables.FlattenTables() {
		for i := range t.Columns {
			if t.Columns[i].Resolver == nil {
				// _cq_id and _cq_parent_id are filled in by the scheduler after
				// the resolvers; without a resolver of its own, a column is
				// looked up by reflection on the item, for every row.
				t.Columns[i].Resolver = resolvedByScheduler
			}
		}
	}
	return tables
}

func resolvedByScheduler(context.Context, schema.ClientMeta, *schema.Resource, schema.Column) error {
	return nil
}

// maskErrors masks what the resolvers of tables and their relations return
// with the sync's Mask: the SDK logs and sends it, and a server may have put
// a credential of the sync in it.
func maskErrors(tables schema.Tables) {
	for _, t := range tables {
		resolve := t.Resolver
		t.Resolver = func(ctx context.Context, meta schema.ClientMeta, parent *schema.Resource, res chan<- any) error {
			err := resolve(ctx, meta, parent, res)
			switch m := meta.(type) {
			case *account.Session:
				return m.Secrets.Error(err)
			case *compliance.Check:
				return m.Secrets.Error(err)
			}
			return err
		}
		maskErrors(t.Relations)
	}
}

// Each table that holds posts declares which of its columns do, in its own
// file: plan.Edits decides from these alone, for both outputs.
var (
	holdings      = map[string]plan.Holding{}
	contentTables []func() *schema.Table // x_bookmarks' children, in declaration order
)

func declareHolding(h plan.Holding) {
	if _, ok := holdings[h.Table]; ok {
		panic("resources: " + h.Table + " declared twice")
	}
	holdings[h.Table] = h
}

// DeclareContent declares, at initialization, a child table of x_bookmarks,
// which the SDK resolves for each bookmark; h says which of its columns hold
// a post (its Table is the table's name).
func DeclareContent(table func() *schema.Table, h plan.Holding) {
	h.Table = table().Name
	declareHolding(h)
	contentTables = append(contentTables, table)
}

// Holdings are the declarations of every table that holds posts, by name.
func Holdings() []plan.Holding {
	return slices.SortedFunc(maps.Values(holdings), func(a, b plan.Holding) int { return strings.Compare(a.Table, b.Table) })
}

// IsBookmarkContent reports whether table is a child table of x_bookmarks.
func IsBookmarkContent(table string) bool {
	return slices.ContainsFunc(Bookmarks().Relations, func(t *schema.Table) bool { return t.Name == table })
}

func contentTableList() schema.Tables {
	out := make(schema.Tables, len(contentTables))
	for i, t := range contentTables {
		out[i] = t()
	}
	return out
}
