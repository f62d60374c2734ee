package e2e

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
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

// An account whose spec user_id and token file disagree fails, and reads no
// state of either user: it does not emit the folders remembered for the
// spec's user (whose real account may be listed too).
func TestAnAccountWhoseTokenFileIsAnotherUsersEmitsNothing(t *testing.T) {
	h := newHarness(t, 20)
	h.sim.CreateFolder(user, "77", "reading")
	h.sim.AddToFolder(user, "77", h.sim.Bookmarks(user)[0])
	tables := []string{"x_bookmark_folders", "x_api_usage"}
	if got := h.folderPosts(h.sync(tables...)); len(got) != 1 {
		t.Fatalf("first sync: %d folder posts, want 1", len(got))
	}
	path := filepath.Join(t.TempDir(), "bob.json")
	bob := &auth.StoredToken{AccessToken: h.sim.IssueToken("1002"), TokenType: "bearer", ClientID: "app", UserID: "1002",
		Expiry: h.clk.Now().Add(48 * time.Hour), UpdatedAt: h.clk.Now()}
	if err := (auth.TokenFile{Path: path}).Save(bob); err != nil {
		t.Fatal(err)
	}
	h.spec["accounts"] = []map[string]any{{"user_id": user, "token_file": path, "client_id": "app"}}
	r := h.sync(tables...)
	if got := h.folderPosts(r); len(got) != 0 {
		t.Fatalf("the mismatched account emitted %v", got)
	}
	if !strings.Contains(strings.Join(r.errors, "\n"), "belongs to user 1002") {
		t.Fatalf("errors %v do not name the token file's user", r.errors)
	}
}
