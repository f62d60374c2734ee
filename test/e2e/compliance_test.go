package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/message"
	sdkplugin "github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/rs/zerolog"
)

// cenv runs plugin syncs with the compliance section against the simulator:
// one app-only token, accounts by user id, a state backend kept between
// syncs, and the virtual clock the tests move.
type cenv struct {
	t     *testing.T
	clk   *clock.Virtual
	sim   *xsim.Server
	store *memstate.Store
	spec  map[string]any
	app   string
	sent  map[string]bool // see sentAgain
	log   bytes.Buffer    // the plugin's log lines, as JSON
}

func newCenv(t *testing.T, opts xsim.ComplianceOptions, bookmarks map[string]int) *cenv {
	t.Helper()
	clk, sim := startSim(t, xsim.Options{Compliance: opts})
	e := &cenv{t: t, clk: clk, sim: sim, store: memstate.New(), app: sim.IssueAppOnlyToken(), sent: map[string]bool{}}
	var accounts []map[string]any
	for _, u := range slices.Sorted(maps.Keys(bookmarks)) {
		sim.SeedBookmarks(u, bookmarks[u])
		accounts = append(accounts, map[string]any{"user_id": u, "access_token": sim.IssueToken(u)})
	}
	e.spec = map[string]any{
		"base_url": sim.URL(),
		"accounts": accounts,
		"compliance": map[string]any{
			"bearer_token": e.app,
			"every":        "24h",
		},
	}
	return e
}

func (e *cenv) setCompliance(key string, value any) {
	e.spec["compliance"].(map[string]any)[key] = value
}

// csync is one sync: its compliance rows, its usage rows of the app, the
// x_bookmarks rows and the errors the SDK reported.
type csync struct {
	compliance []map[string]string          // new rows: rows of earlier syncs sent again are left out
	appUsage   map[string]map[string]string // operation → column → value
	bookmarks  int                          // new rows
	redacted   []string                     // post ids of x_bookmarks rows sent without their content
	errors     []string
}

func (s csync) reasons() map[string]string {
	out := map[string]string{}
	for _, r := range s.compliance {
		out[r["user_id"]+"/"+r["post_id"]] = r["reason"]
	}
	return out
}

// sync runs one sync of every table, on a new plugin (a new process).
func (e *cenv) sync(opts ...plugin.Option) csync {
	e.t.Helper()
	specJSON, err := json.Marshal(e.spec)
	if err != nil {
		e.t.Fatal(err)
	}
	p := plugin.New(append([]plugin.Option{plugin.WithClock(e.clk), plugin.WithState(e.store)}, opts...)...)
	p.SetLogger(zerolog.New(zerolog.SyncWriter(&e.log)).Level(zerolog.WarnLevel))
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, sdkplugin.NewClientOptions{}); err != nil {
		e.t.Fatal(err)
	}
	msgs, err := p.SyncAll(ctx, sdkplugin.SyncOptions{Tables: []string{"*"}})
	if err != nil {
		e.t.Fatal(err)
	}
	res := csync{appUsage: map[string]map[string]string{}}
	for _, m := range msgs {
		switch m := m.(type) {
		case *message.SyncInsert:
			switch m.GetTable().Name {
			case "x_post_compliance":
				for _, row := range rows(m.Record) {
					if !sentAgain(e.sent, "x_post_compliance", row) {
						res.compliance = append(res.compliance, row)
					}
				}
			case "x_bookmarks":
				for _, row := range rows(m.Record) {
					if row["post"] == "" {
						res.redacted = append(res.redacted, row["post_id"])
					}
					if !sentAgain(e.sent, "x_bookmarks", row) {
						res.bookmarks++
					}
				}
			case "x_api_usage":
				for _, row := range rows(m.Record) {
					if strings.HasPrefix(row["user_id"], "app") {
						res.appUsage[row["operation"]] = row
					}
				}
			}
		case *message.SyncError:
			res.errors = append(res.errors, m.Error)
		}
	}
	return res
}

// logged are the plugin's log lines with message msg, as field → value.
func (e *cenv) logged(msg string) []map[string]any {
	var out []map[string]any
	for line := range strings.Lines(e.log.String()) {
		var entry map[string]any
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			e.t.Fatalf("log line %q: %v", line, err)
		}
		if entry["message"] == msg {
			out = append(out, entry)
		}
	}
	return out
}

