package archive

import (
	"path/filepath"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/walk"
)

// StateInfo is what an output directory's committed state says, for tests
// and troubleshooting.
type StateInfo struct {
	// Archived lists, per user id, the post ids of the x_bookmarks rows in
	// committed files; HeldBookmarks the posts the bookmarks walk remembers,
	// newest first, and HeldFolders, per folder id, each folder walk's.
	Archived, HeldBookmarks map[string][]string
	HeldFolders             map[string]map[string][]string
	// Pending lists the files of a committed run that is not marked
	// published yet: each is at its staged path or its final one.
	Pending []PendingFile
	LastRun string // the id of the last published run
	Keys    map[string]string
}

type PendingFile struct {
	Table, Staged, Final string
}

// ReadState reads the committed state of an output directory (without
// recovering it or taking its lock).
func ReadState(dir string) (*StateInfo, error) {
	out, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	s, err := loadState(out)
	if err != nil {
		return nil, err
	}
	info := &StateInfo{Archived: map[string][]string{}, HeldBookmarks: map[string][]string{}, HeldFolders: map[string]map[string][]string{}, Keys: s.Keys}
	posts, err := s.ArchivedPosts()
	if err != nil {
		return nil, err
	}
	for uid, ids := range posts {
		info.Archived[uid] = ids.Strings()
	}
	for key, value := range s.Keys {
		k, _ := account.ParseKey(key)
		if k.Kind != account.BookmarksMemory && k.Kind != account.FolderMemory {
			continue
		}
		mem, err := walk.UnmarshalMemory(value)
		switch {
		case err != nil:
			return nil, err
		case mem == nil || mem.Held == nil:
		case k.Kind == account.BookmarksMemory:
			info.HeldBookmarks[k.User] = mem.Held.IDs()
		case info.HeldFolders[k.User] == nil:
			info.HeldFolders[k.User] = map[string][]string{k.Folder: mem.Held.IDs()}
		default:
			info.HeldFolders[k.User][k.Folder] = mem.Held.IDs()
		}
	}
	if s.Pending != nil {
		for _, f := range s.Pending.Files {
			info.Pending = append(info.Pending, PendingFile{Table: f.Table, Staged: s.Pending.StagedPath(out, f.Table), Final: FinalPath(out, f)})
		}
	}
	if s.LastRun != nil {
		info.LastRun = s.LastRun.ID
	}
	return info, nil
}
