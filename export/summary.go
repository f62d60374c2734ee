package export

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/internal/plural"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/walk"
)

// Summary is what `export --json` prints: the run, its files, per account
// and operation what was fetched, billed and how each walk ended, and the
// compliance check's requests and failure.
type Summary struct {
	RunID      string            `json:"run_id"`
	RunTime    time.Time         `json:"run_time"`
	StartedAt  time.Time         `json:"started_at"`
	FinishedAt time.Time         `json:"finished_at"`
	Out        string            `json:"out"`
	OK         bool              `json:"ok"`
	Recovered  *archive.Recovery `json:"recovered,omitempty"`
	Files      []FileResult      `json:"files"`
	Accounts   []AccountSum      `json:"accounts"`
	Compliance *ComplianceSum    `json:"compliance,omitempty"` // nil when the run checked nothing
	// Totals add up the accounts, and the compliance check's requests.
	Totals Totals `json:"totals"`
	// Interrupted: the run was interrupted and committed what it had read
	// (InterruptedLine); MediaFilesLeft media files it had to try were not.
	Interrupted    bool `json:"interrupted,omitempty"`
	MediaFilesLeft int  `json:"media_files_left,omitempty"`
	// Damaged are files of earlier runs whose footer cannot be read; the
	// run is not OK.
	Damaged []archive.DamagedFile `json:"damaged_files,omitempty"`
}

type AccountSum struct {
	Account string `json:"account"` // accounts[i]
	UserID  string `json:"user_id"`
	OK      bool   `json:"ok"`
	// Error is what went wrong, each problem once, joined by "; " (see
	// plugin.AccountFailure): a problem of one table starts with its name.
	Error string `json:"error,omitempty"`
	// FailedTables are the tables of the account a walk that fills them
	// did not end cleanly; the others were done.
	FailedTables []string `json:"failed_tables,omitempty"`
	Totals
	Operations  []OperationSum `json:"operations"`
	Interrupted []CutOff       `json:"interrupted,omitempty"`

	problems []string
	name     string // accounts[i] (user ID); "" says Account
	doneSome bool   // a table of the account was done, or rows of it written
}

type Totals struct {
	// NewPosts are the bookmarks the walks found new, and NewFolderEntries
	// the folder entries; BookmarksWritten the x_bookmarks rows written,
	// and AlreadyArchived those dropped because an earlier run wrote them:
	// a post bookmarked again after it was removed, read again after a walk
	// that did not finish, or in a list read in full again after a repair.
	NewPosts         int     `json:"new_posts"`
	NewFolderEntries int     `json:"new_folder_entries"`
	BookmarksWritten int     `json:"bookmarks_written"`
	AlreadyArchived  int     `json:"already_archived"`
	PostsBilled      int     `json:"posts_billed"`
	UsersBilled      int     `json:"users_billed"`
	EstimatedUSD     float64 `json:"estimated_usd"`
	Requests         int     `json:"requests"`
	// IncludesMissing are the authors, media and referenced posts X left
	// out with no error saying why: their posts are archived, the part
	// recorded missing in its table.
	IncludesMissing int `json:"includes_missing"`
	// MediaFilesStored are the media files the run found stored (fetched
	// now or before), of which MediaBytesFetched bytes it downloaded.
	MediaFilesStored  int   `json:"media_files_stored,omitempty"`
	MediaBytesFetched int64 `json:"media_bytes_fetched,omitempty"`
}

// ComplianceSum is the compliance check (docs/compliance.md): the app's
// requests, as its rows of x_api_usage, and what went wrong. Nothing is
// billed.
type ComplianceSum struct {
	Account string `json:"account"` // "compliance", as in x_api_usage
	UserID  string `json:"user_id"` // "app"
	OK      bool   `json:"ok"`
	// Error is why the check did not finish; its posts are checked at the
	// next run, which resumes an Interrupted one.
	Error       string `json:"error,omitempty"`
	Interrupted bool   `json:"interrupted,omitempty"`
	// RowsChanged are the rows of the posts X reported that the run
	// redacted or removed in the files (compliance.on_change).
	RowsChanged int64          `json:"rows_changed,omitempty"`
	Requests    int            `json:"requests"`
	Operations  []OperationSum `json:"operations"`
}

