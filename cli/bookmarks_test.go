package cli

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
	"github.com/cq-source-x/cq-source-x/bookmarks"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// archiveFixture is an account's archive, exported from the simulator by
// the real export command.
type archiveFixture struct {
	t    *testing.T
	sim  *xsim.Server
	spec string
	out  string
}

func newArchive(t *testing.T, sim *xsim.Server, users map[string]int, plugin ...string) *archiveFixture {
	t.Helper()
	return newArchiveAt(t, sim, sim.URL(), users, plugin...)
}

// newArchiveAt is newArchive with the API at baseURL, in front of sim.
func newArchiveAt(t *testing.T, sim *xsim.Server, baseURL string, users map[string]int, plugin ...string) *archiveFixture {
	t.Helper()
	var accounts []string
	for _, u := range slices.Sorted(maps.Keys(users)) {
		sim.SeedBookmarks(u, users[u])
		accounts = append(accounts, `  - user_id: "`+u+`"`, `    access_token: "`+sim.IssueToken(u)+`"`)
	}
	f := &archiveFixture{t: t, sim: sim, out: filepath.Join(t.TempDir(), "archive")}
	f.spec = specFile(t, t.TempDir(), baseURL, append(plugin, append([]string{"accounts:"}, accounts...)...)...)
	f.export()
	return f
}

func (f *archiveFixture) export() {
	f.t.Helper()
	if code, _, stderr := runCLI(f.t, "export", "--spec", f.spec, "--out", f.out, "--quiet"); code != 0 {
		f.t.Fatalf("export: exit %d: %s", code, stderr)
	}
}

// ids writes a file of post ids.
func (f *archiveFixture) ids(ids ...string) string {
	path := filepath.Join(f.t.TempDir(), "ids.txt")
	if err := os.WriteFile(path, []byte("# post ids\n"+strings.Join(ids, "\n")+"\n"), 0o644); err != nil {
		f.t.Fatal(err)
	}
	return path
}

func (f *archiveFixture) bookmarks(args ...string) (int, string, string) {
	f.t.Helper()
	return runCLI(f.t, append([]string{"bookmarks", args[0], "--spec", f.spec, "--out", f.out}, args[1:]...)...)
}

// billed is the posts the simulator billed the user's bookmark list for.
func billed(sim *xsim.Server, user string) int {
	return sim.Usage(user)[xsim.OpListBookmarks].PostsReturned
}

// changes reads x_bookmark_changes: each post's latest change, by user.
func (f *archiveFixture) changes() map[string]map[string]string {
	f.t.Helper()
	ch, err := bookmarks.ReadChanges(f.out)
	if err != nil {
		f.t.Fatal(err)
	}
	return ch.Latest
}

// Without --yes, remove only says what it would remove and what it costs:
// nothing is sent to X, nothing written.
func TestBookmarksRemoveIsADryRunWithoutYes(t *testing.T) {
	sim := startSim(t)
	f := newArchive(t, sim, map[string]int{"1001": 120})
	before := slices.Clone(sim.Bookmarks("1001"))
	code, stdout, stderr := f.bookmarks("remove", "--archived-before", "2999-01-01")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mustContain(t, stdout, "accounts[0] (user 1001): 120 bookmarks to remove, oldest first",
		"Cost: 120 requests, USD 0.600 (X bills each write request; bookmark_write_usd: 0.005), and no post read. X allows 50 removals per 15 minutes per user: 120 requests take about 30m (3 windows",
		"Dry run: nothing was removed. Run the same command with --yes")
	if !slices.Equal(sim.Bookmarks("1001"), before) || sim.Usage("1001")[xsim.OpRemoveBookmark].Requests != 0 {
		t.Error("a dry run changed the bookmarks")
	}
	if _, err := os.Stat(filepath.Join(f.out, ".ops")); err == nil {
		t.Error("a dry run wrote a journal")
	}
	if code, _, stderr := f.bookmarks("remove"); code != ExitUsage || !strings.Contains(stderr, "--archived-before DATE, --folder ID or --ids FILE") {
		t.Errorf("no selection: exit %d: %s", code, stderr)
	}
}

