package e2e

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// mediaHarness is a harness whose spec stores media files in a directory.
func mediaHarness(t *testing.T, bookmarks int, section map[string]any) (*harness, string) {
	t.Helper()
	h := newHarness(t, bookmarks)
	dir := t.TempDir()
	if section == nil {
		section = map[string]any{}
	}
	if _, ok := section["store"]; !ok {
		section["store"] = "file://" + filepath.ToSlash(dir)
	}
	h.spec["media_files"] = section
	// Rows once each: the tests count what each sync sends of its own
	// (TestAStoppedSyncLosesNoMediaFileRow sends them again).
	h.spec["resend"] = map[string]any{"syncs": 1}
	return h, dir
}

var mediaTables = []string{"x_bookmarks", "x_media_files", "x_api_usage"}

// storedFiles checks that every stored row's file is in dir, whole (its
// SHA-256), and returns the rows by status.
func storedFiles(t *testing.T, dir string, rows []map[string]string) map[string][]map[string]string {
	t.Helper()
	out := map[string][]map[string]string{}
	for _, r := range rows {
		out[r["status"]] = append(out[r["status"]], r)
		if r["status"] != "stored" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(r["file_key"])))
		if err != nil {
			t.Fatalf("row %v: %v", r, err)
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != r["sha256"] || fmt.Sprint(len(data)) != r["size"] {
			t.Fatalf("row %v: the file holds %d bytes of another hash", r, len(data))
		}
	}
	return out
}

// mediaURLsOf counts the media of posts: photos (of the posts and their
// articles), and videos and GIFs.
func mediaURLsOf(h *harness, ids []string) (photos, videos int) {
	for _, id := range ids {
		p := h.sim.PostContent(id)
		keys := p.MediaKeys
		if p.Article != nil {
			keys = append(append(keys, p.Article.CoverMedia), p.Article.MediaEntities...)
		}
		seen := map[string]bool{"": true} // a post's media once, as x_bookmark_media has them
		for _, k := range keys {
			switch {
			case seen[k]:
			case strings.HasPrefix(k, "3_"):
				photos++
			default:
				videos++
			}
			seen[k] = true
		}
	}
	return photos, videos
}

func TestASyncStoresThePhotosOfTheBookmarksAndSendsNoCredentialForThem(t *testing.T) {
	h, dir := mediaHarness(t, 150, nil)
	r := h.sync(mediaTables...)
	byStatus := storedFiles(t, dir, r.tables["x_media_files"])
	photos, videos := mediaURLsOf(h, h.sim.Bookmarks(user))
	// Photos, and the stills of videos and GIFs: videos are off by default.
	if len(byStatus["stored"]) != photos+videos || len(r.tables["x_media_files"]) != photos+videos {
		t.Fatalf("%d files stored of %d rows; the bookmarks have %d photos and %d videos and GIFs", len(byStatus["stored"]), len(r.tables["x_media_files"]), photos, videos)
	}
	for _, row := range byStatus["stored"] {
		if row["file"] == "video" || !strings.HasPrefix(row["content_type"], "image/") {
			t.Fatalf("with videos off: %v", row)
		}
	}
	reqs := h.sim.MediaRequests()
	if len(reqs) == 0 {
		t.Fatal("no request reached the media host")
	}
	for _, q := range reqs {
		if q.Authorization != "" {
			t.Fatalf("a media request carried Authorization %q", q.Authorization)
		}
	}
	u := r.usage["media_files"]
	if u["files_stored"] != fmt.Sprint(photos+videos) || u["bytes_fetched"] == "0" || u["estimated_usd"] != "0" {
		t.Fatalf("usage row %v", u)
	}
}