// jobs are the app's compliance jobs of posts, oldest first.
func (e *cenv) jobs() []xsim.ComplianceJobInfo { return e.sim.ComplianceJobsOf("tweets") }

// The first sync checks every post it archived; a bookmark deleted by its
// author, and one whose author was suspended, show up in x_post_compliance
// at the next check, with the job and the reason. No x_bookmarks row is
// emitted again or deleted, nothing is billed, and x_api_usage records the
// app's requests.
func TestComplianceFindsADeletedBookmark(t *testing.T) {
	e := newCenv(t, xsim.ComplianceOptions{}, map[string]int{alice1: 40})
	first := e.sync()
	if len(first.errors) > 0 || first.bookmarks != 40 || len(first.compliance) != 0 {
		t.Fatalf("first sync: %+v", first)
	}
	jobs := e.jobs()
	if len(jobs) != 1 || len(jobs[0].IDs) != 40 || jobs[0].Status != "complete" || jobs[0].Name != "cq-source-x" {
		t.Fatalf("first check: %+v", jobs)
	}
	list := e.sim.Bookmarks(alice1)
	deleted, suspended := list[10], list[30]
	if err := e.sim.DeletePost(deleted); err != nil {
		t.Fatal(err)
	}
	_ = e.sim.SetPostCompliance(suspended, "suspended")
	billed := e.sim.TotalPostsReturned()

	e.clk.Advance(24 * time.Hour)
	second := e.sync()
	if len(second.errors) > 0 {
		t.Fatal(second.errors)
	}
	want := map[string]string{alice1 + "/" + deleted: "deleted", alice1 + "/" + suspended: "suspended"}
	if got := second.reasons(); !maps.Equal(got, want) {
		t.Fatalf("x_post_compliance %v, want %v", got, want)
	}
	for _, r := range second.compliance {
		if r["action"] != "delete" || r["job_id"] != e.jobs()[1].ID || r["redacted_at"] == "" || r["checked_at"] == "" || r["created_at"] == "" {
			t.Errorf("row %v", r)
		}
	}
	if second.bookmarks != 0 {
		t.Errorf("%d x_bookmarks rows emitted again", second.bookmarks)
	}
	if n := e.sim.TotalPostsReturned() - billed; n != 2 {
		t.Errorf("the second sync billed %d posts; the walk bills 2 and the check none", n)
	}
	for _, op := range []string{"compliance_list_jobs", "compliance_create_job", "compliance_get_job", "compliance_upload", "compliance_download"} {
		u := second.appUsage[op]
		if u == nil || u["requests"] == "0" || u["posts_billed"] != "0" || u["estimated_usd"] != "0" || u["account"] != "compliance" {
			t.Errorf("x_api_usage %s: %v", op, u)
		}
	}
}

// Posts that come back clean are recorded as checked: the archive is
// checked once per compliance.every (a round), not at every sync; posts
// archived meanwhile wait for the next round.
func TestCleanPostsAreCheckedOncePerEvery(t *testing.T) {
	e := newCenv(t, xsim.ComplianceOptions{}, map[string]int{alice1: 10})
	e.setCompliance("every", "72h")
	e.sync()
	var added []string
	for day := 1; day <= 3; day++ {
		e.clk.Advance(24 * time.Hour)
		id := e.sim.NewPostID()
		_ = e.sim.Bookmark(alice1, id)
		added = append(added, id)
		if s := e.sync(); len(s.errors) > 0 || s.bookmarks != 1 {
			t.Fatalf("day %d: %+v", day, s)
		}
		if n := len(e.jobs()); n != 1 && day < 3 {
			t.Fatalf("day %d: %d jobs, want the first sync's only", day, n)
		}
	}
	jobs := e.jobs()
	if len(jobs) != 2 || len(jobs[1].IDs) != 13 {
		t.Fatalf("after 72h: %d jobs (%+v), want a second one with all 13 posts", len(jobs), jobs)
	}
	for _, id := range added {
		if !slices.Contains(jobs[1].IDs, id) {
			t.Errorf("post %s archived between the checks was not checked", id)
		}
	}
}