// X bills a bookmark write per request: remove of N posts plans, prints
// and records (x_api_usage) N × bookmark_write_usd, as X bills it. A run
// stops at max_billed_writes with what it did recorded, and the next run
// goes on from there.
func TestBookmarksRemoveOfNPostsCostsNWritesAndStopsAtItsCap(t *testing.T) {
	sim := startSim(t)
	f := newArchive(t, sim, map[string]int{"1001": 40}, "max_billed_writes: 25")
	_, stdout, _ := f.bookmarks("remove", "--archived-before", "2999-01-01")
	mustContain(t, stdout, "Cost: 40 requests, USD 0.200 (X bills each write request; bookmark_write_usd: 0.005)",
		"max_billed_writes (25) stops each account's run at 25 requests: this run sends 25 requests, USD 0.125; run the same command again to go on.")

	code, stdout, stderr := f.bookmarks("remove", "--archived-before", "2999-01-01", "--yes")
	if code == 0 {
		t.Fatalf("a run past its cap exited 0:\n%s%s", stdout, stderr)
	}
	mustContain(t, stdout, "stopped at max_billed_writes: X billed this run 25 requests, USD 0.125", "25 of 40 removed and recorded: run the same command again to resume")
	if u := sim.Usage("1001")[xsim.OpRemoveBookmark]; u.WritesBilled != 25 || len(f.changes()["1001"]) != 25 {
		t.Fatalf("X billed %d removals, x_bookmark_changes has %d; want 25", u.WritesBilled, len(f.changes()["1001"]))
	}
	if requests, usd := f.writesRecorded(); requests != 25 || math.Abs(usd-0.125) > 1e-9 {
		t.Errorf("x_api_usage records %d requests, USD %v; want 25, 0.125", requests, usd)
	}
	// The rows are an export's x_api_usage rows: the files have the same
	// columns, and compact together.
	files, _ := filepath.Glob(filepath.Join(f.out, "x_api_usage", "*.parquet"))
	var columns []string
	for _, path := range files {
		sc, _, err := pqfile.ReadSchema(path)
		if err != nil {
			t.Fatal(err)
		}
		columns = append(columns, fmt.Sprint(sc.Fields()))
	}
	if len(columns) < 2 || len(slices.Compact(columns)) != 1 {
		t.Errorf("%d x_api_usage files, of %d schemas:\n%s", len(files), len(slices.Compact(columns)), strings.Join(columns, "\n"))
	}

	code, stdout, stderr = f.bookmarks("remove", "--archived-before", "2999-01-01", "--yes")
	if code != 0 {
		t.Fatalf("the next run: exit %d\n%s%s", code, stdout, stderr)
	}
	mustContain(t, stdout, "25 of 40 done, 15 to remove", "Cost: 15 requests, USD 0.075", "removed 40 of 40, recorded in x_bookmark_changes")
	if u := sim.Usage("1001")[xsim.OpRemoveBookmark]; u.WritesBilled != 40 || math.Abs(u.USD-40*0.005) > 1e-9 {
		t.Errorf("X billed %d removals, USD %v", u.WritesBilled, u.USD)
	}
	if requests, usd := f.writesRecorded(); requests != 40 || math.Abs(usd-40*0.005) > 1e-9 {
		t.Errorf("x_api_usage records %d requests, USD %v; want 40, 0.2", requests, usd)
	}
}

// writesRecorded adds up the requests and USD of the archive's
// x_api_usage rows of bookmark writes.
func (f *archiveFixture) writesRecorded() (requests int64, usd float64) {
	f.t.Helper()
	err := readUsage(f.out, func(_ string, r usageRow) {
		if r.Operation == string(client.OpRemoveBookmark) || r.Operation == string(client.OpAddBookmark) {
			requests += r.Requests
			usd += r.EstimatedUSD
		}
	})
	if err != nil {
		f.t.Fatal(err)
	}
	return requests, usd
}

