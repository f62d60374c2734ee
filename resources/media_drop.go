package resources

import (
	"context"
	"slices"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/media/store"
	"github.com/cq-source-x/cq-source-x/plan"
)

// DropMedia applies the edits of x_media_files to the sessions' records,
// and returns how many stored files were deleted: the files whose rows go
// leave the records (and their outbox), and each account releases its mark
// on the files its record no longer uses; the store deletes a file whose
// last mark goes, so other accounts' (another shard's) keep theirs unread.
// Every account's files are marked first (an earlier version's records
// left them unmarked). The marks go before the records are set: a stop
// between leaves records that the next application releases again, where
// the other order could keep a file no record names for good.
func DropMedia(ctx context.Context, sessions []*account.Session, ix plan.Index, st *store.Store) (int, error) {
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
			return 0, err
		}
		records[i] = rec
	}
	deleted := 0
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
			return deleted, err
		}
		still := rec.StoredFiles()
		for _, key := range stored {
			if slices.Contains(still, key) {
				continue // another post of the account uses it
			}
			gone, err := st.Release(ctx, key, s.UserID)
			if err != nil {
				return deleted, err
			}
			if gone {
				deleted++
			}
		}
		if err := s.SaveRecord(ctx); err != nil {
			return deleted, err
		}
	}
	return deleted, nil
}
