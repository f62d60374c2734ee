// Package sandbox runs the X API simulator (sandbox/xsim) with a few demo
// accounts, for `cq-source-x sandbox` and `cq-source-x export --sandbox`:
// the whole plugin, no credentials, no cost.
package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// Account is one demo account.
type Account struct {
	UserID, Username, Token string
	// Bookmarks and Folders are the numbers seeded at start.
	Bookmarks, Folders int
}

// Sandbox is a running simulator with the demo accounts.
type Sandbox struct {
	*xsim.Server
	Accounts []Account
	// AppToken is the demo app's app-only bearer token, for the compliance
	// checks.
	AppToken string
}

// Options configure Start: the address ("" picks a free port on
// 127.0.0.1) and the simulator's clock (nil is the wall clock).
type Options struct {
	Addr  string
	Clock clock.Clock
}

// Start starts the simulator on loopback and seeds the demo accounts:
// alice with a few thousand bookmarks and three folders, bob with none,
// carol with a few and one folder.
func Start(o Options) (*Sandbox, error) {
	// X's compliance jobs take minutes, the demo's a second.
	sim := xsim.New(xsim.Options{Addr: o.Addr, Clock: o.Clock, Compliance: xsim.ComplianceOptions{Delay: time.Second}})
	if err := sim.Start(); err != nil {
		return nil, fmt.Errorf("starting the simulator: %w", err)
	}
	s := &Sandbox{Server: sim, AppToken: sim.IssueAppOnlyToken()}
	seed := func(id, username string, bookmarks int, folders map[string]int) {
		sim.AddUser(id, username)
		ids := sim.SeedBookmarks(id, bookmarks) // newest first
		n := 0
		for _, name := range []string{"reading", "recipes", "later", "inbox"} {
			size, ok := folders[name]
			if !ok {
				continue
			}
			n++
			folderID := fmt.Sprintf("%s%02d", id, n)
			sim.CreateFolder(id, folderID, name)
			// Spread over the list, added oldest first, so the folder is
			// newest-added first like the list.
			step := 7
			if size > 0 {
				step = max(1, min(7, len(ids)/size))
			}
			for i := min(len(ids), size*step) - 1; i >= 0; i -= step {
				sim.AddToFolder(id, folderID, ids[i])
			}
		}
		s.Accounts = append(s.Accounts, Account{UserID: id, Username: username, Token: sim.IssueToken(id),
			Bookmarks: bookmarks, Folders: n})
	}
	seed("1001", "alice", 3000, map[string]int{"reading": 40, "recipes": 12, "later": 0})
	seed("1002", "bob", 0, nil)
	seed("1003", "carol", 25, map[string]int{"inbox": 5})
	sim.SetAppOwner("", "1001") // alice made the demo's app: her reads are owned reads
	return s, nil
}

// Spec returns a CloudQuery spec file for the sandbox (the binary at
// pluginPath, registry local, and a file destination) for both `cq-source-x
// export --spec` and `cloudquery sync`. The compliance section, which needs
// a state backend this spec gives `cloudquery sync` none of, is commented
// out unless checkCompliance.
func (s *Sandbox) Spec(pluginPath string, checkCompliance bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, `# A CloudQuery spec for the cq-source-x sandbox: a simulated X API at %s
# (no credentials, no cost; the tokens below only work there).
#   cq-source-x export --spec THIS_FILE --out ./x-archive
#   cloudquery sync THIS_FILE
kind: source
spec:
  name: x
  path: %q
  registry: local
  version: v0.0.0
  tables: ["*"]
  destinations: ["file"]
  spec:
    base_url: %q
    content: # what is archived with each post, besides media, long text and articles (on by default)
      authors: true # x_bookmark_authors (X bills each author as a user read; the sandbox bills nothing)
    app_owner_user_id: "1001" # alice made the app: her bookmark reads are owned reads
    media_files: # the photos themselves (x_media_files): the exporter keeps them under its output directory
      store: %q # where cloudquery sync keeps them
    accounts:
`, s.URL(), pluginPath, s.URL(), mediaStoreURL())
	for _, a := range s.Accounts {
		fmt.Fprintf(&b, "      - user_id: %q # %s: bookmarks %d, folders %d\n        access_token: %q\n",
			a.UserID, a.Username, a.Bookmarks, a.Folders, a.Token)
	}
	prefix := "    "
	if !checkCompliance {
		prefix = "    # "
	}
	fmt.Fprintf(&b, `%[1]scompliance: # free checks for deleted posts (x_post_compliance); needs a state backend
%[1]s  bearer_token: %[2]q # the app's app-only bearer token
%[1]s  every: 0s # at every sync, for the demo (the default is 12h: a daily sync checks daily)
`, prefix, s.AppToken)
	b.WriteString(`---
kind: destination
spec:
  name: file
  path: cloudquery/file
  registry: cloudquery
  version: v5.5.1
  write_mode: append
  spec:
    path: "cq-file-output/{{TABLE}}/{{UUID}}.{{FORMAT}}"
    format: parquet
`)
	return b.String()
}