// remove removes the selected posts the archive holds with all their
// fields, oldest first, records each removal, and skips the posts it must
// not remove: not archived, archived without a field the spec asks for, no
// longer in the list.
func TestBookmarksRemoveRemovesOnlyPostsArchivedWithAllTheirFields(t *testing.T) {
	sim := startSim(t)
	// Archived without created_at (by a version that let the spec ask for
	// fewer fields), as a server that left it out serves them.
	var withoutCreatedAt atomic.Bool
	withoutCreatedAt.Store(true)
	f := newArchiveAt(t, sim, leavingOut(t, sim, &withoutCreatedAt, regexp.MustCompile(`,"created_at":"[^"]*"`)), map[string]int{"1001": 20})
	incomplete := slices.Clone(sim.Bookmarks("1001"))
	withoutCreatedAt.Store(false)
	sim.SeedBookmarks("1001", 10)
	f.export()
	gone := sim.Bookmarks("1001")[0]
	complete := sim.Bookmarks("1001")[1:10]
	sim.Unbookmark("1001", gone) // in X's app; the next export sees it gone
	f.export()
	notArchived := sim.SeedBookmarks("1001", 1)[0]

	selected := append(slices.Clone(complete), gone, incomplete[1], notArchived)
	var order []string
	sim.OnRequest(func(r xsim.RequestInfo) {
		if r.Operation == xsim.OpRemoveBookmark {
			order = append(order, r.Path[strings.LastIndexByte(r.Path, '/')+1:])
		}
	})
	code, stdout, stderr := f.bookmarks("remove", "--ids", f.ids(selected...), "--yes")
	sim.OnRequest(nil)
	oldestFirst := slices.Clone(complete)
	slices.Reverse(oldestFirst)
	if !slices.Equal(order, oldestFirst) {
		t.Errorf("removed in the order %v, want the oldest first: %v", order, oldestFirst)
	}
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stdout, stderr)
	}
	mustContain(t, stdout, "9 bookmarks to remove", "skipped: 1 in the archive without all their fields",
		"e.g. "+incomplete[1]+": the post's JSON (column post) has no created_at", "skipped: 1 not in the archive",
		"skipped: 1 no longer in the list, as the last export saw it", "removed 9 of 9, recorded in x_bookmark_changes")
	list := sim.Bookmarks("1001")
	for _, id := range complete {
		if slices.Contains(list, id) {
			t.Errorf("%s is still bookmarked", id)
		}
	}
	for _, id := range []string{incomplete[1], notArchived} {
		if !slices.Contains(list, id) {
			t.Errorf("%s was removed", id)
		}
	}
	ch := f.changes()["1001"]
	if len(ch) != 9 {
		t.Errorf("x_bookmark_changes has %d posts, want the 9 removed", len(ch))
	}
	if removals := sim.Usage("1001")[xsim.OpRemoveBookmark].Requests; removals != 9 {
		t.Errorf("%d DELETE requests for 9 removals", removals)
	}
	info, _ := archive.ReadState(f.out)
	for _, id := range complete {
		if slices.Contains(info.HeldBookmarks["1001"], id) {
			t.Errorf("the walk memory still holds the removed %s", id)
		}
	}
	// Again: they are removed already.
	_, stdout, _ = f.bookmarks("remove", "--ids", f.ids(selected...))
	mustContain(t, stdout, "nothing to remove", "9 removed already by cq-source-x bookmarks remove")
}

// remove and add change the list between two exports, as a user's
// un-bookmarks and bookmarks do; the next export loses nothing (every post
// in the list is archived, and the walk's memory is the list) and bills
// what docs/walk.md says: k + 2 posts for k new posts above the tail,
// where the removed ones, forgotten by the walk's memory, cost nothing.
func TestTheWalkStaysCorrectAcrossRemoveAndAdd(t *testing.T) {
	sim := startSim(t)
	f := newArchive(t, sim, map[string]int{"1001": 300, "1002": 40})
	held := slices.Clone(sim.Bookmarks("1001"))
	saved := sim.SeedBookmarks("1001", 4) // in X's app
	removed := []string{held[0], held[1], held[150], held[299]}
	if code, stdout, stderr := f.bookmarks("remove", "--user", "1001", "--ids", f.ids(removed...), "--yes"); code != 0 {
		t.Fatalf("remove: exit %d: %s\n%s", code, stdout, stderr)
	}
	other := sim.Bookmarks("1002")[:2]
	if code, stdout, stderr := f.bookmarks("add", "--user", "1001", "--ids", f.ids(other...), "--yes"); code != 0 {
		t.Fatalf("add: exit %d: %s\n%s", code, stdout, stderr)
	}
	b := billed(sim, "1001")
	f.export()
	if got, want := billed(sim, "1001")-b, len(saved)+len(other)+2; got != want {
		t.Errorf("the export after remove and add billed %d posts, want k + 2 = %d", got, want)
	}
	info, err := archive.ReadState(f.out)
	if err != nil {
		t.Fatal(err)
	}
	list := sim.Bookmarks("1001")
	if !slices.Equal(info.HeldBookmarks["1001"], list) {
		t.Errorf("the walk's memory is not the list: %d held, %d in the list", len(info.HeldBookmarks["1001"]), len(list))
	}
	written := info.Archived["1001"]
	for _, id := range list {
		if !slices.Contains(written, id) {
			t.Errorf("%s is in the list and not archived", id)
		}
	}
	ch := f.changes()["1001"]
	for _, id := range removed {
		if ch[id] != "removed" {
			t.Errorf("%s: change %q", id, ch[id])
		}
	}
	for _, id := range other {
		if ch[id] != "added" {
			t.Errorf("%s: change %q", id, ch[id])
		}
	}

	// Restoring the removal: add them back from a list, newest first. The
	// next export bills them as new bookmarks and writes no row twice.
	restore := slices.Clone(removed)
	if code, stdout, stderr := f.bookmarks("add", "--user", "1001", "--ids", f.ids(restore...)); code != 0 || !strings.Contains(stdout, "4 of them are in x_bookmarks already") {
		t.Fatalf("add dry run: exit %d: %s\n%s", code, stdout, stderr)
	}
	if code, stdout, stderr := f.bookmarks("add", "--user", "1001", "--ids", f.ids(restore...), "--yes"); code != 0 {
		t.Fatalf("add: exit %d: %s\n%s", code, stdout, stderr)
	}
	if top := sim.Bookmarks("1001")[:4]; !slices.Equal(top, restore) {
		t.Errorf("restored in the order %v, want the file's %v", top, restore)
	}
	b = billed(sim, "1001")
	f.export()
	if got := billed(sim, "1001") - b; got != len(restore)+2 {
		t.Errorf("the export after the restore billed %d posts, want %d", got, len(restore)+2)
	}
	info, _ = archive.ReadState(f.out)
	if !slices.Equal(info.HeldBookmarks["1001"], sim.Bookmarks("1001")) || len(info.Archived["1001"]) != len(written) {
		t.Errorf("after the restore: %d held for %d in the list; %d written, %d before", len(info.HeldBookmarks["1001"]), len(sim.Bookmarks("1001")), len(info.Archived["1001"]), len(written))
	}
	for _, id := range removed {
		if f.changes()["1001"][id] != "added" {
			t.Errorf("%s: its latest change is not added", id)
		}
	}
}

