package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/test/xsim"
)

// A folder that did not change bills its held post and one confirmation,
// however many folders the account has: the folder request budget is shared
// among the folders, and a walk planned for a single request would have to
// read a whole page in it (90 posts a folder with 21 folders or more).
func TestUnchangedFoldersBillTheirHeldPostAndConfirmation(t *testing.T) {
	const folders, each = 40, 20
	h := newHarness(t, folders*each)
	bookmarks := h.sim.Bookmarks(user)
	for f := range folders {
		id := fmt.Sprint(100 + f)
		h.sim.CreateFolder(user, id, "folder "+id)
		for _, post := range bookmarks[f*each : (f+1)*each] {
			h.sim.AddToFolder(user, id, post)
		}
	}
	tables := []string{"x_bookmark_folders", "x_api_usage"}
	if got := len(h.folderPosts(h.sync(tables...))); got != folders*each {
		t.Fatalf("first sync: %d folder posts, want %d", got, folders*each)
	}
	before := h.sim.Usage(user)[xsim.OpGetFolder]
	r := h.sync(tables...)
	after := h.sim.Usage(user)[xsim.OpGetFolder]
	if got := len(h.folderPosts(r)); got != folders*each {
		t.Fatalf("second sync: %d folder posts, want %d", got, folders*each)
	}
	if billed, want := after.PostsReturned-before.PostsReturned, folders*2; billed > want {
		t.Fatalf("nothing changed in %d folders, and the sync billed %d folder posts in %d requests; want at most %d",
			folders, billed, after.Requests-before.Requests, want)
	}
}

// An account that cannot be set up (here its token file is missing) reads
// nothing, and emits the folders and memberships of its last successful
// sync again: with overwrite-delete-stale, a failure never removes rows.
func TestAnAccountThatCannotBeSetUpKeepsItsFolderRows(t *testing.T) {
	h := newHarness(t, 20)
	h.sim.CreateFolder(user, "77", "reading")
	for _, id := range h.sim.Bookmarks(user)[:5] {
		h.sim.AddToFolder(user, "77", id)
	}
	tables := []string{"x_bookmark_folders", "x_api_usage"}
	first := h.folderPosts(h.sync(tables...))
	if len(first) != 5 {
		t.Fatalf("first sync: %d folder posts, want 5", len(first))
	}
	h.spec["accounts"] = []map[string]any{{"user_id": user, "token_file": filepath.Join(t.TempDir(), "missing.json")}}
	requestsBefore := h.sim.Usage(user)[xsim.OpListFolders].Requests
	r := h.sync(tables...)
	if got := h.folderPosts(r); !slices.Equal(got, first) {
		t.Fatalf("with the account's setup failing, the folder posts were %v, want the last membership %v", got, first)
	}
	if n := h.sim.Usage(user)[xsim.OpListFolders].Requests; n != requestsBefore {
		t.Fatalf("%d folder listings with no token", n-requestsBefore)
	}
	if len(r.errors) == 0 || !strings.Contains(strings.Join(r.errors, "\n"), "missing.json") {
		t.Fatalf("the sync's errors do not name the missing token file: %v", r.errors)
	}
}
