package resources

import (
	"context"
	"errors"
	"fmt"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/media"
)

// recordBookmarks adds rows, as they are emitted, to the account's record
// of what it archived; the walk's end saves it, before its memory
// (docs/design/plugin.md#resolvers).
func recordBookmarks(ctx context.Context, s *account.Session, rows []*bookmark) error {
	posts := make([]archived.Post, len(rows))
	var refs []archived.Post
	var files []archived.File
	for i, b := range rows {
		posts[i] = archived.Post{ID: b.post.ID, AuthorID: b.post.AuthorID}
		if !s.RowsKept {
			posts[i].Dates = &archived.Dates{CreatedAt: b.post.CreatedAt, FirstSeenAt: b.firstSeenAt, BookmarkedAfter: b.bookmarkedAfter, FoundPosition: b.foundPosition}
		}
		for _, r := range b.refs {
			if r.post != nil {
				refs = append(refs, archived.Post{ID: r.id, AuthorID: r.post.AuthorID})
			}
		}
		if s.Media != nil && s.Media.Kinds.On() {
			files = appendMediaFiles(files, b, s.Media.Kinds)
		}
	}
	return s.EditRecord(ctx, func(r *archived.Record) error {
		r.AddBookmarks(posts, !s.RowsKept)
		r.AddReferenced(refs)
		r.AddFiles(files)
		return nil
	})
}

// saveRecord stores the account's record after a walk, and returns walkErr or its error.
func saveRecord(ctx context.Context, s *account.Session, walkErr error) error {
	if err := s.SaveRecord(ctx); err != nil {
		return errors.Join(walkErr, fmt.Errorf("%s: recording the posts archived: %w", s.ID(), err))
	}
	return walkErr
}

// appendMediaFiles appends the files k stores of the media of b's post, of
// its X Article and of the posts it references.
func appendMediaFiles(out []archived.File, b *bookmark, k media.Kinds) []archived.File {
	add := func(mediaPostID string, items []mediaItem) {
		for _, m := range items {
			if m.media == nil {
				continue // X left it out: its row in x_bookmark_media says why
			}
			for _, f := range media.Files(m.media, k) {
				out = append(out, archived.File{PostID: b.post.ID, MediaPostID: mediaPostID, MediaKey: m.key, MediaType: m.media.Type,
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