// mediaStoreURL is the store of the media files of a CloudQuery sync of
// the sandbox spec: beside the tables of its file destination.
func mediaStoreURL() string {
	dir, err := os.Getwd()
	if err != nil {
		dir = os.TempDir()
	}
	path := filepath.ToSlash(filepath.Join(dir, "cq-file-output", "media"))
	if !strings.HasPrefix(path, "/") {
		path = "/" + path // C:/... on Windows
	}
	return "file://" + path
}

// Changes is what Mutate did: the posts bookmarked for the first time,
// those added to folders (new folders included), the archived post its
// author deleted, and a line for each change.
type Changes struct {
	NewBookmarks, FolderAdds int
	Deleted                  string
	Lines                    []string
}

// Mutate changes the demo lists as a user would between two syncs: new
// bookmarks, the newest one removed, an old one bookmarked again, and
// folder changes.
func (s *Sandbox) Mutate() Changes {
	sim := s.Server
	var c Changes
	note := func(f string, a ...any) { c.Lines = append(c.Lines, fmt.Sprintf(f, a...)) }

	alice := sim.Bookmarks("1001")
	newest, old, gone := alice[0], alice[len(alice)*5/6], alice[len(alice)/3]
	for _, id := range alice[len(alice)/3 : len(alice)*5/6] { // one with media: the demo shows its files go too
		if len(sim.PostContent(id).MediaKeys) > 0 {
			gone = id
			break
		}
	}
	_ = sim.DeletePost(gone)
	c.Deleted = gone
	note("the author of alice's bookmark %s deleted the post (it leaves her list; only the compliance job says so)", gone)
	_ = sim.Unbookmark("1001", newest)
	note("alice removed her newest bookmark %s", newest)
	_ = sim.Bookmark("1001", old)
	note("alice bookmarked an old post again: %s moves to the top", old)
	added := sim.SeedBookmarks("1001", 10)
	c.NewBookmarks += len(added)
	note("alice bookmarked %d new posts", len(added))
	folders := sim.Folders("1001")
	sim.AddToFolder("1001", folders[0].ID, added[0])
	sim.AddToFolder("1001", folders[0].ID, added[1])
	sim.RemoveFromFolder("1001", folders[0].ID, sim.FolderPosts("1001", folders[0].ID)[5])
	sim.CreateFolder("1001", "100104", "travel")
	for _, id := range added[2:5] {
		sim.AddToFolder("1001", "100104", id)
	}
	c.FolderAdds += 5
	note("alice added 2 posts to %q, removed one from it, and made a folder \"travel\" with 3", folders[0].Name)

	c.NewBookmarks += len(sim.SeedBookmarks("1002", 1))
	note("bob bookmarked his first post")
	c.NewBookmarks += len(sim.SeedBookmarks("1003", 3))
	note("carol bookmarked 3 new posts")
	return c
}

// FullReadPosts is what re-reading every list from the top would bill now.
func (s *Sandbox) FullReadPosts() int {
	n := 0
	for _, a := range s.Accounts {
		n += len(s.Bookmarks(a.UserID))
		for _, f := range s.Folders(a.UserID) {
			n += len(s.FolderPosts(a.UserID, f.ID))
		}
	}
	return n
}