// A post reported deleted is not checked again (a deleted post stays
// deleted); one reported for another reason is, and when it comes back
// clean it gets a row with a null action and reason. An unchanged finding
// gets no new row.
func TestDeletedPostsAreNotCheckedAgain(t *testing.T) {
	e := newCenv(t, xsim.ComplianceOptions{}, map[string]int{alice1: 6})
	list := e.sim.Bookmarks(alice1)
	_ = e.sim.DeletePost(list[4])
	_ = e.sim.SetPostCompliance(list[2], "protected")
	_ = e.sim.SetPostCompliance(list[3], "scrub_geo")
	first := e.sync()
	if got := first.reasons(); len(got) != 2 || got[alice1+"/"+list[2]] != "protected" || got[alice1+"/"+list[3]] != "scrub_geo" {
		t.Fatalf("first check %v (the deleted post left the list before the first sync: not archived)", got)
	}
	_ = e.sim.DeletePost(list[1])
	e.clk.Advance(24 * time.Hour)
	if got := e.sync().reasons(); len(got) != 1 || got[alice1+"/"+list[1]] != "deleted" {
		t.Fatalf("second check %v", got)
	}
	_ = e.sim.SetPostCompliance(list[2], "") // public again
	e.clk.Advance(24 * time.Hour)
	third := e.sync()
	if len(third.compliance) != 1 || third.compliance[0]["post_id"] != list[2] || third.compliance[0]["action"] != "" || third.compliance[0]["reason"] != "" {
		t.Fatalf("third check %v, want one visible-again row for %s", third.compliance, list[2])
	}
	jobs := e.jobs()
	if ids := jobs[2].IDs; slices.Contains(ids, list[1]) || !slices.Contains(ids, list[2]) || !slices.Contains(ids, list[3]) || len(ids) != 4 {
		t.Errorf("third job's ids %v: want every archived post but the deleted one", ids)
	}
}

// A post whose author deactivated their account is reported `deactivated`
// and, unlike a deleted one, checked again every round (the account can be
// reactivated): unchanged, it adds no row; reactivated, it gets a
// visible-again row.
func TestPostsOfADeactivatedAuthorAreCheckedAgain(t *testing.T) {
	e := newCenv(t, xsim.ComplianceOptions{}, map[string]int{alice1: 4})
	post := e.sim.Bookmarks(alice1)[1]
	if err := e.sim.SetPostCompliance(post, "deactivated"); err != nil {
		t.Fatal(err)
	}
	if got := e.sync().reasons(); len(got) != 1 || got[alice1+"/"+post] != "deactivated" {
		t.Fatalf("first check %v", got)
	}
	e.clk.Advance(24 * time.Hour)
	if s := e.sync(); len(s.compliance) != 0 || !slices.Contains(e.jobs()[1].IDs, post) {
		t.Fatalf("second check: rows %v, job ids %v: want the post checked again, no row", s.compliance, e.jobs()[1].IDs)
	}
	_ = e.sim.SetPostCompliance(post, "") // reactivated
	e.clk.Advance(24 * time.Hour)
	third := e.sync()
	if len(third.compliance) != 1 || third.compliance[0]["post_id"] != post || third.compliance[0]["reason"] != "" {
		t.Fatalf("third check %v, want one visible-again row for %s", third.compliance, post)
	}
}

