package spec

import (
	"time"

	"github.com/cq-source-x/cq-source-x/media/store"
)

// MediaFiles stores the photos and videos themselves, not only their URLs
// (table x_media_files; docs/media.md). Off when absent.
type MediaFiles struct {
	// Where a CloudQuery sync stores the files: a directory of the machine that runs the plugin, `file:///absolute/path`, or an object store's bucket, `s3://bucket?region=us-east-1`, `gs://bucket` or `azblob://container`, with the credentials each cloud's SDK finds (environment, profile, instance role); `prefix=media/` puts the files under a prefix of the bucket.
	// Required in a CloudQuery sync; the standalone exporter stores the files under its output directory (`DIR/media/`) and does not use it.
	Store string `json:"store,omitempty"`
	// Photos in their original size, and the still image of each video and GIF.
	Photos *bool `json:"photos,omitempty" jsonschema:"default=true"`
	// Videos and GIFs: the mp4 variant of the highest bit rate (see `all_variants`).
	Videos *bool `json:"videos,omitempty" jsonschema:"default=false"`
	// With `videos`: every mp4 variant of a video, not only the best.
	AllVariants bool `json:"all_variants,omitempty" jsonschema:"default=false"`
	// Largest file stored, in bytes or with a unit ("512MB", "2GiB"). A larger one is recorded `too_large`, with its size when the server announced it, and fetched by a later sync once the limit is raised above it.
	MaxFileSize *ByteSize `json:"max_file_size,omitempty" jsonschema:"default=512MB"`
	// Most bytes one sync downloads, in bytes or with a unit; `0`: no limit. The files past it are recorded `over_budget` and fetched by the next syncs, oldest first.
	MaxBytesPerRun *ByteSize `json:"max_bytes_per_run,omitempty" jsonschema:"default=0"`
	// Files fetched at once, over all accounts.
	Concurrency *int `json:"concurrency,omitempty" jsonschema:"minimum=1,maximum=64,default=4"`
	// Longest the fetch of one file may take, reading it whole (`connect_timeout` and `header_timeout` bound it as they bound API requests). A file past it is tried again by the next sync.
	Timeout *Duration `json:"timeout,omitempty" jsonschema:"default=10m"`
}

func (m *MediaFiles) setDefaults() {
	orDefault(&m.Photos, true)
	orDefault(&m.Videos, false)
	orDefault(&m.MaxFileSize, NewByteSize(512_000_000))
	orDefault(&m.MaxBytesPerRun, NewByteSize(0))
	orDefault(&m.Concurrency, 4)
	orDefault(&m.Timeout, NewDuration(10*time.Minute))
}

func (s *Spec) validateMediaFiles(addProblem func(field, format string, args ...any)) {
	m := s.MediaFiles
	if m == nil {
		return
	}
	add := func(field, format string, args ...any) { addProblem("media_files."+field, format, args...) }
	if m.Store != "" {
		if err := store.CheckURL(m.Store); err != nil {
			add("store", "%v", err)
		}
	}
	if !*m.Photos && !*m.Videos {
		add("photos", "photos and videos are both off, so no file would be stored; turn one on, or remove the media_files section")
	}
	if m.AllVariants && !*m.Videos {
		add("all_variants", "is true, but videos is off: turn videos on, or all_variants off")
	}
	if !s.Kinds().Media {
		addProblem("media_files", "stores the files of the media objects, which content.media turns off: turn content.media on")
	}
	if m.MaxFileSize.Bytes() < 1 {
		add("max_file_size", "must be at least 1 byte")
	}
	if budget := m.MaxBytesPerRun.Bytes(); budget > 0 && budget < m.MaxFileSize.Bytes() {
		add("max_bytes_per_run", "is %d bytes, less than max_file_size (%d): a file larger than the budget would never be stored; raise it, or lower max_file_size", budget, m.MaxFileSize.Bytes())
	}
	checkCount(add, "concurrency", *m.Concurrency, 1, 64)
	checkDuration(add, "timeout", m.Timeout.Duration(), MinTimeout, MaxWait)
}
