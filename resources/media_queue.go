package resources

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/media"
)

// recordMediaFiles wraps the bookmarks walk's emit: the files of the media
// of the posts it emits are recorded in the account's media state, which
// save stores once the walk has ended — before the walk's memory is saved,
// in the same flush, so that the state never says a post was read without
// its files to fetch. x_media_files fetches them after the data tables.
// With media files off, emit is returned as it is.
func recordMediaFiles(s *account.Session, emit func(context.Context, []*bookmark) error) (
	recording func(context.Context, []*bookmark) error, save func(context.Context, error) error) {
	if s.Media == nil || !s.Media.Kinds.On() {
		return emit, func(_ context.Context, walkErr error) error { return walkErr }
	}
	var mu sync.Mutex
	var wanted []mediaRecord
	recording = func(ctx context.Context, rows []*bookmark) error {
		if err := emit(ctx, rows); err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for _, b := range rows {
			wanted = appendMediaFiles(wanted, b, s.Media.Kinds)
		}
		return nil
	}
	save = func(ctx context.Context, walkErr error) error {
		mu.Lock()
		defer mu.Unlock()
		if len(wanted) == 0 {
			return walkErr
		}
		st, err := loadMediaState(ctx, s)
		if err == nil && st.add(wanted) > 0 {
			err = st.save(ctx, s)
		}
		if err != nil {
			return errors.Join(walkErr, fmt.Errorf("%s: recording the media files of the posts read: %w", s.ID(), err))
		}
		wanted = nil
		return walkErr
	}
	return recording, save
}

// appendMediaFiles appends the files k stores of the media of b's post, of
// its X Article and of the posts it references.
func appendMediaFiles(out []mediaRecord, b *bookmark, k media.Kinds) []mediaRecord {
	add := func(mediaPostID string, items []mediaItem) {
		for _, m := range items {
			if m.media == nil {
				continue // X left it out: its row in x_bookmark_media says why
			}
			for _, f := range media.Files(m.media, k) {
				out = append(out, mediaRecord{PostID: b.post.ID, MediaPostID: mediaPostID, MediaKey: m.key, MediaType: m.media.Type,
					File: f.What, URL: f.URL, SeenAt: b.firstSeenAt.UTC()})
			}
		}
	}
	add("", b.media)
	for _, ref := range b.refs {
		add(ref.id, ref.media)
	}
	return out
}
