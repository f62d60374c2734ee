// Package resources declares the plugin's tables, one file per table, and
// their resolvers. The walks themselves live in package walk; resolvers wire
// them to the API client and the state backend of an account.Session.
package resources

import (
	"context"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/transformers"
)

// Tables returns the plugin's tables, with the SDK's _cq_id and
// _cq_parent_id columns added. x_api_usage is last: it is resolved after the
// others, once their walks are done.
func Tables() schema.Tables {
	tables := schema.Tables{Bookmarks(), Folders(), PostCompliance(), APIUsage()}
	transformers.SetParents(tables, nil)
	for _, t := range tables {
		schema.AddCqIDs(t)
	}
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