type OperationSum struct {
	Operation       string  `json:"operation"`
	Requests        int     `json:"requests"`
	OKResponses     int     `json:"ok_responses"`
	PostsReturned   int     `json:"posts_returned"`
	PostsBilled     int     `json:"posts_billed"`
	UsersBilled     int     `json:"users_billed"`
	EstimatedUSD    float64 `json:"estimated_usd"`
	NewPosts        int     `json:"new_posts"`
	Walks           int     `json:"walks"`
	WalkOutcomes    string  `json:"walk_outcomes,omitempty"`
	RateLimited     int     `json:"rate_limited"`
	RateLimitWaits  int     `json:"rate_limit_waits"`
	WaitedSeconds   float64 `json:"rate_limit_wait_seconds"`
	Errors          int     `json:"errors"`
	IncludesMissing int     `json:"includes_missing"`
	FilesStored     int     `json:"files_stored,omitempty"`
	BytesFetched    int64   `json:"bytes_fetched,omitempty"`
	Failure         string  `json:"failure,omitempty"`
}

// Summary builds the run's summary from the accounts' sessions (the same
// rows the plugin writes to x_api_usage).
func (r *Result) Summary() *Summary {
	s := r.run
	s.OK, s.Accounts = len(s.Damaged) == 0, make([]AccountSum, 0, len(r.sessions))
	if sv := saverOf(r.sessions); sv != nil && s.Interrupted {
		c := sv.Progress().Counts()
		s.MediaFilesLeft = int(max(c.Wanted-c.Done, 0))
	}
	for _, sess := range r.sessions {
		a := AccountSum{Account: account.Label(sess.Index), UserID: sess.UserID, OK: true, Operations: []OperationSum{},
			name: sess.Name()}
		a.problems = xplugin.AccountFailure(r.plugin, sess)
		done, failed := sess.Report().Tables()
		if a.problems != nil {
			a.OK, a.Error, a.FailedTables = false, strings.Join(a.problems, "; "), failed
			s.OK = false
		}
		a.Interrupted = cutOff(sess)
		a.BookmarksWritten = r.rows[sess.UserID]
		a.doneSome = len(done) > 0 || a.BookmarksWritten > 0
		a.AlreadyArchived = r.skip[sess.UserID]
		s.Totals.BookmarksWritten += a.BookmarksWritten
		s.Totals.AlreadyArchived += a.AlreadyArchived
		for _, u := range resources.UsageRows(sess) {
			a.Operations = append(a.Operations, operationSum(u))
			a.Totals.add(u)
			s.Totals.add(u)
		}
		s.Accounts = append(s.Accounts, a)
	}
	if r.compliance != nil {
		s.Compliance = complianceSum(r.compliance)
		s.Compliance.RowsChanged = r.ComplianceRows
		s.OK = s.OK && s.Compliance.OK
		s.Totals.Requests += s.Compliance.Requests
	}
	return &s
}

func operationSum(u *resources.Usage) OperationSum {
	return OperationSum{
		Operation: string(u.Operation), Requests: u.Requests, OKResponses: u.OK,
		PostsReturned: u.PostsReturned, PostsBilled: u.PostsBilled, UsersBilled: u.UsersBilled,
		EstimatedUSD: u.USD, NewPosts: u.NewPosts,
		Walks: u.Walks, WalkOutcomes: u.WalkOutcomes, RateLimited: u.RateLimited,
		RateLimitWaits: u.RateLimitWaits, WaitedSeconds: u.Waited.Seconds(), Errors: u.Errors,
		IncludesMissing: u.IncludesMissing, FilesStored: u.FilesStored, BytesFetched: u.BytesFetched, Failure: u.Failure,
	}
}

