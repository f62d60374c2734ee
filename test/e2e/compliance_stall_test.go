package e2e

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// No job stalls the check (issue 37): a job that cannot give its results
// is given up with a line saying why, and its ids are checked by a new job
// at once.

// A job still running when a sync ends, and the next sync eight days
// later, past the week X keeps a job's results: X keeps the job complete
// (as it documents) or turns it expired (as it does not). Either way that
// sync gives up the job, checks its posts with a new one, and the deleted
// post gets its row and is redacted in the destination; the job of
// accounts, in the same state, runs too.
func TestGRPCAJobReadAfterItsWeekIsReplacedInTheNextSync(t *testing.T) {
	for _, expire := range []bool{false, true} {
		e := newComplianceEnv(t, map[string]any{"wait": "5m"}, xsim.ComplianceOptions{Delay: time.Hour, ExpireComplete: expire})
		e.sync()
		posts, users := e.sim.ComplianceJobsOf("tweets"), e.sim.ComplianceJobsOf("users")
		if len(posts) != 1 || posts[0].Status != "in_progress" || len(users) != 1 || users[0].Status != "in_progress" {
			t.Fatalf("first sync: jobs %+v %+v, want both still running", posts, users)
		}
		post := e.ex.LongPost
		if err := e.sim.DeletePost(post); err != nil {
			t.Fatal(err)
		}
		e.clk.Advance(7 * 24 * time.Hour) // and sync's day
		e.settings["compliance"].(map[string]any)["wait"] = "3h"
		e.sync()
		status := map[bool]string{false: "complete", true: "expired"}[expire]
		posts, users = e.sim.ComplianceJobsOf("tweets"), e.sim.ComplianceJobsOf("users")
		if len(posts) != 2 || posts[0].Status != status || posts[1].Status != "complete" || len(posts[1].IDs) != len(posts[0].IDs) {
			t.Fatalf("X's job %s: jobs of posts %+v, want the first given up and a second with its posts", status, posts)
		}
		if len(users) != 2 || users[0].Status != status || users[1].Status != "complete" {
			t.Fatalf("X's job %s: jobs of accounts %+v", status, users)
		}
		tomb := e.dest.rowsOf("x_post_compliance", post)
		if len(tomb) != 1 || tomb[0]["job_id"] != posts[1].ID || tomb[0]["reason"] != "deleted" || tomb[0]["archive_action"] != "redacted" {
			t.Errorf("X's job %s: tombstone %v", status, tomb)
		}
		if rows := e.dest.rowsOf("x_bookmarks", post); len(rows) != 1 || rows[0]["full_text"] != "" {
			t.Errorf("X's job %s: x_bookmarks %v, want the row redacted", status, rows)
		}
	}
}

// A job X never finishes is given up when its results would expire (its
// download_expires_at, a week after its creation), with a line saying so.
// X runs one job of a type at a time, so while it holds the job the sync
// says that another job of the app runs.
func TestAJobXNeverFinishesIsGivenUpAtItsWeek(t *testing.T) {
	e := newCenv(t, xsim.ComplianceOptions{Delay: 30 * 24 * time.Hour}, map[string]int{alice1: 5})
	e.setCompliance("wait", "5m")
	if s := e.sync(); len(s.errors) > 0 || e.jobs()[0].Status != "in_progress" {
		t.Fatalf("first sync: %v %+v", s.errors, e.jobs())
	}
	e.clk.Advance(6 * 24 * time.Hour)
	if s := e.sync(); len(s.errors) > 0 || len(e.logged("compliance job given up; a new job checks its ids")) != 0 {
		t.Fatalf("within the week: %v, log %s", s.errors, e.log.String())
	}
	e.clk.Advance(2 * 24 * time.Hour)
	s := e.sync()
	job := e.jobs()[0]
	if len(s.errors) != 1 || !strings.Contains(s.errors[0], "another compliance job of this X app is in_progress (job "+job.ID) {
		t.Fatalf("errors %v", s.errors)
	}
	lines := e.logged("compliance job given up; a new job checks its ids")
	if len(lines) != 2 || lines[0]["job"] != job.ID ||
		lines[0]["why"] != "is still in_progress at "+job.Created.Add(7*24*time.Hour).Format(time.RFC3339)+", when its results would expire" {
		t.Fatalf("log lines %v", lines)
	}
	if v := e.store.Committed()["x_post_compliance/job"]; v != "" {
		t.Errorf("the job given up is still recorded: %s", v)
	}
}

// resultsRewriter answers the downloads of the results of the jobs of
// posts with what rewrite makes of X's file (n counts them, from 1).
type resultsRewriter struct {
	sim     *xsim.Server
	rewrite func(n int, file []byte) []byte
	mu      sync.Mutex
	n       int
}

