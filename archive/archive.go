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
// A run stages every table's file under DIR/.staging/<run>/ (written and
// fsynced), then commits by atomically replacing DIR/.state/state.json with
// the new walk state, the ids written, and the list of the run's files
// (pending). It then publishes: renames each staged file into DIR/<table>/,
// syncs the directories, and marks the run published in the state file.
// Every start first finishes publishing a committed run and deletes the
// staging directories of runs that never committed (their posts are fetched
// again: billed again, never lost): Recover. The state therefore never
// describes data that is not durably on disk, and since the state lists the
// post ids already written per account, no (user_id, post_id) is written
// twice. The lock keeps two commands apart. See docs/export.md.
package archive

import "path/filepath"

// Program is the program that writes an archive's files, which their
// metadata names: the plugin's name and version.
type Program struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// String is the program as the files' created_by says it.
func (p Program) String() string { return "cq-source-x " + p.Version }

// Layout of an output directory.
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

// BookmarkTables names the plugin's tables of bookmarks: the table of the
// bookmarks, one row per (user_id, post_id), and its content tables, whose
// rows are written with each bookmark's. The exporter gives them.
type BookmarkTables struct {
	Bookmarks string
	Content   []string
}
