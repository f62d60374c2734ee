package export

import (
	"bytes"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/walk"
)

// The summary says what its counts are (rows dropped as already written are
// not all re-bookmarks: a walk that did not finish is read again too), and
// names an account whose user id is unknown without an empty user.
func TestSummaryTextSaysWhatItCounts(t *testing.T) {
	s := &Summary{
		Accounts: []AccountSum{
			{Account: "accounts[0]", UserID: "1001", OK: true, Totals: Totals{BookmarksWritten: 5, AlreadyArchived: 3},
				Operations: []OperationSum{{Operation: "list_bookmarks", Requests: 1, PostsBilled: 8, NewPosts: 8, WalkOutcomes: "reached_end"}}},
			{Account: "accounts[1]", OK: false, Error: "the API refused accounts[1].access_token (401 Unauthorized)"},
		},
		Totals: Totals{BookmarksWritten: 5, AlreadyArchived: 3},
		Files:  []FileResult{{Table: "x_api_usage", Path: "out/x_api_usage/a.parquet", Rows: 1}},
	}
	var b bytes.Buffer
	s.WriteText(&b)
	text := b.String()
	for _, want := range []string{
		"x_bookmarks rows written: 5 (3 posts read were already in the archive and not written again)\n",
		"FAILED accounts[1]: the API refused accounts[1].access_token (401 Unauthorized)\n",
		"accounts[1]     -",
		"wrote out/x_api_usage/a.parquet (1 row)\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("summary lacks %q:\n%s", want, text)
		}
	}
	for _, bad := range []string{"re-bookmarked", "(user )"} {
		if strings.Contains(text, bad) {
			t.Errorf("summary has %q:\n%s", bad, text)
		}
	}
}

// One post read already archived is said in the singular.
func TestSummaryTextSaysOnePostInTheSingular(t *testing.T) {
	var b bytes.Buffer
	(&Summary{Totals: Totals{BookmarksWritten: 0, AlreadyArchived: 1}}).WriteText(&b)
	if want := "x_bookmarks rows written: 0 (1 post read was already in the archive and not written again)\n"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}

// What X left out of its pages with no error saying why is counted per
// operation and account, and said once per account under the table.
func TestSummaryCountsWhatXLeftOut(t *testing.T) {
	sess := &account.Session{UserID: "1001", Meter: billing.NewMeter(billing.DefaultRates())}
	sess.Report().AddWalk(account.WalkReport{Operation: client.OpListBookmarks, Table: "x_bookmarks", List: "bookmarks",
		Result: &walk.Result{Outcome: walk.ReachedEnd, New: 4}, Missing: 2})
	s := (&Result{sessions: []*account.Session{sess}}).Summary()
	if a := s.Accounts[0]; !a.OK || a.IncludesMissing != 2 || a.Operations[0].IncludesMissing != 2 || s.Totals.IncludesMissing != 2 {
		t.Errorf("summary %+v", s)
	}
	var b bytes.Buffer
	s.WriteText(&b)
	if want := "accounts[0] (user 1001): X left out 2 authors, media or referenced posts the spec asks for, with no error saying why; " +
		"the posts are archived, and the error column of each one's row says it is missing\n"; !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}
