package plugin

import (
	"context"
	"errors"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/media"
	"github.com/cq-source-x/cq-source-x/media/store"
	"github.com/cq-source-x/cq-source-x/spec"
	"github.com/rs/zerolog"
)

// prepareMedia makes the sync's media files, shared by the accounts of set
// (nil without media_files). A store that cannot be opened fails the media
// pass only: the walks record the files all the same.
func prepareMedia(ctx context.Context, s *spec.Spec, o Options, set *account.Set) (*account.Media, func()) {
	ms := s.MediaFiles
	if ms == nil {
		return nil, func() {}
	}
	m := &account.Media{
		Kinds:       media.Kinds{Photos: *ms.Photos, Videos: *ms.Videos, AllVariants: ms.AllVariants},
		MaxFileSize: ms.MaxFileSize.Bytes(),
	}
	for _, sess := range set.Sessions {
		sess.Media = m
	}
	st, closeStore, err := openMediaStore(ctx, ms, o)
	if err != nil {
		m.Err = err
		return m, func() {}
	}
	t := s.Timeouts()
	t.Request = ms.Timeout.Duration()
	// The base transport: media requests carry no credential.
	fetcher := &media.Fetcher{Transport: o.Transport, Timeouts: t, MaxSize: m.MaxFileSize, UserAgent: UserAgent()}
	m.Saver = media.NewSaver(media.SaverOptions{
		Store: st, Fetcher: fetcher, Budget: media.NewBudget(ms.MaxBytesPerRun.Bytes()),
		Now: o.Clock.Now, Concurrency: *ms.Concurrency, Attempts: s.MaxAttempts, Stop: o.MediaStop,
	})
	return m, closeStore
}

func openMediaStore(ctx context.Context, ms *spec.MediaFiles, o Options) (*store.Store, func(), error) {
	if o.MediaStore != nil {
		return o.MediaStore, func() {}, nil
	}
	if ms.Store == "" {
		return nil, nil, errors.New("media_files.store is not set: a CloudQuery sync stores the media files where it says (file:///dir, s3://bucket, gs://bucket or azblob://container); the files of the posts read are recorded and fetched by the first sync that has one")
	}
	st, err := store.Open(ctx, ms.Store)
	return st, func() { _ = st.Close() }, err // the closer is used only without err
}

// syncMediaFiles runs x_media_files, when it is selected, and flushes the state.
func syncMediaFiles(ctx context.Context, run tableSync, st state.Client, set *account.Set, m *account.Media, table *schema.Table, logger zerolog.Logger) error {
	if table == nil {
		return nil
	}
	if m == nil {
		run.announce(schema.Tables{table})
		return nil
	}
	if m.Saver != nil {
		m.Saver.OnPause(func(host, why string) {
			logger.Warn().Msg("media host " + host + " paused for this sync: " + why + "; its other files are left transient, for the next sync")
		})
		logging, stop := context.WithCancel(ctx)
		defer stop()
		go logMediaProgress(logging, m.Saver.Progress(), logger)
	}
	if err := run.sync(ctx, set, schema.Tables{table}); err != nil {
		return err
	}
	return flushState(ctx, st)
}

// logMediaProgress logs p every 30 seconds until ctx ends.
func logMediaProgress(ctx context.Context, p *media.Progress, logger zerolog.Logger) {
	t := time.NewTicker(30 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			logger.Info().Msg("media files: " + p.Counts().String())
		}
	}
}