// Every archived post is checked, also after its bookmark was removed (the
// walk's held list no longer has it), and every account's: each id once
// across accounts, in jobs of at most max_ids_per_job ids run one after the
// other. A post both accounts archived and X reports gets a row for each.
func TestEveryArchivedPostOfEveryAccountOnceInJobsOfTheSizeLimit(t *testing.T) {
	e := newCenv(t, xsim.ComplianceOptions{MaxIDs: 7}, map[string]int{alice1: 9, bob2: 8})
	e.setCompliance("max_ids_per_job", 7)
	shared := e.sim.Bookmarks(alice1)[0]
	_ = e.sim.Bookmark(bob2, shared)
	e.sync()
	removed := e.sim.Bookmarks(alice1)[5]
	_ = e.sim.Unbookmark(alice1, removed)
	_ = e.sim.SetPostCompliance(removed, "bounced")
	_ = e.sim.SetPostCompliance(shared, "suspended")

	e.clk.Advance(24 * time.Hour)
	before := len(e.jobs())
	s := e.sync()
	if len(s.errors) > 0 {
		t.Fatal(s.errors)
	}
	jobs := e.jobs()[before:]
	var all []string
	for _, j := range jobs {
		if len(j.IDs) > 7 || j.Status != "complete" {
			t.Errorf("job %s: %d ids, %s", j.ID, len(j.IDs), j.Status)
		}
		all = append(all, j.IDs...)
	}
	if len(jobs) != 3 || len(all) != 17 || len(slices.Compact(slices.Sorted(slices.Values(all)))) != 17 {
		t.Fatalf("%d jobs with %d ids, want 3 jobs with the 17 distinct archived posts once", len(jobs), len(all))
	}
	for i := 1; i < len(jobs); i++ {
		if jobs[i].Created.Before(jobs[i-1].Created) {
			t.Errorf("jobs out of order")
		}
	}
	want := map[string]string{alice1 + "/" + removed: "bounced", alice1 + "/" + shared: "suspended", bob2 + "/" + shared: "suspended"}
	if got := s.reasons(); !maps.Equal(got, want) {
		t.Errorf("rows %v, want %v", got, want)
	}
}

// Posts two accounts archived are sent to X once, also when every id of
// both accounts fits one job: no id twice in a job, every archived id in
// exactly one job.
func TestPostsSharedByAccountsAreSentOnceInOneJob(t *testing.T) {
	e := newCenv(t, xsim.ComplianceOptions{}, map[string]int{alice1: 6, bob2: 4})
	e.setCompliance("max_ids_per_job", 100)
	for _, id := range e.sim.Bookmarks(alice1)[:3] {
		_ = e.sim.Bookmark(bob2, id)
	}
	archived := map[string]int{}
	for _, id := range append(e.sim.Bookmarks(alice1), e.sim.Bookmarks(bob2)...) {
		archived[id] = 0
	}
	if s := e.sync(); len(s.errors) > 0 {
		t.Fatal(s.errors)
	}
	for _, j := range e.jobs() {
		inJob := map[string]bool{}
		for _, id := range j.IDs {
			if inJob[id] {
				t.Errorf("job %s has post %s twice", j.ID, id)
			}
			inJob[id] = true
			archived[id]++
		}
	}
	for id, n := range archived {
		if n != 1 {
			t.Errorf("post %s is in %d jobs, want 1", id, n)
		}
	}
	if len(archived) != 10 {
		t.Errorf("%d distinct archived posts, want 10", len(archived))
	}
}

const (
	alice1 = "1001"
	bob2   = "1002"
)

// A job still running when compliance.wait is over stays recorded in the
// state backend; the next sync polls it instead of creating another, and
// reads its results.
func TestJobStillRunningIsResumedByTheNextSync(t *testing.T) {
	e := newCenv(t, xsim.ComplianceOptions{Delay: 3 * time.Hour}, map[string]int{alice1: 12})
	e.setCompliance("wait", "5m")
	deleted := e.sim.Bookmarks(alice1)[3]
	_ = e.sim.DeletePost(deleted)
	_ = e.sim.SetPostCompliance(e.sim.Bookmarks(alice1)[5], "protected")
	first := e.sync()
	if len(first.errors) > 0 || len(first.compliance) != 0 {
		t.Fatalf("first sync: %+v", first)
	}
	jobs := e.jobs()
	if len(jobs) != 1 || jobs[0].Status != "in_progress" {
		t.Fatalf("jobs %+v", jobs)
	}
	if !strings.Contains(e.store.Committed()["x_post_compliance/job"], jobs[0].ID) {
		t.Fatalf("the job is not in the committed state: %v", e.store.Committed()["x_post_compliance/job"])
	}
	e.clk.Advance(time.Hour)
	if s := e.sync(); len(e.jobs()) != 1 || len(s.compliance) != 0 || len(s.errors) > 0 {
		t.Fatalf("an hour later: %d jobs, %+v", len(e.jobs()), s)
	}
	e.clk.Advance(3 * time.Hour)
	s := e.sync()
	if len(e.jobs()) != 1 || len(s.compliance) != 1 || s.compliance[0]["job_id"] != jobs[0].ID {
		t.Fatalf("after the job completed: %d jobs, rows %v", len(e.jobs()), s.compliance)
	}
	if e.store.Committed()["x_post_compliance/job"] != "" {
		t.Errorf("the finished job is still recorded")
	}
}

