// Package archive is the exporter's output directory: its layout, its
// lock, its state file (the plugin's state keys, the written ids, the runs),
// and the protocol that keeps it whole across any crash, with the commands
// that work on it: compaction, repair, inspection. Its tables are the
// plugin's and x_bookmark_changes, which the bookmark commands write
// (package bookmarks, with their journal in DIR/.ops).
//
// # Layout
//
//	DIR/<table>/<time>-<run>.parquet   the files of each table (name order is time order)
//	DIR/.state/state.json              the state (State)
//	DIR/.staging/<run>/                the files of a run not yet published
//	DIR/.tables/<table>/<generation>/  the files of a compacted table (generation.go)
//	DIR/media/                         the media files, by content hash (package media/store)
//	DIR/.ops/<kind>/<user>.plan|.log   the journal of a bookmark command (package bookmarks)
//	DIR/.damaged/<table>/              the files a repair moved aside
//	DIR/.lock                          held by the command working on DIR
//
// # Crash safety
//
// A run stages its files (written, fsynced), commits by replacing the
// state file atomically with the new walk state, the ids written and the
// run's files (Pending), then publishes them into DIR/<table>/. Every
// command that changes the archive starts with Recover, under the lock:
// so the state never describes data not durably on disk, and no
// (user_id, post_id) is written twice (docs/export.md, "Crash safety").
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
