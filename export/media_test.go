package export_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/media"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// mediaYAML stores photos; the store URL is one a CloudQuery sync would
// use, which the exporter does not: its files go under DIR/media.
const mediaYAML = "    media_files: {store: \"file:///nonexistent/not-used-by-the-exporter\"}\n"

// mediaKeysOf lists the media of a post and its article, each once: with
// photos on, a file each (a photo, or a video's or GIF's still).
func mediaKeysOf(sim *xsim.Server, id string) []string {
	p := sim.PostContent(id)
	keys := p.MediaKeys
	if p.Article != nil {
		keys = append(append(keys, p.Article.CoverMedia), p.Article.MediaEntities...)
	}
	var out []string
	seen := map[string]bool{"": true}
	for _, k := range keys {
		if !seen[k] {
			out = append(out, k)
		}
		seen[k] = true
	}
	return out
}

// wantedMediaFiles counts the files of the users' bookmarks with photos on.
func wantedMediaFiles(sim *xsim.Server, users []demoUser) int {
	n := 0
	for _, u := range users {
		for _, id := range sim.Bookmarks(u.id) {
			n += len(mediaKeysOf(sim, id))
		}
	}
	return n
}

// checkMediaDir checks that every file under DIR/media is whole: named by
// the SHA-256 of its content. A file half written is never under its name.
func checkMediaDir(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	root := archive.MediaPath(dir)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if os.IsNotExist(err) && path == root {
			return filepath.SkipDir
		}
		if err != nil || d.IsDir() {
			if d != nil && d.IsDir() && path != root && strings.HasPrefix(d.Name(), ".") { // the store's own: spools, index, marks
				return filepath.SkipDir
			}
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		sum := sha256.Sum256(data)
		if !strings.HasPrefix(d.Name(), hex.EncodeToString(sum[:])) {
			t.Errorf("%s holds %d bytes of another hash: a partial file is visible", path, len(data))
		}
		n++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// storedMediaRows returns the newest row of each file (its status), and
// checks that every row that says stored names a whole file of DIR/media.
func storedMediaRows(t *testing.T, dir string, rows []map[string]string) map[string]map[string]string {
	t.Helper()
	newest := map[string]map[string]string{}
	for _, r := range rows {
		id := r["user_id"] + " " + r["post_id"] + " " + r["media_key"] + " " + r["url"]
		if old, ok := newest[id]; !ok || old["checked_at"] <= r["checked_at"] {
			newest[id] = r
		}
		if r["status"] != string(media.Stored) {
			continue
		}
		data, err := os.ReadFile(filepath.Join(archive.MediaPath(dir), filepath.FromSlash(r["file_key"])))
		if err != nil {
			t.Fatalf("row %v names a file the archive does not hold: %v", r, err)
		}
		sum := sha256.Sum256(data)
		if hex.EncodeToString(sum[:]) != r["sha256"] || fmt.Sprint(len(data)) != r["size"] {
			t.Fatalf("row %v: the file holds %d bytes of another hash", r, len(data))
		}
	}
	return newest
}

// checkMediaStateNotAhead checks that the committed state says stored only
// of files DIR/media holds whole.
func checkMediaStateNotAhead(t *testing.T, dir string, users []demoUser) (stored int) {
	t.Helper()
	info, err := archive.ReadState(dir)
	if err != nil {
		t.Fatalf("the state does not load: %v", err)
	}
	for _, u := range users {
		rec, err := archived.Unmarshal(info.Keys[account.RecordKey(u.id)], "record")
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range rec.Files {
			if f.Status != media.Stored {
				continue
			}
			stored++
			if _, err := os.Stat(filepath.Join(archive.MediaPath(dir), filepath.FromSlash(f.FileKey))); err != nil {
				t.Fatalf("the state says %s of post %s stored, but: %v", f.URL, f.PostID, err)
			}
		}
	}
	return stored
}

// The exporter stores the media files under DIR/media, named by their
// content, each once: a second run fetches only the files of what is new.
func TestTheExporterStoresMediaFilesInTheArchiveOnce(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 60}, {id: "1002", bookmarks: 20}}
	src, err := cqspec.Parse([]byte(specYAML(sim.URL(), users, seed(sim, users), `["*"]`)+mediaYAML), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	clk.Advance(time.Hour)
	if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk}); err != nil {
		t.Fatal(err)
	}
	files := storedMediaRows(t, dir, tableRows(t, dir, "x_media_files"))
	want := wantedMediaFiles(sim, users)
	if want == 0 || len(files) != want {
		t.Fatalf("%d files have rows; the bookmarks have %d", len(files), want)
	}
	for _, r := range files {
		if r["status"] != string(media.Stored) {
			t.Fatalf("not stored: %v", r)
		}
	}
	if n := checkMediaStateNotAhead(t, dir, users); n != want {
		t.Fatalf("the state says %d files stored, want %d", n, want)
	}
	checkMediaDir(t, dir)
	asked := len(sim.MediaRequests())

	clk.Advance(time.Hour)
	var post string
	for post == "" || len(mediaKeysOf(sim, post)) == 0 {
		post = sim.NewPostID()
	}
	sim.Bookmark("1001", post)
	if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk}); err != nil {
		t.Fatal(err)
	}
	rows := tableRows(t, dir, "x_media_files")
	files = storedMediaRows(t, dir, rows)
	if want := wantedMediaFiles(sim, users); len(files) != want || len(rows) != want {
		t.Fatalf("after a second run: %d rows of %d files, want %d of each", len(rows), len(files), want)
	}
	var paths []string
	for _, k := range mediaKeysOf(sim, post) {
		paths = append(paths, xsim.MediaPaths(k)...)
	}
	again := sim.MediaRequests()[asked:]
	if len(again) == 0 {
		t.Fatal("the second run fetched nothing of the new bookmark")
	}
	for _, q := range again {
		if !slices.Contains(paths, q.Path) {
			t.Fatalf("the second run asked for %s, of no new bookmark (those are %q)", q.Path, paths)
		}
	}
}

