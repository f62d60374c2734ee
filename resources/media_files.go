package resources

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/media"
	"github.com/cq-source-x/cq-source-x/media/store"
	"github.com/cq-source-x/cq-source-x/outbox"
	"github.com/cq-source-x/cq-source-x/plan"
	"golang.org/x/sync/errgroup"
)

func init() {
	declareHolding(plan.Holding{Table: MediaFilesTable, Of: "post_id", Holds: "media_post_id"})
}

// mediaFileRow is one row of x_media_files: what became of one file.
type mediaFileRow struct {
	UserID      string       `json:"user_id"`
	PostID      string       `json:"post_id"`
	MediaKey    string       `json:"media_key"`
	URL         string       `json:"url"`
	MediaPostID string       `json:"media_post_id"`
	MediaType   string       `json:"media_type,omitempty"`
	File        string       `json:"file"`
	Status      media.Status `json:"status"`
	FileKey     string       `json:"file_key,omitempty"`
	SHA256      string       `json:"sha256,omitempty"`
	Size        *int64       `json:"size,omitempty"`
	ContentType string       `json:"content_type,omitempty"`
	StoredAt    *time.Time   `json:"stored_at,omitempty"`
	HTTPStatus  int          `json:"http_status,omitempty"`
	Error       string       `json:"error,omitempty"`
	CheckedAt   time.Time    `json:"checked_at"`
	// rec is the file's record, given the row's status once it is sent.
	rec *archived.File
}

// MediaFiles is the x_media_files table (the spec's media_files).
func MediaFiles() *schema.Table {
	return &schema.Table{
		Name:  MediaFilesTable,
		Title: "X Media Files",
		Description: "The photos and videos of the archived posts, stored (`media_files`): one row per file of each media object of each bookmark — a photo in its original size, a video's or GIF's still image, its best mp4 variant (or all of them) — with the stored file's key, SHA-256, size and type, or why it is not stored. " +
			"Files are stored once each, named by the hash of their content, whichever accounts and posts hold them: under the exporter's `DIR/media/`, or in `media_files.store` in a CloudQuery sync. " +
			"A row is written when a file's status changes: `stored` and `gone`, `forbidden`, `too_large` or `failed` are final (`too_large` until `max_file_size` is raised); `transient` and `over_budget` files are tried again by the next sync, which writes a row for the new status. Join x_bookmark_media on (user_id, post_id, media_key).",
		Resolver:  fetchMediaFiles,
		Multiplex: account.Multiplex,
		// A history of each file's status: incremental, so that write_mode
		// overwrite-delete-stale keeps the rows of earlier syncs.
		IsIncremental: true,
		Columns:       columnList(mediaFileColumns),
	}
}

func optInt(n int) *int64 {
	if n == 0 {
		return nil
	}
	v := int64(n)
	return &v
}

