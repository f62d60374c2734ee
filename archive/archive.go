// Package archive is the exporter's output directory: its layout, its
// lock, its state file and the protocol that keeps it whole across any
// crash, with the commands that work on it: compaction, repair, inspection
// (docs/design/exporter.md, docs/export.md). Its own table is
// x_bookmark_changes, which the bookmark commands write (package bookmarks).
package archive

import "path/filepath"

// Program writes an archive's files, which their metadata names.
type Program struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

func (p Program) String() string { return "cq-source-x " + p.Version }

const (
	stateDir   = ".state"
	stateFile  = "state.json"
	stagingDir = ".staging"
	lockFile   = ".lock"
	mediaDir   = "media"
)

// MediaPath is the directory of an archive's media files: its rows of
// x_media_files name them by their key in it.
func MediaPath(out string) string { return filepath.Join(out, mediaDir) }

// BookmarkTables names the plugin's table of the bookmarks, a row per
// (user_id, post_id), and its content tables, written with each
// bookmark's row. The exporter gives them.
type BookmarkTables struct {
	Bookmarks string
	Content   []string
}
