package plugin

import (
	"context"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cloudquery/plugin-sdk/v4/message"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/spec"
)

// actionOf maps the spec's on_change to the actions of package compliance.
func actionOf(cs *spec.Compliance) func(reason string) compliance.Action {
	return func(reason string) compliance.Action {
		switch cs.Action(reason) {
		case spec.ActionRedact:
			return compliance.Redact
		case spec.ActionDelete:
			return compliance.Delete
		case spec.ActionScrub:
			return compliance.ScrubGeo
		}
		return compliance.Keep
	}
}

// actOnCompliance applies, in a CloudQuery sync, what the compliance checks
// reported and no sync applied yet (compliance.on_change): the reported
// posts leave the bookmarks outbox; their stored media files no other post
// uses are deleted from the media store; a redacted post's x_bookmarks row is
// sent again without its content (the destination's primary key replaces
// the row it holds, in overwrite modes); its rows of the content tables,
// and for delete its x_bookmarks row, are removed with DeleteRecord
// messages. The state then records the actions as applied, and is
// flushed. The destination in the plugin's process (the exporter) applies
// them to its own files instead. elsewhere names the accounts of the other
// shards, whose files are kept too.
func (c *Client) actOnCompliance(ctx context.Context, run tableSync, st state.Client, comp *compliance.Check, selected schema.Tables, elsewhere []string) error {
	if c.options.destination() != nil {
		return nil
	}
	pending, err := comp.Pending(ctx)
	if err != nil || len(pending) == 0 {
		return err
	}
	bookmarks := selected.Get(resources.BookmarksTable)
	if bookmarks == nil {
		c.logger.Warn().Msg("posts reported by X's compliance job are acted on when x_bookmarks is synced; this sync does not select it")
		return nil
	}
	for _, acct := range pending {
		for _, s := range comp.Set.Sessions {
			if s.UserID != acct.UserID {
				continue
			}
			if err := resources.PurgeOutbox(ctx, s, acct.Posts); err != nil {
				return err
			}
		}
	}
	if ss := comp.Set.Sessions; len(ss) > 0 && ss[0].Media != nil && ss[0].Media.Saver != nil { // the sync's accounts share one store
		if _, err := resources.DropMedia(ctx, ss, elsewhere, pending, ss[0].Media.Saver.Store()); err != nil {
			return err
		}
	}
	if err := run.sync(ctx, &resources.Redactions{Accounts: pending}, schema.Tables{resources.RedactedBookmarks(bookmarks)}); err != nil {
		return err
	}
	content := bookmarks.Relations // their rows are a post's content
	if t := selected.Get(resources.MediaFilesTable); t != nil {
		content = append(slices.Clip(content), t)
	}
	for _, acct := range pending {
		c.removeRows(acct, content, run.res)
	}
	if err := comp.Applied(ctx, pending); err != nil {
		return err
	}
	return flushState(ctx, st)
}

// removeRows sends the DeleteRecord messages of an account's reported
// posts: a bookmark's rows of the content tables (and of x_media_files),
// and its x_bookmarks row when it goes too; a referenced post's rows of
// x_bookmark_referenced_posts and of x_media_files (its media's files).
func (c *Client) removeRows(acct compliance.AccountActions, content schema.Tables, res chan<- message.SyncMessage) {
	var geo []string
	for _, p := range acct.Posts {
		switch p.Action {
		case compliance.ScrubGeo:
			geo = append(geo, p.PostID)
			continue
		case compliance.Redact, compliance.Delete:
		default:
			continue
		}
		if p.Referenced {
			if content.Get(resources.ReferencedPostsTable) != nil {
				res <- deleteRows(resources.ReferencedPostsTable, acct.UserID, "referenced_post_id", p.PostID)
			}
			if content.Get(resources.MediaFilesTable) != nil {
				res <- deleteRows(resources.MediaFilesTable, acct.UserID, "media_post_id", p.PostID)
			}
		}
		if !p.Bookmarked {
			continue
		}
		for _, t := range content {
			res <- deleteRows(t.Name, acct.UserID, "post_id", p.PostID)
		}
		if p.Action == compliance.Delete || p.Dates == nil {
			if p.Action == compliance.Redact {
				c.logger.Warn().Str("user_id", acct.UserID).Str("post_id", p.PostID).
					Msg("the dates of this redacted bookmark are not known (it was archived by an earlier version): its x_bookmarks row is removed; its tombstone stays in x_post_compliance")
			}
			res <- deleteRows(resources.BookmarksTable, acct.UserID, "post_id", p.PostID)
		}
	}
	if len(geo) > 0 {
		c.logger.Warn().Str("user_id", acct.UserID).Strs("post_ids", geo).
			Msg("X removed the location of these posts: a source cannot edit a row of the destination, so remove the `geo` of their `post` JSON in x_bookmarks and x_bookmark_referenced_posts yourself (docs/compliance.md)")
	}
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
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{{Name: column, Type: arrow.BinaryTypes.String}}, nil))
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append(value)
	return b.NewRecordBatch()
}