// TestKill9WhileStoringMediaFiles kills the exporter at every step of
// storing each media file (the spool synced, the file renamed into place,
// the file stored, its URL's index entry renamed and stored), and at every
// step after the last file (the commit of the rows and the state that name
// the files, the publishing), in a first run and an incremental one. After each kill no partial file is visible and
// the committed state says stored only of files the archive holds whole;
// the next run finishes: every file its rows name is in DIR/media, whole.
func TestKill9WhileStoringMediaFiles(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns a few dozen processes")
	}
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 30}, {id: "1002", bookmarks: 10}}
	spec := filepath.Join(t.TempDir(), "spec.yml")
	if err := os.WriteFile(spec, []byte(specYAML(sim.URL(), users, seed(sim, users), `["*"]`)+mediaYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	n := 0
	newDir := func() string { n++; return filepath.Join(base, strconv.Itoa(n)) }

	finished := func(t *testing.T, dir string) {
		t.Helper()
		want := wantedMediaFiles(sim, users)
		files := storedMediaRows(t, dir, tableRows(t, dir, "x_media_files"))
		stored := 0
		for _, r := range files {
			if r["status"] == string(media.Stored) {
				stored++
			}
		}
		if stored != want || len(files) != want {
			t.Fatalf("%d files stored of %d with rows; the bookmarks have %d", stored, len(files), want)
		}
		if n := checkMediaStateNotAhead(t, dir, users); n != want {
			t.Fatalf("the state says %d files stored, want %d", n, want)
		}
		checkMediaDir(t, dir)
		checkArchive(t, dir, sim, users)
	}
	killAtMediaSteps := func(phase, template string) {
		dir := newDir()
		if template != "" {
			copyDir(t, template, dir)
		}
		clean := runChild(t, spec, dir, 0, 0)
		if clean.killed || clean.code != 0 {
			t.Fatalf("%s: clean run failed: %s", phase, clean.output)
		}
		finished(t, dir)
		// Every step of storing each file, and every step after the last
		// (the commit of the rows and the state that name the files, the
		// publishing).
		at := map[int]bool{}
		kinds := map[string]bool{}
		lastMedia := 0
		for i, s := range clean.steps {
			if strings.HasPrefix(s, "media ") {
				at[i+1], kinds[s], lastMedia = true, true, i+1
			}
		}
		if len(kinds) != 5 {
			t.Fatalf("%s: the steps of storing a file are %v", phase, kinds)
		}
		for k := lastMedia + 1; k <= len(clean.steps); k++ {
			at[k] = true
		}
		t.Run(phase, func(t *testing.T) {
			for k := range at {
				dir := newDir()
				t.Run(fmt.Sprintf("kill-at-%d", k), func(t *testing.T) {
					t.Parallel()
					if template != "" {
						copyDir(t, template, dir)
					}
					c := runChild(t, spec, dir, k, 0)
					if !c.killed {
						t.Fatalf("not killed at step %d: %s", k, c.output)
					}
					checkMediaDir(t, dir)
					checkMediaStateNotAhead(t, dir, users)
					storedMediaRows(t, dir, tableRows(t, dir, "x_media_files"))
					checkNotAhead(t, dir, users)
					again := runChild(t, spec, dir, 0, 0)
					if again.killed || again.code != 0 {
						t.Fatalf("re-run after a kill at %q failed: %s", c.steps[len(c.steps)-1], again.output)
					}
					finished(t, dir)
				})
			}
		})
		t.Logf("%s: killed at %d steps of %d, re-ran each to completion", phase, len(at), len(clean.steps))
	}

	killAtMediaSteps("first run", "")
	template := newDir()
	if c := runChild(t, spec, template, 0, 0); c.killed || c.code != 0 {
		t.Fatal(c.output)
	}
	for _, u := range users {
		for range 5 {
			sim.Bookmark(u.id, sim.NewPostID())
		}
	}
	killAtMediaSteps("incremental run", template)
}

// An interrupted export (Ctrl-C) stops fetching at once and commits the
// files it stored with their rows, and nothing of those it had not: the
// next run stores the rest.
func TestAnInterruptedExportCommitsTheFilesItStoredAndTheNextRunTheRest(t *testing.T) {
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 40}}
	src, err := cqspec.Parse([]byte(specYAML(sim.URL(), users, seed(sim, users), `["*"]`)+mediaYAML), "spec.yml", os.LookupEnv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range sim.Bookmarks("1001") {
		for _, k := range mediaKeysOf(sim, id) {
			for _, p := range xsim.MediaPaths(k) {
				sim.SetMediaFault(p, xsim.MediaFault{Delay: 100 * time.Millisecond})
			}
		}
	}
	ctx, interrupt := context.WithCancel(context.Background())
	defer interrupt()
	go func() {
		for len(sim.MediaRequests()) < 6 {
			time.Sleep(time.Millisecond)
		}
		interrupt()
	}()
	dir := t.TempDir()
	res, err := export.Run(ctx, export.Options{Spec: src, Out: dir})
	if err != nil {
		t.Fatal(err)
	}
	want := wantedMediaFiles(sim, users)
	files := storedMediaRows(t, dir, tableRows(t, dir, "x_media_files"))
	if !res.Summary().Interrupted || len(files) == 0 || len(files) >= want {
		t.Fatalf("interrupted %v: rows of %d files of %d", res.Summary().Interrupted, len(files), want)
	}
	for _, r := range files {
		if r["status"] != string(media.Stored) {
			t.Fatalf("an interrupted file has a row: %v", r)
		}
	}
	if n := checkMediaStateNotAhead(t, dir, users); n != len(files) {
		t.Fatalf("the state says %d files stored, the rows %d", n, len(files))
	}

	if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir}); err != nil {
		t.Fatal(err)
	}
	rows := tableRows(t, dir, "x_media_files")
	if files := storedMediaRows(t, dir, rows); len(files) != want || len(rows) != want {
		t.Fatalf("after the next run: %d rows of %d files, want %d of each", len(rows), len(files), want)
	}
	checkMediaDir(t, dir)
}