// complianceSum is the compliance check's part of the summary: the same
// rows as its x_api_usage rows.
func complianceSum(c *compliance.Check) *ComplianceSum {
	cs := &ComplianceSum{Account: resources.ComplianceUsageAccount, UserID: resources.ComplianceUsageUser, OK: true, Operations: []OperationSum{}}
	for _, u := range resources.ComplianceUsageRows(c) {
		cs.Operations = append(cs.Operations, operationSum(u))
		cs.Requests += u.Requests
	}
	switch err := c.Failure(); {
	case errors.Is(err, walk.ErrInterrupted):
		cs.Interrupted = true
	case err != nil:
		cs.OK, cs.Error = false, c.Secrets.String(err.Error())
	}
	return cs
}

// add counts a row of x_api_usage: its new posts are new folder entries
// when it is a folder's.
func (t *Totals) add(u *resources.Usage) {
	if u.Operation == client.OpGetFolder {
		t.NewFolderEntries += u.NewPosts
	} else {
		t.NewPosts += u.NewPosts
	}
	t.PostsBilled += u.PostsBilled
	t.UsersBilled += u.UsersBilled
	t.EstimatedUSD += u.USD
	t.Requests += u.Requests
	t.IncludesMissing += u.IncludesMissing
	t.MediaFilesStored += u.FilesStored
	t.MediaBytesFetched += u.BytesFetched
}

// ReadFor is the posts one operation read, summed over accounts.
func (s *Summary) ReadFor(op client.Operation) int {
	n := 0
	for _, a := range s.Accounts {
		for _, o := range a.Operations {
			if o.Operation == string(op) {
				n += o.PostsReturned
			}
		}
	}
	return n
}

func (s *Summary) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(s)
}

// WriteText prints the summary table: one line per account and operation,
// then the compliance check's operations, the totals (whose new posts are
// the bookmarks found: the folder entries are told apart) and the files
// written.
func (s *Summary) WriteText(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "account\tuser\toperation\tnew posts\tbilled posts\tbilled users\test. USD\trequests\twalks\t")
	for _, a := range s.Accounts {
		user := a.UserID
		if user == "" {
			user = "-"
		}
		if len(a.Operations) == 0 {
			fmt.Fprintf(tw, "%s\t%s\t-\t0\t0\t0\t0.000\t0\t\t\n", a.Account, user)
		}
		writeOperations(tw, a.Account, user, a.Operations)
	}
	if c := s.Compliance; c != nil {
		writeOperations(tw, c.Account, c.UserID, c.Operations)
	}
	t := s.Totals
	fmt.Fprintf(tw, "total\t\t\t%d\t%d\t%d\t%.3f\t%d\t\t\n", t.NewPosts, t.PostsBilled, t.UsersBilled, t.EstimatedUSD, t.Requests)
	tw.Flush()
	fmt.Fprintf(w, "x_bookmarks rows written: %d", t.BookmarksWritten)
	if t.AlreadyArchived > 0 {
		fmt.Fprintf(w, " (%s already in the archive and not written again)", plural.Count(t.AlreadyArchived, "post read was", "posts read were"))
	}
	if t.NewFolderEntries > 0 {
		fmt.Fprintf(w, "; new folder entries: %d", t.NewFolderEntries)
	}
	fmt.Fprintln(w)
	if t.MediaFilesStored > 0 {
		fmt.Fprintf(w, "media files stored: %d, %.1f MB downloaded now (X bills no media download), in %s\n",
			t.MediaFilesStored, float64(t.MediaBytesFetched)/1e6, archive.MediaPath(s.Out))
	}
	for _, a := range s.Accounts {
		if a.IncludesMissing > 0 {
			fmt.Fprintf(w, "%s: X left out %s the spec asks for, with no error saying why; "+
				"the posts are archived, and the error column of each one's row says it is missing\n",
				cmp.Or(a.name, a.Account), plural.Count(a.IncludesMissing, "author, media or referenced post", "authors, media or referenced posts"))
		}
	}
	for _, l := range s.FailureLines() {
		fmt.Fprintln(w, l)
	}
	if c := s.Compliance; c != nil && !c.OK {
		fmt.Fprintln(w, c.Failure())
	}
	if c := s.Compliance; c != nil && c.RowsChanged > 0 {
		fmt.Fprintf(w, "compliance: %s of posts X reported redacted or removed in the files, as compliance.on_change asks (docs/compliance.md)\n",
			plural.Count(c.RowsChanged, "row", "rows"))
	}
	if c := s.Compliance; c != nil && c.Interrupted {
		fmt.Fprintln(w, "compliance check interrupted: the next run resumes it")
	}
	for _, d := range s.Damaged {
		fmt.Fprintln(w, "DAMAGED "+d.Describe(s.Out))
	}
	if s.Recovered != nil {
		if s.Recovered.PublishedRun != "" {
			fmt.Fprintf(w, "recovered: finished publishing run %s, interrupted earlier\n", s.Recovered.PublishedRun)
		}
		if n := len(s.Recovered.DiscardedRuns); n > 0 {
			fmt.Fprintf(w, "recovered: discarded %d uncommitted run(s) (%s); their posts were fetched again\n", n, strings.Join(s.Recovered.DiscardedRuns, ", "))
		}
	}
	if len(s.Files) == 0 {
		fmt.Fprintln(w, "no files written")
	}
	for _, f := range s.Files {
		fmt.Fprintf(w, "wrote %s (%s)\n", f.Path, plural.Count(f.Rows, "row", "rows"))
	}
}

