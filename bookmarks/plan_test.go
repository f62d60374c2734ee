package bookmarks

import (
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/billing"
)

// The plan says, per account, what the operation will do or why it
// cannot; a pending run is finished first, and says how far it got; the
// cost follows, for the longest account's share of the rate limit.
func TestBookmarksPlanSaysWhatEachAccountWillDo(t *testing.T) {
	created := time.Date(2026, 11, 1, 9, 30, 0, 0, time.UTC)
	accounts := []*opAccount{
		{label: "accounts[0]", problem: "the API refused accounts[0].access_token"},
		{label: "accounts[1] (user 1002)", tokenFile: "bob.json", scopes: []string{"tweet.read"}, resumed: &Journal{
			Plan: OpPlan{ID: "ab12cd34", Created: created, Command: "bookmarks remove --folder 7", Posts: []string{"1", "2", "3", "4", "5"}},
			Done: []JournalEntry{{PostID: "1"}, {PostID: "2"}}, Failed: map[string]string{"3": "gone"}, Sent: "4"}},
		{label: "accounts[2] (user 1003)", plan: []string{"7", "8", "9"}, skipped: []string{"1 in the archive without all their fields", "2 not in the archive"},
			examples: []string{"6: the post's JSON (column post) has no created_at"}},
		{label: "accounts[3] (user 1004)"},
	}
	var out strings.Builder
	Options{rates: x, Kind: OpRemove, Folder: "7", Stdout: &out}.writePlan(accounts)
	want := "accounts[0]:\n  PROBLEM: the API refused accounts[0].access_token\n" +
		"accounts[1] (user 1002): resuming the run ab12cd34 of " + created.Local().Format("2006-01-02 15:04") + " (bookmarks remove --folder 7): 3 of 5 done, 2 to remove\n" +
		"  post 4 was sent when that run stopped, and X's answer is unknown: it is sent again, which is safe (X answers with the state the request leaves)\n" +
		"  (this command's selection is not used: the pending run is finished first)\n" +
		"  PROBLEM: the token has no bookmark.write scope: run `cq-source-x login --scopes bookmark.write --token-file bob.json` first\n" +
		"accounts[2] (user 1003): 3 bookmarks to remove, oldest first\n" +
		"  skipped: 1 in the archive without all their fields\n  skipped: 2 not in the archive\n" +
		"    e.g. 6: the post's JSON (column post) has no created_at\n" +
		"accounts[3] (user 1004): nothing to remove\n" +
		"\nCost: 5 requests, USD 0.025 (X bills each write request; bookmark_write_usd: 0.005), and no post read. X allows 50 removals per 15 minutes per user: 3 requests fit in one window.\n" +
		"The archive keeps every row; each removal is recorded in x_bookmark_changes, and the walk memory forgets the posts removed, so the next export bills what it would have without them.\n"
	if got := out.String(); got != want {
		t.Errorf("remove plan:\n%s\nwant:\n%s", got, want)
	}

	out.Reset()
	add := []*opAccount{{label: "accounts[0] (user 2001)", plan: []string{"7", "8"}, source: "1001", archived: 1, skipped: []string{"3 bookmarked already, as the last export saw the list"}}}
	Options{rates: x, Kind: OpAdd, Stdout: &out}.writePlan(add)
	want = "accounts[0] (user 2001): 2 posts to add, oldest first, from the archive of user 1001\n" +
		"  skipped: 3 bookmarked already, as the last export saw the list\n" +
		"\nCost: 2 requests, USD 0.010 (X bills each write request; bookmark_write_usd: 0.005), and no post read. X allows 50 additions per 15 minutes per user: 2 requests fit in one window.\n" +
		"The next export reads each added post as a new bookmark: about 4 posts billed (USD 0.02). 1 of them is in x_bookmarks already, and is not written again. Each addition is recorded in x_bookmark_changes.\n"
	if got := out.String(); got != want {
		t.Errorf("add plan:\n%s\nwant:\n%s", got, want)
	}

	out.Reset()
	Options{rates: x, Kind: OpAdd, Stdout: &out}.writePlan([]*opAccount{{label: "accounts[0] (user 2001)"}})
	if got, want := out.String(), "accounts[0] (user 2001): nothing to add\n"; got != want {
		t.Errorf("nothing to add:\n%s\nwant:\n%s", got, want)
	}
}

// A plan of one post says it in the singular: one post, one request.
func TestBookmarksPlanOfOnePostSaysItInTheSingular(t *testing.T) {
	var out strings.Builder
	one := []*opAccount{{label: "accounts[0] (user 2001)", plan: []string{"7"}, archived: 1}}
	Options{rates: x, Kind: OpAdd, Stdout: &out}.writePlan(one)
	mustContain(t, out.String(), "accounts[0] (user 2001): 1 post to add, oldest first\n",
		"Cost: 1 request, USD 0.005 (X bills each write request", "1 request fits in one window.",
		"1 of them is in x_bookmarks already, and is not written again.")
	out.Reset()
	Options{rates: x, Kind: OpRemove, Stdout: &out}.writePlan(one)
	mustContain(t, out.String(), "accounts[0] (user 2001): 1 bookmark to remove, oldest first\n")
}

// --folder names a folder the archive holds for the account; another is
// the account's problem, listing the folders it has.
func TestBookmarksRemoveFolderMustBeArchived(t *testing.T) {
	info := &archive.StateInfo{HeldFolders: map[string]map[string][]string{"1001": {"20": nil, "10": {"5"}}}}
	a := &opAccount{label: "accounts[0] (user 1001)", userID: "1001"}
	o := Options{rates: x, Kind: OpRemove, Folder: "30", Out: t.TempDir()}
	if err := o.planRemoval(a, nil, nil, info, nil, Completeness{}); err != nil {
		t.Fatal(err)
	}
	if want := "the archive has no folder 30 of user 1001 (its folders: 10, 20)"; a.problem != want || a.plan != nil {
		t.Errorf("problem %q, plan %v; want %q", a.problem, a.plan, want)
	}
	a = &opAccount{label: "accounts[1] (user 1002)", userID: "1002"}
	if err := o.planRemoval(a, nil, nil, info, nil, Completeness{}); err != nil {
		t.Fatal(err)
	}
	if want := "the archive has no folder 30 of user 1002 (its folders: none)"; a.problem != want {
		t.Errorf("problem %q; want %q", a.problem, want)
	}
}

// x are X's rates.
var x = billing.DefaultRates()

func mustContain(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("output lacks %q:\n%s", w, got)
		}
	}
}

func (o Options) writePlan(accounts []*opAccount) { (&Operation{o: o, accounts: accounts}).WritePlan() }