// A job that failed is given up and its posts are checked by a new job in
// the same sync. When that one fails too, it is reported (the sync's
// error, the failure column of x_api_usage), the job of accounts runs all
// the same, and the next sync checks the posts with a new job.
func TestFailedJobIsReplacedAtOnce(t *testing.T) {
	e := newCenv(t, xsim.ComplianceOptions{}, map[string]int{alice1: 5})
	e.sim.FailComplianceJobs(1)
	if s := e.sync(); len(s.errors) > 0 || len(e.jobs()) != 2 || e.jobs()[0].Status != "failed" || e.jobs()[1].Status != "complete" || len(e.jobs()[1].IDs) != 5 {
		t.Fatalf("one failed job: errors %v, jobs %+v", s.errors, e.jobs())
	}

	e.clk.Advance(24 * time.Hour)
	e.sim.FailComplianceJobs(2)
	users := len(e.sim.ComplianceJobsOf("users"))
	second := e.sync()
	if len(second.errors) != 1 || !strings.Contains(second.errors[0], "failed (X gives no reason); its 5 posts are checked by a new job at the next sync") ||
		!strings.Contains(second.appUsage["compliance_get_job"]["failure"], "failed (X gives no reason)") {
		t.Fatalf("two failed jobs: errors %v, usage %v", second.errors, second.appUsage["compliance_get_job"])
	}
	if jobs := e.sim.ComplianceJobsOf("users"); len(jobs) != users+1 || jobs[users].Status != "complete" {
		t.Fatalf("the job of accounts did not run after the failed jobs of posts: %+v", jobs)
	}
	_ = e.sim.SetPostCompliance(e.sim.Bookmarks(alice1)[0], "deleted")
	e.clk.Advance(time.Hour) // less than compliance.every: the round goes on
	third := e.sync()
	if jobs := e.jobs(); len(third.errors) > 0 || len(jobs) != 5 || len(third.compliance) != 1 || len(jobs[4].IDs) != 5 {
		t.Fatalf("third sync: %d jobs, %+v", len(jobs), third)
	}
}

// A run that stopped between creating a job and uploading its ids (here:
// the upload's connection is reset until the retries are spent) left the
// job recorded. Within the upload's 15 minutes the next sync uploads to the
// same job; after them the job is expired, and the next sync gives it up
// and checks its posts with a new job at once.
func TestJobStoppedBeforeItsUpload(t *testing.T) {
	for _, late := range []bool{false, true} {
		e := newCenv(t, xsim.ComplianceOptions{}, map[string]int{alice1: 5})
		e.spec["max_attempts"] = 1
		e.sim.SetFaults(xsim.Faults{ConnResetRate: 1, Operations: []string{xsim.OpComplianceUpload}})
		first := e.sync()
		if len(first.errors) != 1 || !strings.Contains(first.errors[0], "uploading the ids") {
			t.Fatalf("first sync: %v", first.errors)
		}
		e.sim.SetFaults(xsim.Faults{})
		created := e.jobs()[0].Created
		if late {
			e.clk.Advance(created.Add(20 * time.Minute).Sub(e.clk.Now()))
		} else {
			e.clk.Advance(created.Add(14 * time.Minute).Sub(e.clk.Now()))
		}
		second := e.sync()
		jobs := e.jobs()
		switch {
		case !late && (len(second.errors) > 0 || len(jobs) != 1 || jobs[0].Status != "complete" || len(jobs[0].IDs) != 5):
			t.Fatalf("within 15 minutes: %v %+v", second.errors, jobs)
		case late && (len(second.errors) > 0 || len(jobs) != 2 || jobs[0].Status != "expired" || jobs[1].Status != "complete" || len(jobs[1].IDs) != 5):
			t.Fatalf("after 15 minutes: %v %+v", second.errors, jobs)
		}
	}
}

