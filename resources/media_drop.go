package resources

import (
	"context"
	"slices"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/media/store"
	"github.com/cq-source-x/cq-source-x/plan"
)

// DropMedia applies the edits of x_media_files to the sessions' records and
// releases their marks on the files they no longer use; the marks go before
// the records are saved (docs/design/plugin.md#compliance-edits).
func DropMedia(ctx context.Context, sessions []*account.Session, ix plan.Index, st *store.Store) error {
	records := make([]*archived.Record, len(sessions))
	for i, s := range sessions {
		if s.UserID == "" {
			continue
		}
		rec, err := s.Record(ctx)
		if err == nil {
			err = markStored(ctx, s, rec, st)
		}
		if err != nil {
			return err
		}
		records[i] = rec
	}
	for i, s := range sessions {
		rec := records[i]
		if rec == nil {
			continue
		}
		stored, err := rec.DropFiles(func(postID, mediaPostID string) bool {
			e, ok := ix.Find(MediaFilesTable, s.UserID, func(column string) string {
				return map[string]string{"post_id": postID, "media_post_id": mediaPostID}[column]
			})
			return ok && e.Op == plan.Remove
		})
		if err != nil {
			return err
		}
		still := rec.StoredFiles()
		for _, key := range stored {
			if slices.Contains(still, key) {
				continue // another post of the account uses it
			}
			if _, err := st.Release(ctx, key, s.UserID); err != nil {
				return err
			}
		}
		if err := s.SaveRecord(ctx); err != nil {
			return err
		}
	}
	return nil
}
