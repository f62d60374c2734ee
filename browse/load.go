package browse

import (
	"cmp"
	"errors"
	"io/fs"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cq-source-x/cq-source-x/archive"
)

// The archive as the page shows it, read once from a snapshot of its files
// (archive.Snapshot) and kept in memory: only the columns the page shows,
// and the lower-cased text each bookmark is searched in.

type library struct {
	bookmarks []*bookmark // newest bookmarked first
	accounts  []string    // user ids
	folders   map[string][]folder
	// text is what searches look in: of each bookmark in turn, its text,
	// its author's name and username and its article's title, lower-cased,
	// each ended by a newline but the last, by a NUL; its text starts at
	// starts[i] (and starts ends with len(text)).
	text   string
	starts []int
}

// bookmark is one x_bookmarks row, with what the other tables say of it.
type bookmark struct {
	UserID, PostID, Text                                  string
	Created, Found                                        time.Time
	position                                              int64 // found_position; the largest for files from before it
	AuthorName, AuthorUsername, ArticleTitle, ArticleText string
	Media                                                 []media
	Referenced                                            []*referenced
	Folders, folderIDs                                    []string // names, ids
	Withdrawn                                             *withdrawal
}

// media is a photo, video or GIF of a post.
type media struct {
	key       string
	position  int64
	Type, Alt string
	// File is the stored photo, or the still of a video or GIF, under
	// DIR/media ("" when the archive holds none); Video the stored video.
	File, Video string
}

// referenced is a post a bookmark quotes, answers or reposts.
type referenced struct {
	Type, PostID, Text, AuthorUsername, ArticleTitle, Error string
	Created                                                 time.Time
	Media                                                   []media
	Withdrawn                                               *withdrawal
}

// withdrawal is X's latest report of a post, when it asks to remove it:
// why, and when X withdrew it (or, when the report does not say, when the
// report was read).
type withdrawal struct {
	Reason string
	At     time.Time
}

type folder struct{ ID, Name string }

// load reads the archive in dir. A file a compaction or a compliance
// rewrite removed while it was read makes it read a new snapshot.
func load(dir string) (*library, error) {
	for try := 0; ; try++ {
		lib, err := loadSnapshot(dir)
		if err == nil || !errors.Is(err, fs.ErrNotExist) || try == 4 {
			return lib, err
		}
	}
}

