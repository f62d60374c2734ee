package plugin

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cloudquery/plugin-sdk/v4/message"
	"github.com/cloudquery/plugin-sdk/v4/scalar"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/plan"
	"github.com/cq-source-x/cq-source-x/resources"
)

// actOnCompliance applies what the compliance checks reported and no sync
// applied yet (compliance.on_change; docs/design/plugin.md#compliance-edits).
func (c *Client) actOnCompliance(ctx context.Context, run tableSync, st state.Client, comp *compliance.Check, selected schema.Tables) error {
	pending, err := comp.Pending(ctx)
	if err != nil || len(pending) == 0 {
		return err
	}
	if selected.Get(resources.BookmarksTable) == nil {
		c.logger.Warn().Msg("posts reported by X's compliance job are acted on when x_bookmarks is synced; this sync does not select it")
		return nil
	}
	reported := make([]plan.Reported, len(pending))
	for i, p := range pending {
		reported[i] = p.Reported
	}
	edits := plan.Edits(resources.Holdings(), reported)
	ix := plan.NewIndex(edits)
	if d := c.options.destination(); d != nil {
		d.Edit(edits)
	} else if err := c.sendEdits(ctx, run, comp, selected, edits, ix, pending); err != nil {
		return err
	}
	if ss := comp.Set.Sessions; len(ss) > 0 && ss[0].Media != nil && ss[0].Media.Saver != nil { // the sync's accounts share one store
		if err := resources.DropMedia(ctx, ss, ix, ss[0].Media.Saver.Store()); err != nil {
			return err
		}
	}
	if err := comp.Applied(ctx, pending); err != nil {
		return err
	}
	return flushState(ctx, st)
}

// sendEdits applies the edits to a CloudQuery destination, as DeleteRecord
// messages and blanked rows (docs/design/plugin.md#compliance-edits).
func (c *Client) sendEdits(ctx context.Context, run tableSync, comp *compliance.Check, selected schema.Tables, edits []plan.Edit, ix plan.Index, pending []compliance.Affected) error {
	for _, s := range comp.Set.Sessions {
		if err := resources.EditOutbox(ctx, s, ix); err != nil {
			return err
		}
	}
	dates := map[[2]string]*compliance.Affected{}
	for i, p := range pending {
		if p.Dates != nil {
			dates[[2]string{p.UserID, p.PostID}] = &pending[i]
		}
	}
	var blanked []compliance.Affected
	scrubbed := map[string][]string{}
	for _, e := range edits {
		if selected.Get(e.Table) == nil {
			continue
		}
		switch p := dates[[2]string{e.UserID, e.PostID}]; {
		case e.Op == plan.Scrub:
			scrubbed[e.UserID] = append(scrubbed[e.UserID], e.PostID)
		case e.Op == plan.Blank && p != nil:
			blanked = append(blanked, *p)
		default:
			if e.Op == plan.Blank {
				c.logger.Warn().Str("user_id", e.UserID).Str("post_id", e.PostID).
					Msg("the dates of this redacted bookmark are not known (it was archived by an earlier version): its x_bookmarks row is removed; its tombstone stays in x_post_compliance")
			}
			run.res <- deleteRows(e.Table, e.UserID, e.Column, e.PostID)
		}
	}
	for user, posts := range scrubbed {
		c.logger.Warn().Str("user_id", user).Strs("post_ids", posts).
			Msg("X removed the location of these posts: a source cannot edit a row of the destination, so remove the `geo` of their `post` JSON in x_bookmarks and x_bookmark_referenced_posts yourself (docs/compliance.md)")
	}
	if len(blanked) == 0 {
		return nil
	}
	return run.sync(ctx, &resources.Blanked{Posts: blanked}, schema.Tables{resources.BlankedBookmarks(selected.Get(resources.BookmarksTable))})
}

// deleteRows is the message that removes the account's rows of table
// whose column holds postID: user_id = userID AND column = postID.
func deleteRows(table, userID, column, postID string) *message.SyncDeleteRecord {
	return &message.SyncDeleteRecord{DeleteRecord: message.DeleteRecord{
		TableName: table,
		WhereClause: message.PredicateGroups{{
			GroupingType: "AND",
			Predicates: message.Predicates{
				{Operator: "eq", Column: "user_id", Record: stringValue("user_id", userID)},
				{Operator: "eq", Column: column, Record: stringValue(column, postID)},
			},
		}},
	}}
}

// stringValue is a record of one row: column = value.
func stringValue(column, value string) arrow.RecordBatch {
	sc := arrow.NewSchema([]arrow.Field{{Name: column, Type: arrow.BinaryTypes.String}}, nil)
	return scalar.Vector{&scalar.String{Value: value, Valid: true}}.ToArrowRecord(sc)
}