func TestVideosAndGIFsAreStoredWithTheirStill(t *testing.T) {
	h, dir := mediaHarness(t, 200, map[string]any{"videos": true})
	r := h.sync(mediaTables...)
	byStatus := storedFiles(t, dir, r.tables["x_media_files"])
	kinds := map[string]int{}
	for _, row := range byStatus["stored"] {
		kinds[row["media_type"]+"/"+row["file"]]++
		if row["file"] == "video" && (row["content_type"] != "video/mp4" || !strings.Contains(row["url"], "1280x720") && row["media_type"] == "video") {
			t.Fatalf("a video stored other than its best variant: %v", row)
		}
	}
	if kinds["video/video"] == 0 || kinds["video/video"] != kinds["video/still"] || kinds["animated_gif/video"] != kinds["animated_gif/still"] || kinds["photo/photo"] == 0 {
		t.Fatalf("files stored by kind: %v", kinds)
	}
}

// A file is fetched once: a later sync fetches only the files of new
// bookmarks, and a second account that saved the same posts fetches none.
func TestAMediaFileIsFetchedOnce(t *testing.T) {
	h, dir := mediaHarness(t, 100, nil)
	first := h.sync(mediaTables...)
	before := len(h.sim.MediaRequests())
	if before == 0 || len(first.tables["x_media_files"]) == 0 {
		t.Fatal("the first sync stored nothing")
	}
	second := h.sync(mediaTables...)
	if n := len(h.sim.MediaRequests()); n != before || len(second.tables["x_media_files"]) != 0 {
		t.Fatalf("a sync with no new bookmark made %d media requests and sent %d rows", n-before, len(second.tables["x_media_files"]))
	}
	const other = "1002"
	for _, id := range h.sim.Bookmarks(user) {
		if err := h.sim.Bookmark(other, id); err != nil {
			t.Fatal(err)
		}
	}
	h.spec["accounts"] = append(h.spec["accounts"].([]map[string]any), map[string]any{"user_id": other, "access_token": h.sim.IssueToken(other)})
	third := h.sync(mediaTables...)
	rowsOf := map[string]int{}
	for _, row := range third.tables["x_media_files"] {
		rowsOf[row["user_id"]+"/"+row["status"]]++
	}
	if n := len(h.sim.MediaRequests()); n != before || rowsOf[other+"/stored"] != len(first.tables["x_media_files"]) {
		t.Fatalf("the second account's files: %d media requests, rows %v", n-before, rowsOf)
	}
	if u := third.usageOf[other]["media_files"]; u["bytes_fetched"] != "0" || u["requests"] != "0" {
		t.Fatalf("the second account's usage: %v", u)
	}
	storedFiles(t, dir, third.tables["x_media_files"])
}

// Files that failed for a reason that may pass are fetched by the next
// sync; files that are gone are not asked for again.
func TestTransientFailuresAreFetchedByTheNextSyncAndGoneOnesAreNot(t *testing.T) {
	h, dir := mediaHarness(t, 0, nil)
	h.spec["max_attempts"] = 1 // the next sync tries again
	var ids []string
	for len(ids) < 3 {
		id := h.sim.NewPostID()
		if keys := h.sim.PostContent(id).MediaKeys; len(keys) == 1 && strings.HasPrefix(keys[0], "3_") {
			ids = append(ids, id)
			if err := h.sim.Bookmark(user, id); err != nil {
				t.Fatal(err)
			}
		}
	}
	path := func(id string) string { return xsim.MediaPaths(h.sim.PostContent(id).MediaKeys[0])[0] }
	h.sim.SetMediaFault(path(ids[0]), xsim.MediaFault{Status: http.StatusServiceUnavailable})
	h.sim.SetMediaFault(path(ids[1]), xsim.MediaFault{CutAfter: 100})
	h.sim.SetMediaFault(path(ids[2]), xsim.MediaFault{Status: http.StatusNotFound})
	first := h.sync(mediaTables...)
	status := func(r syncResult) map[string]string {
		out := map[string]string{}
		for _, row := range r.tables["x_media_files"] {
			out[row["post_id"]] = row["status"]
		}
		return out
	}
	if got := status(first); got[ids[0]] != "transient" || got[ids[1]] != "transient" || got[ids[2]] != "gone" {
		t.Fatalf("first sync: %v", got)
	}
	h.sim.SetMediaFault(path(ids[0]), xsim.MediaFault{})
	h.sim.SetMediaFault(path(ids[1]), xsim.MediaFault{})
	requestsOf := func(p string) int {
		n := 0
		for _, q := range h.sim.MediaRequests() {
			if q.Path == p {
				n++
			}
		}
		return n
	}
	goneBefore := requestsOf(path(ids[2]))
	second := h.sync(mediaTables...)
	if got := status(second); len(got) != 2 || got[ids[0]] != "stored" || got[ids[1]] != "stored" {
		t.Fatalf("second sync: %v", got)
	}
	if requestsOf(path(ids[2])) != goneBefore {
		t.Fatal("a file that was gone was asked for again")
	}
	storedFiles(t, dir, second.tables["x_media_files"])
}

