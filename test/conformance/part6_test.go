package conformance

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// Part 6, L106: "A separate compliance job reports deleted posts at no
// charge. Its interface: not shown." The facts: POST /2/compliance/jobs,
// PUT the ids to upload_url within 15 minutes, poll GET
// /2/compliance/jobs/:id until complete, GET download_url for NDJSON lines
// of the affected ids only; an app-only bearer token; not billed. The whole
// lifecycle through the client: a deleted bookmark is reported, the others
// are not, nothing is billed, and the storage URLs never see a token.
func TestComplianceJobReportsDeletedPostsAtNoCharge(t *testing.T) {
	e := newEnv(t, xsim.Options{Compliance: xsim.ComplianceOptions{Delay: 3 * time.Minute}})
	posts := e.sim.SeedBookmarks(alice, 20)
	if err := e.sim.DeletePost(posts[7]); err != nil {
		t.Fatal(err)
	}
	if err := e.sim.SetPostCompliance(posts[3], "suspended"); err != nil {
		t.Fatal(err)
	}
	storage := &recorder{base: e.tr}
	c := e.client(e.sim.IssueAppOnlyToken(), client.WithStorageClient(&http.Client{Transport: storage}))
	ctx := context.Background()

	job, _, err := c.CreateComplianceJob(ctx, client.CreateComplianceJobOptions{Type: client.ComplianceTweets, Name: "conformance"})
	if err != nil {
		t.Fatal(err)
	}
	if job.Status != client.JobCreated || job.UploadExpiresAt.Sub(job.CreatedAt) != 15*time.Minute {
		t.Fatalf("created job %+v", job)
	}
	if _, err := c.UploadComplianceIDs(ctx, job, posts); err != nil {
		t.Fatal(err)
	}
	polls := 0
	for job.Status != client.JobComplete {
		if polls++; polls > 10 {
			t.Fatalf("job still %s after %d polls", job.Status, polls)
		}
		e.clk.Advance(time.Minute)
		if job, _, err = c.GetComplianceJob(ctx, job.ID); err != nil {
			t.Fatal(err)
		}
	}
	var results []client.ComplianceResult
	if _, err := c.DownloadComplianceResults(ctx, job, func(r client.ComplianceResult) { results = append(results, r) }); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range results {
		if r.Action != "delete" || r.RedactedAt == nil {
			t.Errorf("result %+v", r)
		}
		got[r.ID] = r.Reason
	}
	if len(got) != 2 || got[posts[7]] != "deleted" || got[posts[3]] != "suspended" {
		t.Errorf("results %v, want %s deleted and %s suspended", got, posts[7], posts[3])
	}
	if n := e.sim.TotalPostsReturned(); n != 0 {
		t.Errorf("%d posts billed", n)
	}
	for _, r := range storage.all() {
		if r.Authorization != "" {
			t.Errorf("%s %s: the storage URL got an Authorization header", r.Method, r.Path)
		}
	}
	if len(storage.all()) != 2 {
		t.Errorf("%d storage requests, want the upload and the download", len(storage.all()))
	}
	jobs, _, err := c.ListComplianceJobs(ctx, client.ComplianceTweets, client.JobComplete)
	if err != nil || len(jobs) != 1 || jobs[0].ID != job.ID {
		t.Errorf("list: %v %v", jobs, err)
	}
}

// Part 5 (the facts): the compliance jobs take the app's app-only bearer
// token; a user's PKCE token is refused with a message that says which
// token is needed and where it is, and nothing is created.
func TestComplianceRefusesAUserToken(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	c := e.client(e.sim.IssueToken(alice))
	_, _, err := c.CreateComplianceJob(context.Background(), client.CreateComplianceJobOptions{Type: client.ComplianceTweets})
	if !errors.Is(err, client.ErrUserContextToken) {
		t.Fatalf("err = %v, want ErrUserContextToken", err)
	}
	var ae *client.APIError
	if !errors.As(err, &ae) || ae.Hint != client.HintUserContextToken {
		t.Errorf("hint: %v", err)
	}
	if n := len(e.sim.ComplianceJobs()); n != 0 {
		t.Errorf("%d jobs created", n)
	}
}