// add saves the bookmarks of another account's archive, oldest first, so
// that the new account's list has the old one's order.
func TestBookmarksAddSavesAnotherArchivesBookmarksInTheirOrder(t *testing.T) {
	sim := startSim(t)
	old := newArchive(t, sim, map[string]int{"1001": 30})
	f := newArchive(t, sim, map[string]int{"2001": 0})
	code, stdout, stderr := f.bookmarks("add", "--from", old.out)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mustContain(t, stdout, "30 posts to add, oldest first, from the archive of user 1001", "about 32 posts billed")
	if code, stdout, stderr = f.bookmarks("add", "--from", old.out, "--yes"); code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stdout, stderr)
	}
	if !slices.Equal(sim.Bookmarks("2001"), sim.Bookmarks("1001")) {
		t.Errorf("the new account's list is not the old one's")
	}
	f.export()
	info, _ := archive.ReadState(f.out)
	if len(info.Archived["2001"]) != 30 {
		t.Errorf("%d posts archived for the new account", len(info.Archived["2001"]))
	}
	for _, c := range f.changes()["2001"] {
		if c != "added" {
			t.Errorf("change %q", c)
		}
	}
}

// remove and add need bookmark.write: a token file without it stops them
// before anything is sent, and a 403 from X says the same.
func TestBookmarksNeedTheBookmarkWriteScope(t *testing.T) {
	sim := startSim(t)
	f := newArchive(t, sim, map[string]int{"1001": 10})
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "alice.json")
	writeTokenFile(t, sim, tokenFile, "app", "1001", time.Now().Add(time.Hour))
	spec := specFile(t, dir, sim.URL(), "oauth:", "  token_url: "+sim.URL()+"/2/oauth2/token", "accounts:", "  - token_file: "+tokenFile)
	code, _, stderr := runCLI(t, "bookmarks", "remove", "--spec", spec, "--out", f.out, "--archived-before", "2999-01-01", "--yes")
	if code != ExitUsage || !strings.Contains(stderr, "the token has no bookmark.write scope") || !strings.Contains(stderr, "cq-source-x login --scopes bookmark.write --token-file "+tokenFile) {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if sim.Usage("1001")[xsim.OpRemoveBookmark].Requests != 0 {
		t.Error("a request was sent")
	}
	// A raw access token without the scope: X's 403 says it.
	token := sim.IssueToken("1001", "tweet.read", "users.read", "bookmark.read")
	spec = specFile(t, t.TempDir(), sim.URL(), "accounts:", "  - user_id: \"1001\"", "    access_token: "+token)
	code, stdout, stderr := runCLI(t, "bookmarks", "remove", "--spec", spec, "--out", f.out, "--archived-before", "2999-01-01", "--yes")
	if code != ExitAllAccountsFailed || !strings.Contains(stdout, "403") || !strings.Contains(stdout, "need the bookmark.write scope: run `cq-source-x login --scopes bookmark.write`") {
		t.Errorf("exit %d: %s\n%s", code, stdout, stderr)
	}
	if !slices.Contains(sim.Bookmarks("1001"), sim.Bookmarks("1001")[0]) || len(sim.Bookmarks("1001")) != 10 {
		t.Error("a bookmark was removed")
	}
}