func (r *resultsRewriter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil || req.Method != http.MethodGet || !strings.HasPrefix(req.URL.String(), r.sim.StorageURL()) || resp.StatusCode != http.StatusOK {
		return resp, err
	}
	posts := false
	for _, j := range r.sim.ComplianceJobsOf("tweets") {
		posts = posts || strings.Contains(req.URL.Path, "/"+j.ID+"/")
	}
	if !posts {
		return resp, nil
	}
	file, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.n++
	file = r.rewrite(r.n, file)
	r.mu.Unlock()
	resp.Body, resp.ContentLength = io.NopCloser(bytes.NewReader(file)), int64(len(file))
	resp.Header.Set("Content-Length", strconv.Itoa(len(file)))
	return resp, nil
}

// deletedAndRewritten archives 8 bookmarks, deletes one, and runs the next
// day's sync with the results of its jobs of posts rewritten: the
// environment, the deleted post and that sync.
func deletedAndRewritten(t *testing.T, rewrite func(n int, file []byte) []byte) (*cenv, string, csync) {
	e := newCenv(t, xsim.ComplianceOptions{}, map[string]int{alice1: 8})
	e.sync()
	deleted := e.sim.Bookmarks(alice1)[2]
	_ = e.sim.DeletePost(deleted)
	e.clk.Advance(24 * time.Hour)
	return e, deleted, e.sync(plugin.WithTransport(&resultsRewriter{sim: e.sim, rewrite: rewrite}))
}

// A result file that does not parse (its ids written as numbers) is given
// up with a line saying why, and a new job checks its posts in the same
// sync.
func TestResultsThatDoNotParseAreGivenUpAndReplaced(t *testing.T) {
	numbers := regexp.MustCompile(`"id":"(\d+)"`)
	e, deleted, s := deletedAndRewritten(t, func(n int, file []byte) []byte {
		if n == 1 {
			return numbers.ReplaceAll(file, []byte(`"id":$1`))
		}
		return file
	})
	jobs := e.jobs()[1:]
	if len(s.errors) > 0 || len(jobs) != 2 || len(jobs[1].IDs) != len(jobs[0].IDs) {
		t.Fatalf("errors %v, jobs %+v", s.errors, jobs)
	}
	if len(s.compliance) != 1 || s.compliance[0]["post_id"] != deleted || s.compliance[0]["job_id"] != jobs[1].ID {
		t.Fatalf("rows %v", s.compliance)
	}
	lines := e.logged("compliance job given up; a new job checks its ids")
	if len(lines) != 1 || lines[0]["job"] != jobs[0].ID || !strings.Contains(lines[0]["why"].(string), "is complete, but its results could not be read: ") ||
		!strings.Contains(lines[0]["why"].(string), "results line 1") {
		t.Errorf("log lines %v", lines)
	}
}

// A result file of 200,000 lines, past the cap of an API answer, is read:
// the lines of the job's posts come after 199,999 of ids it was not given.
func TestAResultFileOf200000LinesIsRead(t *testing.T) {
	var size int
	e, deleted, s := deletedAndRewritten(t, func(_ int, file []byte) []byte {
		var b bytes.Buffer
		for i := range 200_000 - bytes.Count(file, []byte("\n")) {
			fmt.Fprintf(&b, `{"action":"delete","created_at":"2026-01-01T00:00:00.000Z","id":"%d","reason":"deleted","redacted_at":"2026-02-01T00:00:00.000Z"}`+"\n", 1_000_000_000_000_000+i)
		}
		b.Write(file)
		size = b.Len()
		return b.Bytes()
	})
	if size < 16<<20 {
		t.Fatalf("the file is %d bytes", size)
	}
	if len(s.errors) > 0 || len(e.jobs()) != 2 || len(s.compliance) != 1 || s.compliance[0]["post_id"] != deleted {
		t.Fatalf("errors %v, %d jobs, rows %v", s.errors, len(e.jobs()), s.compliance)
	}
}

// A result line without a reason is acted on as a reason this version does
// not know: as compliance.on_change says (redact, by default), with a
// warning naming the post. Its row has X's action and no reason.
func TestAResultWithoutAReasonIsActedOnAsOnChange(t *testing.T) {
	e, post, s := deletedAndRewritten(t, func(_ int, file []byte) []byte {
		return bytes.ReplaceAll(file, []byte(`"reason":"deleted",`), nil)
	})
	if len(s.errors) > 0 || len(s.compliance) != 1 {
		t.Fatalf("errors %v, rows %v", s.errors, s.compliance)
	}
	if r := s.compliance[0]; r["post_id"] != post || r["action"] != "delete" || r["reason"] != "" || r["archive_action"] != "redacted" {
		t.Errorf("row %v", r)
	}
	if len(s.redacted) != 1 || s.redacted[0] != post {
		t.Errorf("redacted rows sent: %v, want %s", s.redacted, post)
	}
	if w := e.logged("compliance result without a reason: acted on as a reason this version does not know (compliance.on_change)"); len(w) != 1 || w[0]["post_id"] != post {
		t.Errorf("warnings %v", w)
	}
}
