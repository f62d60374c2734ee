package export_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// summaryRun exports once, with the extra lines of the plugin's spec, and
// returns the run's summary and its text.
func summaryRun(t *testing.T, clk *clock.Virtual, sim *xsim.Server, users []demoUser, dir, extra string) (*export.Summary, string) {
	t.Helper()
	src, err := cqspec.Parse([]byte(specYAML(sim.URL(), users, seed(sim, users), `["*"]`)+extra), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	res, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	sum := res.Summary()
	var text bytes.Buffer
	sum.WriteText(&text)
	return sum, text.String()
}

func startVirtualSim(t *testing.T) (*clock.Virtual, *xsim.Server) {
	t.Helper()
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	return clk, sim
}

// The summary shows the compliance check's requests, the rows x_api_usage
// has for them (account compliance, user app), and counts them in the
// total of requests.
func TestSummaryShowsTheComplianceRequests(t *testing.T) {
	clk, sim := startVirtualSim(t)
	compliance := fmt.Sprintf("    compliance:\n      bearer_token: %q\n", sim.IssueAppOnlyToken())
	sum, text := summaryRun(t, clk, sim, []demoUser{{id: "1001", bookmarks: 12}}, t.TempDir(), compliance)
	c := sum.Compliance
	if c == nil || !c.OK || !sum.OK {
		t.Fatalf("compliance %+v, ok %v", c, sum.OK)
	}
	ops := map[string]int{}
	for _, o := range c.Operations {
		ops[o.Operation] = o.Requests
	}
	for _, op := range []string{"compliance_create_job", "compliance_upload", "compliance_get_job", "compliance_download"} {
		if ops[op] == 0 {
			t.Errorf("no requests of %s in %v", op, ops)
		}
		if !regexp.MustCompile(`(?m)^ *compliance +app +` + op + ` +0 +0 +0 +0\.000 +` + fmt.Sprint(ops[op]) + ` *$`).MatchString(text) {
			t.Errorf("no line for %s:\n%s", op, text)
		}
	}
	if got, want := sum.Totals.Requests, sum.Accounts[0].Requests+c.Requests; got != want || c.Requests == 0 {
		t.Errorf("total requests %d, want the account's and the compliance check's, %d", got, want)
	}
}

// A compliance check that fails fails the run's summary as an account
// does (ok false, a FAILED line naming it), and the run still commits the
// bookmarks it read.
func TestAFailedComplianceCheckFailsTheSummaryAndKeepsTheBookmarks(t *testing.T) {
	clk, sim := startVirtualSim(t)
	sim.FailComplianceJobs(2) // the job of posts and the one that replaces it
	compliance := fmt.Sprintf("    compliance:\n      bearer_token: %q\n", sim.IssueAppOnlyToken())
	dir := t.TempDir()
	users := []demoUser{{id: "1001", bookmarks: 12}}
	sum, text := summaryRun(t, clk, sim, users, dir, compliance)
	if c := sum.Compliance; sum.OK || c == nil || c.OK || !strings.Contains(c.Error, "failed (X gives no reason)") {
		t.Fatalf("ok %v, compliance %+v", sum.OK, c)
	}
	if !regexp.MustCompile(`\nFAILED compliance check: compliance job \d+ failed \(X gives no reason\)`).MatchString(text) {
		t.Errorf("no FAILED line for the check:\n%s", text)
	}
	if !sum.Accounts[0].OK || len(sum.Failed()) != 0 {
		t.Errorf("the account is told failed: %+v", sum.Accounts)
	}
	checkArchive(t, dir, sim, users)
	st, err := archive.ReadState(dir)
	if err != nil || len(st.Archived["1001"]) != 12 {
		t.Fatalf("committed state %v, %v", st, err)
	}
}

// With content.authors on, the summary shows the users billed beside the
// posts, per operation and in total, so that its estimated USD adds up
// from what it shows at the spec's rates.
func TestSummaryUSDAddsUpFromThePostsAndUsersBilled(t *testing.T) {
	clk, sim := startVirtualSim(t)
	rates := "    post_read_usd: 0.005\n    user_read_usd: 0.010\n    content: {authors: true}\n"
	sum, text := summaryRun(t, clk, sim, []demoUser{{id: "1001", bookmarks: 30}}, t.TempDir(), rates)
	tot := sum.Totals
	if tot.UsersBilled == 0 || tot.PostsBilled == 0 {
		t.Fatalf("totals %+v: want posts and users billed", tot)
	}
	if want := float64(tot.PostsBilled)*0.005 + float64(tot.UsersBilled)*0.010; math.Abs(tot.EstimatedUSD-want) > 1e-9 {
		t.Errorf("estimated USD %.4f, want %d posts and %d users billed: %.4f", tot.EstimatedUSD, tot.PostsBilled, tot.UsersBilled, want)
	}
	op := sum.Accounts[0].Operations[0]
	if op.Operation != "list_bookmarks" || op.UsersBilled != tot.UsersBilled {
		t.Errorf("operation %+v, want the users billed of list_bookmarks", op)
	}
	for _, re := range []string{
		`(?m)^ *account +user +operation +new posts +billed posts +billed users +est\. USD +requests +walks *$`,
		fmt.Sprintf(`(?m)^ *total +%d +%d +%d +%.3f +%d *$`, tot.NewPosts, tot.PostsBilled, tot.UsersBilled, tot.EstimatedUSD, tot.Requests),
	} {
		if !regexp.MustCompile(re).MatchString(text) {
			t.Errorf("summary lacks %s:\n%s", re, text)
		}
	}
}

// The total's new posts are the bookmarks found, which the x_bookmarks rows
// written match; the folder entries found are told apart, not added in.
func TestTheSummarysNewPostsAreBookmarksAndFolderEntriesAreToldApart(t *testing.T) {
	clk, sim := startVirtualSim(t)
	sum, text := summaryRun(t, clk, sim, []demoUser{{id: "1001", bookmarks: 30, folders: 1}}, t.TempDir(), "")
	tot := sum.Totals
	if tot.NewPosts != 30 || tot.BookmarksWritten != 30 || tot.NewFolderEntries != 6 {
		t.Fatalf("totals %+v: want 30 new posts, 30 written, 6 folder entries", tot)
	}
	if !regexp.MustCompile(`(?m)^ *total +30 `).MatchString(text) || !strings.Contains(text, "x_bookmarks rows written: 30; new folder entries: 6\n") {
		t.Errorf("summary:\n%s", text)
	}
}

// The progress output does not repeat the failures the summary tells: an
// account whose token X refuses and a compliance check that fails are told
// once, by the summary, and the log lines of the plugin that say the same
// (the account's, the check's, the scheduler's of each table that failed)
// are left out; a warning of another kind is not.
func TestTheProgressDoesNotRepeatTheFailuresTheSummaryTells(t *testing.T) {
	clk, sim := startVirtualSim(t)
	sim.FailComplianceJobs(2)
	users := []demoUser{{id: "1001", bookmarks: 12}, {id: "1002", bookmarks: 3}}
	tokens := seed(sim, users)
	sim.RevokeToken(tokens["1002"])
	text := specYAML(sim.URL(), users, tokens, `["*"]`) + fmt.Sprintf("    compliance:\n      bearer_token: %q\n", sim.IssueAppOnlyToken())
	src, err := cqspec.Parse([]byte(text), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	var progress bytes.Buffer
	res, err := export.Run(context.Background(), export.Options{Spec: src, Out: t.TempDir(), Clock: clk, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed()) != 1 || res.Summary().Compliance.OK {
		t.Fatalf("failed %v, compliance %+v: the failures did not happen", res.Failed(), res.Summary().Compliance)
	}
	for _, repeat := range []string{"did not sync completely", "table resolver finished", "compliance check did not finish"} {
		if strings.Contains(progress.String(), repeat) {
			t.Errorf("the progress repeats %q:\n%s", repeat, progress.String())
		}
	}
	if !strings.Contains(progress.String(), "WRN") {
		t.Errorf("no warning of another kind was left:\n%s", progress.String())
	}
}