var mediaFileColumns = []column[*mediaFileRow]{
	primaryKey(col("user_id", "X user id of the account that bookmarked the post.", func(r *mediaFileRow) string { return r.UserID })),
	primaryKey(col("post_id", "The bookmarked post (x_bookmarks.post_id).", func(r *mediaFileRow) string { return r.PostID })),
	primaryKey(col("media_key", "The media object's key (x_bookmark_media.media_key).", func(r *mediaFileRow) string { return r.MediaKey })),
	primaryKey(col("url", "The file's URL, as X gives it (a photo is asked for in its original size first).", func(r *mediaFileRow) string { return r.URL })),
	col("media_post_id", "The post the media is attached to: post_id, or a post it quotes, replies to or reposts (`content.referenced_posts`).", func(r *mediaFileRow) string { return r.MediaPostID }),
	optStringColumn("media_type", "photo, video or animated_gif.", func(r *mediaFileRow) string { return r.MediaType }),
	col("file", "What the file is: `photo`, `still` (a video's or GIF's preview image) or `video` (an mp4 variant).", func(r *mediaFileRow) string { return r.File }),
	col("status", "`stored`; or why not: `gone` (404 or 410: deleted), `forbidden` (401, 403, 451: protected, suspended, withheld), `too_large` (above `max_file_size`), `over_budget` (past `max_bytes_per_run`; the next sync tries again), `transient` (a 5xx, a timeout, a body cut short; the next sync tries again) or `failed` (refused for good: not https, a redirect to http, another 4xx).", func(r *mediaFileRow) string { return string(r.Status) }),
	optStringColumn("file_key", "Where the file is, in the store: `DIR/media/<file_key>` for the exporter, `<media_files.store>/<file_key>` in a CloudQuery sync. Its SHA-256, under a directory of its first two characters, with its type's extension.", func(r *mediaFileRow) string { return r.FileKey }),
	optStringColumn("sha256", "SHA-256 of the file's content, in hex.", func(r *mediaFileRow) string { return r.SHA256 }),
	col("size", "Size of the stored file in bytes; for `too_large`, the size the server announced, when it did.", func(r *mediaFileRow) *int64 { return r.Size }),
	optStringColumn("content_type", "The stored file's type: image/jpeg, image/png, video/mp4, ...", func(r *mediaFileRow) string { return r.ContentType }),
	col("stored_at", "When the file was first stored (by any account or post).", func(r *mediaFileRow) *time.Time { return r.StoredAt }),
	col("http_status", "Status of the last answer of the media host, when there was one.", func(r *mediaFileRow) *int64 { return optInt(r.HTTPStatus) }),
	optStringColumn("error", "Why the file is not stored; null when it is.", func(r *mediaFileRow) string { return r.Error }),
	incrementalKey(col("checked_at", "When the sync reached this status: the newest row of a file is its status.", func(r *mediaFileRow) time.Time { return r.CheckedAt })),
}

// mediaBatch is how many rows of x_media_files are sent at once.
const mediaBatch = 100

func fetchMediaFiles(ctx context.Context, meta schema.ClientMeta, _ *schema.Resource, res chan<- any) error {
	s := meta.(*account.Session)
	if s.Media == nil {
		return nil
	}
	if err := s.Ready(ctx); err != nil {
		return err
	}
	// The pass is the only user of the account's record while it runs.
	rec, err := s.Record(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", s.ID(), err)
	}
	run := &mediaRun{s: s, rec: rec, res: res, outbox: outbox.Open[*mediaFileRow](rec.Outbox, s.Sync, s.Resend)}
	resent := 0
	err = run.outbox.Each(func(rows []*mediaFileRow) error {
		resent += len(rows)
		return send(ctx, res, rows)
	})
	if err != nil {
		return fmt.Errorf("%s: media files: %w", s.ID(), err)
	}
	if s.Media.Saver == nil {
		err = s.Media.Err
	} else if err = markStored(ctx, s, rec, s.Media.Saver.Store()); err == nil {
		err = run.store(ctx)
	}
	// The record is stored with the outbox, whatever became of the files.
	box, serr := run.outbox.Box()
	if serr == nil {
		rec.Outbox = box
		serr = s.SaveRecord(ctx)
	}
	err = errors.Join(err, serr, s.FlushWalk(ctx))
	if err != nil {
		run.report.Err = err.Error()
	}
	s.Report().SetMedia(run.report)
	s.Logger.Info().Int("files", run.report.Files).Int("fetched", run.report.Fetched).Int64("bytes", run.report.Bytes).Int("sent_again", resent).Msg("media files done")
	if err != nil {
		return fmt.Errorf("%s: media files: %w", s.ID(), err)
	}
	return nil
}

// mediaRun stores the files an account's record has due.
type mediaRun struct {
	s      *account.Session
	rec    *archived.Record
	res    chan<- any
	report account.MediaReport
	outbox *outbox.Rows[*mediaFileRow]

	mu      sync.Mutex
	changed []*mediaFileRow // not sent yet
}

