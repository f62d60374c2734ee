package export_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/sandbox"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// A compliance job (of posts, then of accounts) is recorded in DIR/.state
// as soon as it is created, and again once its ids are uploaded, ahead of
// the run's commit: it describes no data of the files. An exporter killed
// (SIGKILL) right after any of those steps leaves the job running on X; the
// next run resumes it (uploading its ids if the kill came first) instead of
// creating another, which X would refuse while it runs, and writes what it
// reports. The state never runs ahead of the files meanwhile.
func TestKillMidComplianceJobResumesTheJob(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	users := []demoUser{{id: "1001", bookmarks: 30, folders: 1}}
	sim, spec, saved := complianceKillRun(t, users)
	if saved != 4 {
		t.Fatalf("jobs were saved %d times, want after the creation and the upload of the job of posts, then of the job of accounts", saved)
	}

	for i, at := range []string{"after the job of posts was created", "after its ids were uploaded", "after the job of accounts was created", "after its ids were uploaded"} {
		dir := filepath.Join(t.TempDir(), "out")
		deleted := sim.Bookmarks("1001")[10+i]
		if err := sim.SetPostCompliance(deleted, "deleted"); err != nil {
			t.Fatal(err)
		}
		before := map[string]int{"tweets": len(sim.ComplianceJobsOf("tweets")), "users": len(sim.ComplianceJobsOf("users"))}
		killed := []string{"tweets", "users"}[i/2]
		if c := runChildAtJobSave(t, spec, dir, i+1); !c.killed {
			t.Fatalf("%s: not killed: %s", at, c.output)
		}
		checkNotAhead(t, dir, users)
		if jobs := sim.ComplianceJobsOf(killed)[before[killed]:]; len(jobs) != 1 || jobs[0].Uploads != i%2 {
			t.Fatalf("%s: jobs %+v", at, jobs)
		}
		if again := runChild(t, spec, dir, 0, 0); again.killed || again.code != 0 {
			t.Fatalf("%s: re-run: %s", at, again.output)
		}
		for typ, n := range before {
			if jobs := sim.ComplianceJobsOf(typ)[n:]; len(jobs) != 1 || jobs[0].Uploads != 1 || jobs[0].Status != "complete" {
				t.Fatalf("%s: the re-run created another job of %s or did not finish this one: %+v", at, typ, jobs)
			}
		}
		jobs := sim.ComplianceJobsOf("tweets")[before["tweets"]:]
		if len(jobs[0].IDs) != 30 {
			t.Fatalf("%s: the job of posts checked %d posts, want 30", at, len(jobs[0].IDs))
		}
		checkFinding(t, at, dir, deleted, jobs[0].ID)
		checkArchive(t, dir, sim, users)
	}
}

// complianceKillRun starts a simulator whose jobs take 300 ms, with users,
// writes their spec with the compliance section (every run checks), and
// runs the exporter once, not killed, after prepare: the setup of the kill
// tests of the jobs. saved is how many times that run saved a job.
func complianceKillRun(t *testing.T, users []demoUser, prepare ...func(*xsim.Server)) (sim *xsim.Server, spec string, saved int) {
	t.Helper()
	sim = xsim.New(xsim.Options{DisableRateLimits: true, Compliance: xsim.ComplianceOptions{Delay: 300 * time.Millisecond}})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	tokens := seed(sim, users)
	spec = filepath.Join(t.TempDir(), "spec.yml")
	text := specYAML(sim.URL(), users, tokens, `["*"]`) +
		fmt.Sprintf("    compliance:\n      bearer_token: %q\n      every: 0s\n", sim.IssueAppOnlyToken())
	if err := os.WriteFile(spec, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, p := range prepare {
		p(sim)
	}
	probe := runChild(t, spec, filepath.Join(t.TempDir(), "probe"), 0, 0)
	if probe.killed || probe.code != 0 {
		t.Fatalf("clean run: %s", probe.output)
	}
	for _, s := range probe.steps {
		if s == jobSaved {
			saved++
		}
	}
	return sim, spec, saved
}

// jobSaved is the step at which an export has saved a compliance job.
const jobSaved = "compliance job saved"

// runChildAtJobSave runs the export of spec into dir, killed once it has
// saved a compliance job the n-th time.
func runChildAtJobSave(t *testing.T, spec, dir string, n int) child {
	t.Helper()
	return runKilledAt(t, []string{"export", "--spec", spec, "--out", dir, "--quiet"}, fmt.Sprintf("%s#%d", jobSaved, n), 0)
}

// checkFinding fails unless x_post_compliance in dir has the post reported
// deleted by job, for user 1001.
func checkFinding(t *testing.T, at, dir, post, job string) {
	t.Helper()
	findings, err := sandbox.ReadFindings(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range findings {
		if f.PostID == post && f.Reason == "deleted" && f.JobID == job && f.UserID == "1001" {
			return
		}
	}
	t.Errorf("%s: x_post_compliance %+v lacks post %s of job %s", at, findings, post, job)
}

// A job X failed is given up and replaced at once by a new job of its
// posts. An exporter killed (SIGKILL) after the failed job was created or
// uploaded, or after its replacement was, leaves one of them recorded: the
// next run gives up the failed one or resumes the replacement, and never
// makes a third job; the post X reports gets its row from the job that
// completed.
func TestKillWhileAFailedJobIsReplaced(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	users := []demoUser{{id: "1001", bookmarks: 20}}
	sim, spec, saved := complianceKillRun(t, users, func(sim *xsim.Server) { sim.FailComplianceJobs(1) })
	// created, uploaded: the failed job, its replacement, the job of accounts
	if jobs := sim.ComplianceJobsOf("tweets"); saved != 6 || len(jobs) != 2 || jobs[0].Status != "failed" || jobs[1].Status != "complete" {
		t.Fatalf("clean run: jobs saved %d times, jobs %+v", saved, jobs)
	}

	for i, at := range []string{"after the job was created", "after its ids were uploaded", "after its replacement was created", "after the replacement's ids were uploaded"} {
		dir := filepath.Join(t.TempDir(), "out")
		deleted := sim.Bookmarks("1001")[2+i]
		if err := sim.SetPostCompliance(deleted, "deleted"); err != nil {
			t.Fatal(err)
		}
		before := len(sim.ComplianceJobsOf("tweets"))
		sim.FailComplianceJobs(1)
		if c := runChildAtJobSave(t, spec, dir, i+1); !c.killed {
			t.Fatalf("%s: not killed: %s", at, c.output)
		}
		checkNotAhead(t, dir, users)
		if again := runChild(t, spec, dir, 0, 0); again.killed || again.code != 0 {
			t.Fatalf("%s: re-run: %s", at, again.output)
		}
		jobs := sim.ComplianceJobsOf("tweets")[before:]
		if len(jobs) != 2 || jobs[0].Status != "failed" || jobs[1].Status != "complete" || jobs[1].Uploads != 1 || len(jobs[1].IDs) != 20 {
			t.Fatalf("%s: jobs of posts %+v, want the failed one and its replacement, uploaded once", at, jobs)
		}
		checkFinding(t, at, dir, deleted, jobs[1].ID)
		checkArchive(t, dir, sim, users)
	}
}