// writeOperations writes a line per operation of an account, or of the
// compliance check.
func writeOperations(tw io.Writer, account, user string, ops []OperationSum) {
	for _, o := range ops {
		walks := o.WalkOutcomes
		if o.Failure != "" {
			if walks != "" {
				walks += "; "
			}
			walks += "FAILED"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d\t%.3f\t%d\t%s\t\n", account, user, o.Operation,
			o.NewPosts, o.PostsBilled, o.UsersBilled, o.EstimatedUSD, o.Requests, walks)
	}
}

func (c *ComplianceSum) Failure() string {
	return "FAILED compliance check: " + c.Error
}

func (a AccountSum) problemList() []string {
	if a.problems == nil {
		return strings.Split(a.Error, "; ")
	}
	return a.problems
}

// failureLine is FAILED, who, and the problems: on one line for one, a
// line each after the names for several.
func failureLine(who string, problems []string) string {
	if len(problems) == 1 {
		return "FAILED " + who + ": " + problems[0]
	}
	return "FAILED " + who + ":\n  - " + strings.Join(problems, "\n  - ")
}

// FailureLines tells what went wrong, account by account, but once for
// the accounts whose problems read the same, each one's own accounts[i]
// aside: 5,000 accounts whose tokens X refused are a line, not 5,000.
func (s *Summary) FailureLines() []string {
	type group struct {
		first    AccountSum
		names    []string
		problems []string // with accounts[i] for the account's own place
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, a := range s.Failed() {
		generic := make([]string, 0, len(a.problemList()))
		for _, p := range a.problemList() {
			generic = append(generic, strings.ReplaceAll(p, a.Account+".", "accounts[i]."))
		}
		key := strings.Join(generic, "\n")
		g := byKey[key]
		if g == nil {
			g = &group{first: a, problems: generic}
			byKey[key] = g
			groups = append(groups, g)
		}
		g.names = append(g.names, cmp.Or(a.name, a.Account))
	}
	lines := make([]string, 0, len(groups))
	for _, g := range groups {
		if len(g.names) == 1 {
			lines = append(lines, failureLine(g.names[0], g.first.problemList()))
			continue
		}
		lines = append(lines, failureLine(plural.Count(len(g.names), "account", "accounts")+" ("+plural.Some(g.names, 4)+")", g.problems))
	}
	return lines
}

// InPart reports whether a failed account got something done.
func (a AccountSum) InPart() bool { return !a.OK && a.doneSome }

// NothingDone reports whether no account got anything done.
func (s *Summary) NothingDone() bool {
	return len(s.Accounts) > 0 && !slices.ContainsFunc(s.Accounts, func(a AccountSum) bool { return a.OK || a.doneSome })
}

func (s *Summary) Failed() []AccountSum {
	return slices.DeleteFunc(slices.Clone(s.Accounts), func(a AccountSum) bool { return a.OK })
}