func loadSnapshot(dir string) (*library, error) {
	snap, err := archive.OpenSnapshot(dir)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	l := &loader{snap: snap, byKey: map[key]*bookmark{}, lib: &library{folders: map[string][]folder{}}}
	// The bookmarks first; then the tables that say more of them, at once
	// (each sets fields of its own); then the media files, which belong to
	// the bookmarks' media and referenced posts.
	if err := l.bookmarks(); err != nil {
		return nil, err
	}
	steps := []func() error{l.authors, l.media, l.referenced, l.folders, l.compliance}
	errs := make([]error, len(steps))
	var wg sync.WaitGroup
	for i, step := range steps {
		wg.Go(func() { errs[i] = step() })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := l.mediaFiles(); err != nil {
		return nil, err
	}
	l.finish()
	return l.lib, nil
}

type loader struct {
	snap  *archive.Snapshot
	lib   *library
	byKey map[key]*bookmark
	// reports are the posts X reported withdrawn (x_post_compliance).
	reports map[key]*withdrawal
}

type key struct{ userID, postID string }

// bookmarkOf is the bookmark of row i (nil when none was read).
func (l *loader) bookmarkOf(c *archive.Cols, i int) *bookmark {
	return l.byKey[key{c.Raw("user_id", i), c.Raw("post_id", i)}]
}

func (l *loader) bookmarks() error {
	return l.snap.ReadRows("x_bookmarks", []string{"user_id", "post_id", "first_seen_at"},
		[]string{"text", "full_text", "created_at", "article_title", "article_text", "found_position"}, func(c *archive.Cols, i int) {
			b := &bookmark{UserID: c.Str("user_id", i), PostID: c.Str("post_id", i), Text: c.Str("full_text", i),
				Created: c.Time("created_at", i), Found: c.Time("first_seen_at", i), position: 1<<63 - 1,
				ArticleTitle: c.Str("article_title", i), ArticleText: c.Str("article_text", i)}
			if b.Text == "" {
				b.Text = c.Str("text", i)
			}
			if pos, ok := c.Int("found_position", i); ok {
				b.position = pos
			}
			l.byKey[key{b.UserID, b.PostID}] = b
			l.lib.bookmarks = append(l.lib.bookmarks, b)
		})
}

func (l *loader) authors() error {
	return l.snap.ReadRows("x_bookmark_authors", []string{"user_id", "post_id", "username", "name"}, nil, func(c *archive.Cols, i int) {
		if b := l.bookmarkOf(c, i); b != nil {
			b.AuthorUsername, b.AuthorName = c.Str("username", i), c.Str("name", i)
		}
	})
}

func (l *loader) media() error {
	return l.snap.ReadRows("x_bookmark_media", []string{"user_id", "post_id", "media_key"}, []string{"position", "type", "alt_text"}, func(c *archive.Cols, i int) {
		if b := l.bookmarkOf(c, i); b != nil {
			m := media{key: c.Str("media_key", i), Type: c.Str("type", i), Alt: c.Str("alt_text", i)}
			m.position, _ = c.Int("position", i)
			b.Media = append(b.Media, m)
		}
	})
}

func (l *loader) referenced() error {
	return l.snap.ReadRows("x_bookmark_referenced_posts", []string{"user_id", "post_id", "referenced_post_id", "type"},
		[]string{"text", "full_text", "created_at", "author_username", "article_title", "error"}, func(c *archive.Cols, i int) {
			if b := l.bookmarkOf(c, i); b != nil {
				r := &referenced{Type: c.Str("type", i), PostID: c.Str("referenced_post_id", i), Text: c.Str("full_text", i),
					Created: c.Time("created_at", i), AuthorUsername: c.Str("author_username", i), ArticleTitle: c.Str("article_title", i), Error: c.Str("error", i)}
				if r.Text == "" {
					r.Text = c.Str("text", i)
				}
				b.Referenced = append(b.Referenced, r)
			}
		})
}

// mediaFiles attaches the stored files to the media of the bookmarks and
// of the posts they reference.
func (l *loader) mediaFiles() error {
	return l.snap.ReadRows("x_media_files", []string{"user_id", "post_id", "media_key", "status", "file_key"}, []string{"media_post_id", "media_type", "file"}, func(c *archive.Cols, i int) {
		b := l.bookmarkOf(c, i)
		if b == nil || c.Raw("status", i) != "stored" {
			return
		}
		list := &b.Media
		if owner := c.Raw("media_post_id", i); owner != "" && owner != b.PostID {
			list = nil
			for _, r := range b.Referenced {
				if r.PostID == owner {
					list = &r.Media
				}
			}
			if list == nil {
				return
			}
		}
		mk := c.Raw("media_key", i)
		at := slices.IndexFunc(*list, func(m media) bool { return m.key == mk })
		if at < 0 {
			*list = append(*list, media{key: strings.Clone(mk), Type: c.Str("media_type", i), position: int64(len(*list))})
			at = len(*list) - 1
		}
		if c.Raw("file", i) == "video" {
			(*list)[at].Video = c.Str("file_key", i)
		} else {
			(*list)[at].File = c.Str("file_key", i)
		}
	})
}

// folders reads each account's folders and their posts as the account's
// latest sync found them: each sync writes them all (_cq_sync_time).
func (l *loader) folders() error {
	latest := map[string]time.Time{} // by user id
	names := map[string]map[string]string{}
	err := l.snap.ReadRows("x_bookmark_folders", []string{"user_id", "folder_id", "name", "_cq_sync_time"}, nil, func(c *archive.Cols, i int) {
		uid, at := c.Str("user_id", i), c.Time("_cq_sync_time", i)
		if at.Before(latest[uid]) {
			return
		}
		if at.After(latest[uid]) {
			latest[uid], names[uid] = at, map[string]string{}
		}
		names[uid][c.Str("folder_id", i)] = c.Str("name", i)
	})
	if err != nil {
		return err
	}
	for uid, byID := range names {
		for id, name := range byID {
			l.lib.folders[uid] = append(l.lib.folders[uid], folder{ID: id, Name: name})
		}
		slices.SortFunc(l.lib.folders[uid], func(a, b folder) int { return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.ID, b.ID)) })
	}
	return l.snap.ReadRows("x_bookmark_folder_posts", []string{"user_id", "folder_id", "post_id", "_cq_sync_time"}, nil, func(c *archive.Cols, i int) {
		uid, fid := c.Raw("user_id", i), c.Raw("folder_id", i)
		b := l.bookmarkOf(c, i)
		if _, known := names[uid][fid]; b == nil || !known || !c.Time("_cq_sync_time", i).Equal(latest[uid]) {
			return
		}
		if !slices.Contains(b.folderIDs, fid) {
			b.folderIDs = append(b.folderIDs, strings.Clone(fid))
			b.Folders = append(b.Folders, names[uid][fid])
		}
	})
}