// X allows 50 removals per 15 minutes per user: a removal of 120 says so
// up front, waits out two windows without a 429, and records each window's
// removals in the archive as it goes.
func TestBookmarksRemoveWaitsOutTheWindows(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks("1001", 120)
	spec := specFile(t, t.TempDir(), sim.URL(), "accounts:", "  - user_id: \"1001\"", "    access_token: "+sim.IssueToken("1001"))
	out := t.TempDir()
	src, err := cqspec.Read(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: out, Clock: clk}); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	start := clk.Now()
	err = runBookmarks(context.Background(), bookmarks.Options{Kind: bookmarks.OpRemove, Spec: spec, Out: out, ArchivedBefore: start.Add(time.Hour),
		Yes: true, Command: "bookmarks remove --archived-before test", Stdout: &stdout, Stderr: &stderr, Clock: clk})
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout.String(), stderr.String())
	}
	mustContain(t, stdout.String(), "120 requests take about 30m (3 windows", "removed 120 of 120")
	mustContain(t, stderr.String(), "waiting 15m", "for the next rate-limit window (X allows 50 removals per 15 minutes per user)", "removed 50 of 120", "removed 100 of 120")
	if u := sim.Usage("1001")[xsim.OpRemoveBookmark]; u.Requests != 120 || u.RateLimited != 0 {
		t.Errorf("%d DELETE requests, %d answered 429", u.Requests, u.RateLimited)
	}
	if took := clk.Now().Sub(start); took < 30*time.Minute || took > 32*time.Minute {
		t.Errorf("120 removals took %s", took)
	}
	if files, _ := filepath.Glob(filepath.Join(out, "x_bookmark_changes", "*.parquet")); len(files) != 4 {
		t.Errorf("%d x_bookmark_changes files, want the first export's and one per window", len(files))
	}
	if len(sim.Bookmarks("1001")) != 0 {
		t.Errorf("%d bookmarks left", len(sim.Bookmarks("1001")))
	}
}

// A Ctrl-C stops `bookmarks remove`: what X
// confirmed is recorded, the command says how to resume, and it exits 130.
func TestBookmarksRemoveStoppedRecordsWhatWasDoneAndExits130(t *testing.T) {
	sim := startSim(t)
	f := newArchive(t, sim, map[string]int{"1001": 10})
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	sim.OnRequest(func(r xsim.RequestInfo) {
		if r.Operation == xsim.OpRemoveBookmark && r.Seq == 2 {
			stop()
		}
	})
	var stdout, stderr bytes.Buffer
	code := Run(ctx, []string{"bookmarks", "remove", "--spec", f.spec, "--out", f.out, "--ids", f.ids(sim.Bookmarks("1001")[5:]...), "--yes"},
		strings.NewReader(""), &stdout, &stderr)
	if code != ExitInterrupted || !strings.Contains(stderr.String(), "run the same command again to resume") {
		t.Fatalf("exit %d:\n%s%s", code, stdout.String(), stderr.String())
	}
	if removed := len(f.changes()["1001"]); removed == 0 || removed == 5 {
		t.Errorf("%d removals recorded, want those done before the stop", removed)
	}
}

// leavingOut serves sim, with what field matches taken out of the
// bookmarks pages while on is true.
func leavingOut(t *testing.T, sim *xsim.Server, on *atomic.Bool, field *regexp.Regexp) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !on.Load() || !strings.HasSuffix(r.URL.Path, "/bookmarks") {
			sim.Handler().ServeHTTP(w, r)
			return
		}
		rec := httptest.NewRecorder()
		sim.Handler().ServeHTTP(rec, r)
		body := field.ReplaceAll(rec.Body.Bytes(), nil)
		maps.Copy(w.Header(), rec.Header())
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}