// The byte budget stops a sync's fetches; the files past it are fetched by
// the next syncs, oldest first, and a file too large is fetched once the
// limit is raised above it.
func TestFilesPastTheBudgetOrTheSizeLimitAreFetchedLater(t *testing.T) {
	h, _ := mediaHarness(t, 60, map[string]any{"max_file_size": 30 << 10, "max_bytes_per_run": 100 << 10})
	var files int
	statuses := map[string]string{}
	for round := 0; round < 12; round++ {
		r := h.sync(mediaTables...)
		for _, row := range r.tables["x_media_files"] {
			statuses[row["url"]] = row["status"]
		}
		if round == 0 {
			files = len(statuses)
		}
		if b := r.usage["media_files"]["bytes_fetched"]; b != "" && len(b) > 6 {
			t.Fatalf("sync %d fetched %s bytes, over its budget", round, b)
		}
	}
	counts := map[string]int{}
	for _, s := range statuses {
		counts[s]++
	}
	if counts["over_budget"] != 0 || counts["too_large"] == 0 || counts["stored"]+counts["too_large"] != files {
		t.Fatalf("after 12 syncs of a budget of 100 KB: %v", counts)
	}
	h.spec["media_files"].(map[string]any)["max_file_size"] = "1MB"
	h.spec["media_files"].(map[string]any)["max_bytes_per_run"] = 0
	r := h.sync(mediaTables...)
	for _, row := range r.tables["x_media_files"] {
		if row["status"] != "stored" {
			t.Fatalf("with the limit raised: %v", row)
		}
		statuses[row["url"]] = row["status"]
	}
	if len(r.tables["x_media_files"]) != counts["too_large"] {
		t.Fatalf("%d rows once the limit was raised, %d files were too large", len(r.tables["x_media_files"]), counts["too_large"])
	}
}

// With no store, the media pass fails alone: the bookmarks are archived,
// their files recorded, and the first sync with a store fetches them.
func TestWithoutAStoreTheFilesWaitForASyncWithOne(t *testing.T) {
	h, dir := mediaHarness(t, 40, map[string]any{"store": nil})
	delete(h.spec["media_files"].(map[string]any), "store")
	first := h.sync(mediaTables...)
	if len(first.newRows) != 40 || len(first.tables["x_media_files"]) != 0 {
		t.Fatalf("first sync: %d bookmarks, %d media file rows", len(first.newRows), len(first.tables["x_media_files"]))
	}
	if f := first.usage["media_files"]["failure"]; !strings.Contains(f, "media_files.store is not set") {
		t.Fatalf("usage failure %q", f)
	}
	if !slices.ContainsFunc(first.errors, func(e string) bool { return strings.Contains(e, "media_files.store is not set") }) {
		t.Fatalf("sync errors %v", first.errors)
	}
	h.spec["media_files"].(map[string]any)["store"] = "file://" + filepath.ToSlash(dir)
	second := h.sync(mediaTables...)
	photos, videos := mediaURLsOf(h, h.sim.Bookmarks(user))
	if got := len(storedFiles(t, dir, second.tables["x_media_files"])["stored"]); got != photos+videos {
		t.Fatalf("the sync with a store stored %d files of %d", got, photos+videos)
	}
}