// store tries every file due, as many at once as the Saver allows all
// accounts, and sends a row for each whose status changed.
func (r *mediaRun) store(ctx context.Context) error {
	m := r.s.Media
	due := r.rec.DueFiles(m.MaxFileSize)
	m.Saver.Progress().Want(len(due))
	var g errgroup.Group
	g.SetLimit(m.Saver.Concurrency())
	for _, i := range due {
		if ctx.Err() != nil {
			break
		}
		rec := &r.rec.Files[i]
		g.Go(func() error { return r.done(ctx, rec, m.Saver.Save(ctx, media.NewRequest(rec.URL))) })
	}
	return errors.Join(g.Wait(), r.flush(ctx), context.Cause(ctx))
}

// done queues the row of a file whose status changed; of a sync stopped
// meanwhile, nothing: the next sync tries it.
func (r *mediaRun) done(ctx context.Context, rec *archived.File, out media.Outcome) error {
	if ctx.Err() != nil || out.Status == media.Interrupted {
		return nil
	}
	r.mu.Lock()
	r.report.Add(out)
	if out.Status == rec.Status && (out.File == nil || out.File.Key == rec.FileKey) {
		rec.Refetch = false // stored again as the same file: its row stands
		r.mu.Unlock()
		return nil
	}
	r.changed = append(r.changed, r.row(rec, out))
	full := len(r.changed) >= mediaBatch
	r.mu.Unlock()
	if full {
		return r.flush(ctx)
	}
	return nil
}

func (r *mediaRun) row(rec *archived.File, out media.Outcome) *mediaFileRow {
	row := &mediaFileRow{
		UserID: r.s.UserID, PostID: rec.PostID, MediaKey: rec.MediaKey, URL: rec.URL, MediaPostID: cmp.Or(rec.MediaPostID, rec.PostID),
		MediaType: rec.MediaType, File: rec.File, Status: out.Status, HTTPStatus: out.HTTPStatus, Error: out.Err,
		CheckedAt: r.s.Clock.Now().UTC(), rec: rec,
	}
	if f := out.File; f != nil {
		size, at := f.Size, f.StoredAt
		row.FileKey, row.SHA256, row.Size, row.ContentType, row.StoredAt = f.Key, f.SHA256, &size, f.ContentType, &at
	} else if out.Size > 0 {
		size := out.Size
		row.Size = &size
	}
	return row
}

// flush sends the rows queued, keeps them to send again, and then records
// the new statuses: a status is recorded only once its row is on its way.
func (r *mediaRun) flush(ctx context.Context) error {
	r.mu.Lock()
	rows := r.changed
	r.changed = nil
	r.mu.Unlock()
	if len(rows) == 0 {
		return nil
	}
	for _, row := range rows {
		if row.Status == media.Stored {
			if err := r.s.Media.Saver.Store().Mark(ctx, row.FileKey, r.s.UserID); err != nil {
				return err
			}
		}
	}
	if r.s.Resend.On() {
		if err := r.outbox.Add(rows...); err != nil {
			return err
		}
	}
	if err := send(ctx, r.res, rows); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, row := range rows {
		row.rec.Status, row.rec.FileKey, row.rec.Limit, row.rec.Refetch = row.Status, row.FileKey, 0, false
		if row.Status == media.TooLarge {
			row.rec.Limit = r.s.Media.MaxFileSize
		}
	}
	return nil
}

// markStored marks in the store the files the account's record says
// stored, when an earlier version stored them unmarked (Store.Mark): once,
// before the pass stores more, or a report deletes any.
func markStored(ctx context.Context, s *account.Session, rec *archived.Record, st *store.Store) error {
	if rec.Marked {
		return nil
	}
	for _, key := range rec.StoredFiles() {
		if err := st.Mark(ctx, key, s.UserID); err != nil {
			return err
		}
	}
	rec.Marked = true
	return nil
}