// X runs one job of a type per app at a time. A job of the same app that
// is not the sync's (another shard's, another program's) is waited for
// within compliance.wait; one that outlasts it is reported. A job created
// between the sync's look and its create (X refuses the create with 409 or
// 400) is reported the same way.
func TestAnotherJobOfTheAppIsWaitedFor(t *testing.T) {
	for _, busy := range []int{409, 400} {
		e := newCenv(t, xsim.ComplianceOptions{Delay: 4 * time.Minute, BusyStatus: busy}, map[string]int{alice1: 5})
		ctx := context.Background()
		other, err := client.New(client.StaticToken(e.app), client.WithBaseURL(e.sim.URL()), client.WithClock(e.clk))
		if err != nil {
			t.Fatal(err)
		}
		start := func() {
			job, _, err := other.CreateComplianceJob(ctx, client.CreateComplianceJobOptions{Type: client.ComplianceTweets, Name: "other"})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.UploadComplianceIDs(ctx, job, []string{"1"}); err != nil {
				t.Fatal(err)
			}
		}
		start()
		if s := e.sync(); len(s.errors) > 0 || len(e.jobs()) != 2 || e.jobs()[1].Status != "complete" {
			t.Fatalf("busy %d: the sync did not wait for the other job: %v %+v", busy, s.errors, e.jobs())
		}

		e.clk.Advance(24 * time.Hour)
		e.setCompliance("wait", "1m")
		start()
		if s := e.sync(); len(s.errors) != 1 || !strings.Contains(s.errors[0], "another compliance job") {
			t.Fatalf("busy %d: a job outlasting compliance.wait: %v", busy, s.errors)
		}

		e.clk.Advance(24 * time.Hour)
		var raced atomic.Bool
		e.sim.OnRequest(func(ri xsim.RequestInfo) {
			if ri.Operation == xsim.OpCreateComplianceJob && raced.CompareAndSwap(false, true) {
				start() // another job is created just before the sync's
			}
		})
		before := len(e.jobs())
		s := e.sync()
		e.sim.OnRequest(nil)
		if len(s.errors) != 1 || !strings.Contains(s.errors[0], "another compliance job") || len(e.jobs()) != before+1 {
			t.Fatalf("busy %d: a job created meanwhile: %v, %d jobs", busy, s.errors, len(e.jobs())-before)
		}
	}
}

// A user's PKCE token in the compliance section: X's 403 is reported with a
// message that says an app-only bearer token is needed and where to get it.
func TestUserTokenInTheComplianceSectionIsRefusedWithAHint(t *testing.T) {
	e := newCenv(t, xsim.ComplianceOptions{}, map[string]int{alice1: 3})
	e.setCompliance("bearer_token", e.sim.IssueToken("5005"))
	s := e.sync()
	if len(s.errors) != 1 || !strings.Contains(s.errors[0], "app-only bearer token") || !strings.Contains(s.errors[0], "Keys and tokens") {
		t.Fatalf("errors %v", s.errors)
	}
	if f := s.appUsage["compliance_list_jobs"]["failure"]; !strings.Contains(f, "Unsupported Authentication") {
		t.Errorf("usage failure %q", f)
	}
	if s.bookmarks != 3 {
		t.Errorf("the bookmarks were not synced: %d", s.bookmarks)
	}
}