// compliance reads X's latest report of each post (x_post_compliance):
// a post it asks to remove shows as withdrawn (but for scrub_geo, which
// removes only its place).
func (l *loader) compliance() error {
	heard := map[key]time.Time{}
	l.reports = map[key]*withdrawal{}
	return l.snap.ReadRows("x_post_compliance", []string{"user_id", "post_id", "checked_at"}, []string{"action", "reason", "redacted_at"}, func(c *archive.Cols, i int) {
		k, at := key{c.Str("user_id", i), c.Str("post_id", i)}, c.Time("checked_at", i)
		if prev, ok := heard[k]; ok && prev.After(at) {
			return
		}
		heard[k] = at
		delete(l.reports, k)
		if reason := c.Str("reason", i); c.Str("action", i) != "" && reason != "scrub_geo" {
			w := &withdrawal{Reason: reason, At: c.Time("redacted_at", i)}
			if w.At.IsZero() {
				w.At = at
			}
			l.reports[k] = w
		}
	})
}

// finish marks the posts X reported withdrawn, orders the bookmarks newest
// bookmarked first (first_seen_at, then found_position) and their media by
// position, and lays out the text searches look in.
func (l *loader) finish() {
	accounts := map[string]bool{}
	for _, b := range l.lib.bookmarks {
		accounts[b.UserID] = true
		slices.SortStableFunc(b.Media, func(x, y media) int { return cmp.Compare(x.position, y.position) })
		b.Withdrawn = l.reports[key{b.UserID, b.PostID}]
		for _, r := range b.Referenced {
			r.Withdrawn = l.reports[key{b.UserID, r.PostID}]
		}
	}
	l.lib.accounts = slices.Sorted(maps.Keys(accounts))
	slices.SortFunc(l.lib.bookmarks, func(x, y *bookmark) int {
		return cmp.Or(y.Found.Compare(x.Found), cmp.Compare(x.position, y.position), cmp.Compare(x.UserID, y.UserID), cmp.Compare(y.PostID, x.PostID))
	})
	size := 0
	for _, b := range l.lib.bookmarks {
		size += len(b.Text) + len(b.AuthorName) + len(b.AuthorUsername) + len(b.ArticleTitle) + 4
	}
	text := make([]byte, 0, size+size/8) // lower case is seldom longer
	l.lib.starts = make([]int, 0, len(l.lib.bookmarks)+1)
	for _, b := range l.lib.bookmarks {
		l.lib.starts = append(l.lib.starts, len(text))
		for _, field := range []string{b.Text, b.AuthorName, b.AuthorUsername, b.ArticleTitle} {
			text = append(append(text, strings.ToLower(field)...), '\n')
		}
		text[len(text)-1] = 0
	}
	l.lib.text = string(text)
	l.lib.starts = append(l.lib.starts, len(text))
}
