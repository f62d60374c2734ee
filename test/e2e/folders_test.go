package e2e

import (
	"fmt"
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