// Without a state backend the archived ids and the job in progress cannot
// be kept: the check says so instead of checking nothing.
func TestComplianceNeedsAStateBackend(t *testing.T) {
	e := newCenv(t, xsim.ComplianceOptions{}, map[string]int{alice1: 3})
	specJSON, _ := json.Marshal(e.spec)
	p := plugin.New(plugin.WithClock(e.clk))
	if err := p.Init(context.Background(), specJSON, sdkplugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs, err := p.SyncAll(context.Background(), sdkplugin.SyncOptions{Tables: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	var errs []string
	for _, m := range msgs {
		if m, ok := m.(*message.SyncError); ok {
			errs = append(errs, m.Error)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0], "backend_options") || len(e.jobs()) != 0 {
		t.Fatalf("errors %v, %d jobs", errs, len(e.jobs()))
	}
}

// Without a compliance section the table is empty and nothing is asked of
// the compliance endpoints; the archived ids are recorded all the same, so
// a check enabled later covers the posts archived before.
func TestWithoutTheSectionNothingIsCheckedButIDsAreKept(t *testing.T) {
	e := newCenv(t, xsim.ComplianceOptions{}, map[string]int{alice1: 8})
	section := e.spec["compliance"]
	delete(e.spec, "compliance")
	e.sync()
	removed := e.sim.Bookmarks(alice1)[2]
	_ = e.sim.Unbookmark(alice1, removed)
	e.clk.Advance(24 * time.Hour)
	if s := e.sync(); len(s.compliance)+len(s.appUsage)+len(e.jobs()) != 0 {
		t.Fatalf("without the section: %+v, jobs %v", s, e.jobs())
	}
	e.spec["compliance"] = section
	_ = e.sim.SetPostCompliance(removed, "deleted")
	e.clk.Advance(24 * time.Hour)
	s := e.sync()
	if jobs := e.jobs(); len(jobs) != 1 || len(jobs[0].IDs) != 8 || len(s.compliance) != 1 || s.compliance[0]["post_id"] != removed {
		t.Fatalf("check enabled later: %+v, rows %v", jobs, s.compliance)
	}
}

// With --shard N/T each shard checks its own accounts with a job of its
// own, recorded under a key of its own; X's one job at a time is waited for.
func TestShardsCheckTheirOwnAccounts(t *testing.T) {
	e := newCenv(t, xsim.ComplianceOptions{}, map[string]int{alice1: 4, bob2: 6})
	specJSON, _ := json.Marshal(e.spec)
	for n := int32(1); n <= 2; n++ {
		p := plugin.New(plugin.WithClock(e.clk), plugin.WithState(e.store))
		if err := p.Init(context.Background(), specJSON, sdkplugin.NewClientOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := p.SyncAll(context.Background(), sdkplugin.SyncOptions{Tables: []string{"*"}, Shard: &sdkplugin.Shard{Num: n, Total: 2}}); err != nil {
			t.Fatal(err)
		}
	}
	jobs := e.jobs() // bob2 is in shard 1 of 2, alice1 in shard 2 (their state buckets)
	if len(jobs) != 2 || jobs[0].Name != "cq-source-x shard-1-of-2" || len(jobs[0].IDs) != 6 || jobs[1].Name != "cq-source-x shard-2-of-2" || len(jobs[1].IDs) != 4 {
		t.Fatalf("jobs %+v", jobs)
	}
	for _, n := range []string{"1", "2"} {
		if _, ok := e.store.Committed()["x_post_compliance/job/shard-"+n+"-of-2"]; !ok {
			t.Errorf("no job key for shard %s: %v", n, slices.Sorted(maps.Keys(e.store.Committed())))
		}
	}
}

// The upload and download URLs get no Authorization header from the plugin.
func TestThePluginSendsNoTokenToTheStorageURLs(t *testing.T) {
	e := newCenv(t, xsim.ComplianceOptions{}, map[string]int{alice1: 4})
	rec := &headerRecorder{base: http.DefaultTransport}
	if s := e.sync(plugin.WithTransport(rec)); len(s.errors) > 0 {
		t.Fatal(s.errors)
	}
	storage := 0
	for _, r := range rec.seen {
		if strings.HasPrefix(r.url, e.sim.StorageURL()) {
			storage++
			if r.auth {
				t.Errorf("%s got an Authorization header", r.url)
			}
		}
	}
	if storage != 4 {
		t.Errorf("%d storage requests, want the upload and the download of the job of posts and of the job of accounts", storage)
	}
}

type headerRecorder struct {
	base http.RoundTripper
	mu   sync.Mutex
	seen []struct {
		url  string
		auth bool
	}
}

func (h *headerRecorder) RoundTrip(r *http.Request) (*http.Response, error) {
	h.mu.Lock()
	h.seen = append(h.seen, struct {
		url  string
		auth bool
	}{r.URL.String(), r.Header.Get("Authorization") != ""})
	h.mu.Unlock()
	return h.base.RoundTrip(r)
}