// The media of the posts a bookmark references are stored with it, keyed by
// the bookmark and naming the post they are attached to.
func TestTheMediaOfReferencedPostsAndArticlesAreStored(t *testing.T) {
	dir := t.TempDir()
	c := syncExamples(t, xsim.Options{}, map[string]any{
		"content":     map[string]any{"referenced_posts": true},
		"media_files": map[string]any{"store": "file://" + filepath.ToSlash(dir), "videos": true},
	})
	byStatus := storedFiles(t, dir, c.rows["x_media_files"])
	seen := map[string]bool{}
	for _, row := range byStatus["stored"] {
		seen[row["post_id"]+" "+row["media_post_id"]+" "+row["file"]] = true
	}
	for _, want := range []string{
		c.ex.LongPost + " " + c.ex.LongPost + " photo",
		c.ex.LongPost + " " + c.ex.LongPost + " video",
		c.ex.LongPost + " " + c.ex.LongPost + " still",
		c.ex.LongPost + " " + c.ex.Quoted + " photo",
		c.ex.ArticlePost + " " + c.ex.ArticlePost + " photo",
	} {
		if !seen[want] {
			t.Errorf("no stored file %q among %v", want, seen)
		}
	}
	if len(byStatus) != 1 {
		t.Errorf("statuses %v", byStatus)
	}
	for _, q := range c.sim.MediaRequests() {
		if q.Authorization != "" {
			t.Fatalf("a media request of a sync over gRPC carried Authorization %q", q.Authorization)
		}
	}
}

// Media file rows: syncs stopped right after the media pass's state, which
// records the files as stored, reached the backend. The rows are sent
// again: after a clean sync the destination holds a stored row for every
// file of every bookmark, as when no sync is stopped.
func TestAStoppedSyncLosesNoMediaFileRow(t *testing.T) {
	run := func(t *testing.T, c stopCase, stop *stopKind) *deliveryEnv {
		e := newStopEnv(t, c, 30)
		e.spec["media_files"] = map[string]any{"store": "file://" + filepath.ToSlash(t.TempDir())}
		e.sync(nil, nil)
		for range 2 {
			for n := 0; n < 4; {
				if id := e.sim.NewPostID(); len(e.sim.PostContent(id).MediaKeys) > 0 {
					_ = e.sim.Bookmark(user, id)
					n++
				}
			}
			// The walk's flush records the new posts' files; the media
			// pass's, the second of the sync to write the key, their status.
			writes := 0
			isMediaPass := func(key string) bool {
				if key != account.RecordKey(user) {
					return false
				}
				writes++
				return writes == 2
			}
			if stopped := e.sync(stop, isMediaPass); stopped != (stop != nil) {
				t.Fatalf("stopped: %v", stopped)
			}
		}
		e.sync(nil, nil)
		return e
	}
	// Each run has a simulator of its own, on a port of its own.
	byFile := func(e *deliveryEnv) map[string]map[string]string {
		out := map[string]map[string]string{}
		for _, row := range e.dest.rows["x_media_files"] {
			out[row["post_id"]+" "+row["media_key"]+" "+strings.TrimPrefix(row["url"], e.sim.MediaURL())] = row
		}
		return out
	}
	unstopped := run(t, stopCase{}, nil)
	files := map[string]string{}
	for key, row := range byFile(unstopped) {
		if row["status"] != "stored" {
			t.Fatalf("unstopped: %v", row)
		}
		files[key] = row["file_key"]
	}
	if len(files) < 8 {
		t.Fatalf("the unstopped syncs stored %d files", len(files))
	}
	for _, c := range stopCases {
		t.Run(c.String(), func(t *testing.T) {
			e := run(t, c, &c.kind)
			got := byFile(e)
			for key, fileKey := range files {
				row, ok := got[key]
				if !ok || row["status"] != "stored" || row["file_key"] != fileKey {
					t.Fatalf("file %s: %v", key, row)
				}
			}
		})
	}
}
