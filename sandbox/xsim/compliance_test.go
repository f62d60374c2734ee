package xsim

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// job is a compliance job as the API returns it.
type job struct {
	ID, Type, Name, Status string
	UploadURL              string `json:"upload_url"`
	DownloadURL            string `json:"download_url"`
}

func createJob(t *testing.T, s *Server, token, body string) (*resp, job) {
	t.Helper()
	r := doReq(t, "POST", s.URL()+"/2/compliance/jobs", token, strings.NewReader(body), map[string]string{"Content-Type": "application/json"})
	var w struct{ Data job }
	if r.status == 200 {
		if err := json.Unmarshal(r.body, &w); err != nil {
			t.Fatalf("create: %v: %s", err, r.body)
		}
	}
	return r, w.Data
}

func getJob(t *testing.T, s *Server, token, id string) job {
	t.Helper()
	r := get(t, s, "/2/compliance/jobs/"+id, token)
	var w struct{ Data job }
	if r.status != 200 || json.Unmarshal(r.body, &w) != nil {
		t.Fatalf("get job %s: %d %s", id, r.status, r.body)
	}
	return w.Data
}

func upload(t *testing.T, u string, ids ...string) *resp {
	t.Helper()
	return doReq(t, "PUT", u, "", strings.NewReader(strings.Join(ids, "\n")+"\n"), map[string]string{"Content-Type": "text/plain"})
}

// A job goes created → in_progress at the upload → complete Delay later, on
// the server's clock; its results list the reported ids only, one JSON
// object per line.
func TestComplianceJobCompletesAfterItsDelay(t *testing.T) {
	clk := vclock()
	s := newSim(t, Options{Clock: clk, Compliance: ComplianceOptions{Delay: 5 * time.Minute}})
	app := s.IssueAppOnlyToken()
	if err := s.SetPostCompliance("1500000000000000001", "deleted"); err != nil {
		t.Fatal(err)
	}
	r, j := createJob(t, s, app, `{"type":"tweets","name":"nightly"}`)
	if r.status != 200 || j.Status != "created" || j.Name != "nightly" {
		t.Fatalf("create: %d %+v %s", r.status, j, r.body)
	}
	if !strings.HasPrefix(j.UploadURL, s.StorageURL()) || strings.HasPrefix(j.UploadURL, s.URL()) {
		t.Fatalf("upload URL %q is not on the storage host %s", j.UploadURL, s.StorageURL())
	}
	if r := upload(t, j.UploadURL, "1500000000000000001", "1500000000000000002"); r.status != 200 {
		t.Fatalf("upload: %d %s", r.status, r.body)
	}
	if got := getJob(t, s, app, j.ID).Status; got != "in_progress" {
		t.Fatalf("after the upload: %s", got)
	}
	if r := doReq(t, "GET", j.DownloadURL, "", nil, nil); r.status != 404 {
		t.Fatalf("results before completion: %d", r.status)
	}
	clk.Advance(5 * time.Minute)
	if got := getJob(t, s, app, j.ID).Status; got != "complete" {
		t.Fatalf("after the delay: %s", got)
	}
	dl := doReq(t, "GET", j.DownloadURL, "", nil, nil)
	lines := strings.Split(strings.TrimSpace(string(dl.body)), "\n")
	if dl.status != 200 || len(lines) != 1 {
		t.Fatalf("results: %d %q", dl.status, dl.body)
	}
	var line map[string]string
	if err := json.Unmarshal([]byte(lines[0]), &line); err != nil {
		t.Fatal(err)
	}
	if line["id"] != "1500000000000000001" || line["action"] != "delete" || line["reason"] != "deleted" ||
		line["redacted_at"] != t0.Format(simTime) || line["created_at"] == "" {
		t.Fatalf("result line %v", line)
	}
}

// Results carry every reason X documents; a post made visible again before
// the job completed is not reported, and one reported after it completed
// is not in its results.
func TestComplianceResultsCarryEveryReason(t *testing.T) {
	clk := vclock()
	s := newSim(t, Options{Clock: clk, Compliance: ComplianceOptions{Delay: time.Minute}})
	app := s.IssueAppOnlyToken()
	var ids []string // one per reason
	for i := range ComplianceReasons {
		ids = append(ids, fmt.Sprintf("16000000000000001%02d", i))
	}
	for i, reason := range ComplianceReasons {
		if err := s.SetPostCompliance(ids[i], reason); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.SetPostCompliance("1", "withheld"); err == nil {
		t.Fatal("an unknown reason was accepted")
	}
	_ = s.SetPostCompliance("1600000000000000006", "protected")
	clk.Advance(time.Second)
	_ = s.SetPostCompliance("1600000000000000006", "") // public again
	_, j := createJob(t, s, app, `{"type":"tweets"}`)
	upload(t, j.UploadURL, append(ids, "1600000000000000006", "1600000000000000007")...)
	clk.Advance(2 * time.Minute)
	_ = s.SetPostCompliance("1600000000000000007", "deleted") // after completion
	dl := doReq(t, "GET", j.DownloadURL, "", nil, nil)
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(dl.body)), "\n") {
		var line map[string]string
		if err := json.Unmarshal([]byte(l), &line); err != nil {
			t.Fatalf("%q: %v", l, err)
		}
		got[line["id"]] = line["reason"]
	}
	want := map[string]string{}
	for i, reason := range ComplianceReasons {
		want[ids[i]] = reason
	}
	if len(got) != len(want) {
		t.Fatalf("results %v, want %v", got, want)
	}
	for id, reason := range want {
		if got[id] != reason {
			t.Errorf("%s: reason %q, want %q", id, got[id], reason)
		}
	}
}

// The upload URL takes ids for 15 minutes after the job was created; after
// that the job is expired and its URL refused.
func TestComplianceUploadExpiresAfter15Minutes(t *testing.T) {
	clk := vclock()
	s := newSim(t, Options{Clock: clk})
	app := s.IssueAppOnlyToken()
	_, j := createJob(t, s, app, `{"type":"tweets"}`)
	clk.Advance(ComplianceUploadWindow)
	if r := upload(t, j.UploadURL, "1"); r.status != 400 || !strings.Contains(string(r.body), "ExpiredToken") {
		t.Fatalf("late upload: %d %s", r.status, r.body)
	}
	if got := getJob(t, s, app, j.ID).Status; got != "expired" {
		t.Fatalf("status %s, want expired", got)
	}
	// An expired job no longer holds the app's one job.
	if r, _ := createJob(t, s, app, `{"type":"tweets"}`); r.status != 200 {
		t.Fatalf("create after expiry: %d %s", r.status, r.body)
	}
}

// The results are served for a week after the job's creation; then the
// download URL refuses, and the job stays complete, as X documents it, or
// turns expired (ExpireComplete), which X does not document.
func TestComplianceDownloadExpiresAfterAWeek(t *testing.T) {
	for _, expire := range []bool{false, true} {
		clk := vclock()
		s := newSim(t, Options{Clock: clk, Compliance: ComplianceOptions{Delay: time.Minute, ExpireComplete: expire}})
		app := s.IssueAppOnlyToken()
		_, j := createJob(t, s, app, `{"type":"tweets"}`)
		upload(t, j.UploadURL, "1")
		clk.Advance(ComplianceDownloadWindow)
		if r := doReq(t, "GET", j.DownloadURL, "", nil, nil); r.status != 400 || !strings.Contains(string(r.body), "ExpiredToken") {
			t.Fatalf("download after a week: %d %s", r.status, r.body)
		}
		if got, want := getJob(t, s, app, j.ID).Status, map[bool]string{false: "complete", true: "expired"}[expire]; got != want {
			t.Fatalf("ExpireComplete %v: status %s, want %s", expire, got, want)
		}
	}
}

// A job created resumable takes Cloud Storage's resumable protocol only:
// a plain PUT of its ids is refused, and the job waits for them.
func TestComplianceResumableJobRefusesAPlainUpload(t *testing.T) {
	s := newSim(t, Options{Clock: vclock()})
	app := s.IssueAppOnlyToken()
	_, j := createJob(t, s, app, `{"type":"tweets","resumable":true}`)
	if r := upload(t, j.UploadURL, "1"); r.status != 403 || !strings.Contains(string(r.body), "x-goog-resumable") {
		t.Fatalf("plain upload: %d %s", r.status, r.body)
	}
	if got := getJob(t, s, app, j.ID).Status; got != "created" {
		t.Fatalf("status %s, want created", got)
	}
}

// FailComplianceJobs fails the next jobs uploaded, and so does a job given
// more ids than MaxIDs or a line that is not an id.
func TestComplianceFailedJobs(t *testing.T) {
	clk := vclock()
	s := newSim(t, Options{Clock: clk, Compliance: ComplianceOptions{Delay: time.Minute, MaxIDs: 2}})
	app := s.IssueAppOnlyToken()
	s.FailComplianceJobs(1)
	for _, ids := range [][]string{{"1"}, {"1", "2", "3"}, {"1", "x"}} {
		_, j := createJob(t, s, app, `{"type":"tweets"}`)
		upload(t, j.UploadURL, ids...)
		clk.Advance(time.Minute)
		if got := getJob(t, s, app, j.ID).Status; got != "failed" {
			t.Errorf("ids %v: status %s, want failed", ids, got)
		}
		if r := doReq(t, "GET", j.DownloadURL, "", nil, nil); r.status != 404 {
			t.Errorf("results of a failed job: %d", r.status)
		}
	}
	_, j := createJob(t, s, app, `{"type":"tweets"}`)
	upload(t, j.UploadURL, "1", "2")
	clk.Advance(time.Minute)
	if got := getJob(t, s, app, j.ID).Status; got != "complete" {
		t.Errorf("status %s, want complete", got)
	}
}

// One job of a type at a time per app: a create while one is created or in
// progress is refused (409 by default, or 400), one of the other type and
// another app's are not.
func TestComplianceJobsRunOneAtATime(t *testing.T) {
	for _, status := range []int{409, 400} {
		clk := vclock()
		s := newSim(t, Options{Clock: clk, Compliance: ComplianceOptions{BusyStatus: status}})
		s.RegisterClient("other", "secret")
		app, other := s.IssueAppOnlyToken(), ""
		s.mu.Lock()
		other = s.newTokenLocked(kindApp, "", "other", nil, 0)
		s.mu.Unlock()
		_, j := createJob(t, s, app, `{"type":"tweets"}`)
		if r, _ := createJob(t, s, app, `{"type":"tweets"}`); r.status != status || !strings.Contains(string(r.body), j.ID) {
			t.Fatalf("second job while created: %d %s", r.status, r.body)
		}
		upload(t, j.UploadURL, "1")
		if r, _ := createJob(t, s, app, `{"type":"tweets"}`); r.status != status {
			t.Fatalf("second job while in progress: %d %s", r.status, r.body)
		}
		if r, _ := createJob(t, s, app, `{"type":"users"}`); r.status != 200 {
			t.Fatalf("a users job: %d %s", r.status, r.body)
		}
		if r, _ := createJob(t, s, other, `{"type":"tweets"}`); r.status != 200 {
			t.Fatalf("another app's job: %d %s", r.status, r.body)
		}
		clk.Advance(2 * time.Minute)
		if r, _ := createJob(t, s, app, `{"type":"tweets"}`); r.status != 200 {
			t.Fatalf("after completion: %d %s", r.status, r.body)
		}
	}
}

// Only app-only bearer tokens work: a user's token gets X's 403
// "Unsupported Authentication" (user context forbidden), none or a bad one
// 401. Every answer carries the app's rate-limit headers.
func TestComplianceEndpointsRefuseUserTokens(t *testing.T) {
	s, user := newSimUser(t, Options{Clock: vclock()})
	app := s.IssueAppOnlyToken()
	for _, path := range []string{"/2/compliance/jobs?type=tweets", "/2/compliance/jobs/1"} {
		r := get(t, s, path, user)
		if r.status != 403 || !strings.Contains(string(r.body), "Unsupported Authentication") ||
			!strings.Contains(string(r.body), "OAuth 2.0 Application-Only") {
			t.Errorf("%s with a user token: %d %s", path, r.status, r.body)
		}
		if r := get(t, s, path, "nope"); r.status != 401 {
			t.Errorf("%s with a bad token: %d", path, r.status)
		}
		if r := get(t, s, path, app); r.status != 200 || r.hdr.Get("X-Rate-Limit-Limit") != "150" {
			t.Errorf("%s with the app's token: %d %v %s", path, r.status, r.hdr, r.body)
		}
	}
	if r, _ := createJob(t, s, user, `{"type":"tweets"}`); r.status != 403 {
		t.Errorf("create with a user token: %d", r.status)
	}
	if n := len(s.ComplianceJobs()); n != 0 {
		t.Errorf("%d jobs created with a user token", n)
	}
}

// 150 requests per 15 minutes per app and operation, then 429.
func TestComplianceRateLimitIsPerApp(t *testing.T) {
	clk := vclock()
	s := newSim(t, Options{Clock: clk})
	app := s.IssueAppOnlyToken()
	for i := 1; i <= ComplianceAppLimit; i++ {
		if r := get(t, s, "/2/compliance/jobs?type=tweets", app); r.status != 200 {
			t.Fatalf("request %d: %d", i, r.status)
		}
	}
	if r := get(t, s, "/2/compliance/jobs?type=tweets", app); r.status != 429 {
		t.Fatalf("request 151: %d", r.status)
	}
	if r := get(t, s, "/2/compliance/jobs/1", app); r.status != 200 {
		t.Fatalf("another operation: %d", r.status)
	}
	clk.Advance(15 * time.Minute)
	if r := get(t, s, "/2/compliance/jobs?type=tweets", app); r.status != 200 {
		t.Fatalf("after the window: %d", r.status)
	}
}

// The storage URLs are signed: a request with the app's Authorization
// header, a wrong signature or another content type is refused.
func TestComplianceStorageRefusesTheBearerToken(t *testing.T) {
	s := newSim(t, Options{Clock: vclock()})
	app := s.IssueAppOnlyToken()
	_, j := createJob(t, s, app, `{"type":"tweets"}`)
	withToken := doReq(t, "PUT", j.UploadURL, app, strings.NewReader("1\n"), map[string]string{"Content-Type": "text/plain"})
	if withToken.status != 400 || !strings.Contains(withToken.hdr.Get("Content-Type"), "xml") {
		t.Errorf("upload with the bearer token: %d %s", withToken.status, withToken.body)
	}
	forged := strings.Replace(j.UploadURL, "X-Sim-Signature=", "X-Sim-Signature=x", 1)
	if r := upload(t, forged, "1"); r.status != 403 {
		t.Errorf("forged signature: %d", r.status)
	}
	if r := doReq(t, "PUT", j.UploadURL, "", strings.NewReader("1\n"), map[string]string{"Content-Type": "application/json"}); r.status != 400 {
		t.Errorf("JSON content type: %d", r.status)
	}
	if got := s.ComplianceJobs()[0]; got.Status != "created" || got.Uploads != 0 {
		t.Errorf("a refused upload started the job: %+v", got)
	}
	if r := get(t, s, "/compliance/"+j.ID+"/ids.txt", ""); r.status != 404 {
		t.Errorf("the API host serves storage paths: %d", r.status)
	}
}

// Lookups: an unknown job (or another app's) is a 200 with only errors;
// the list is newest first, filtered by type and status.
func TestComplianceJobLookups(t *testing.T) {
	clk := vclock()
	s := newSim(t, Options{Clock: clk, Compliance: ComplianceOptions{Delay: time.Minute}})
	app := s.IssueAppOnlyToken()
	r := get(t, s, "/2/compliance/jobs/123", app)
	var nf struct {
		Data   any
		Errors []map[string]any
	}
	if err := json.Unmarshal(r.body, &nf); err != nil || r.status != 200 || nf.Data != nil || len(nf.Errors) != 1 || nf.Errors[0]["title"] != "Not Found Error" {
		t.Fatalf("unknown job: %d %s", r.status, r.body)
	}
	if r := get(t, s, "/2/compliance/jobs/abc", app); r.status != 400 {
		t.Fatalf("bad id: %d", r.status)
	}
	_, first := createJob(t, s, app, `{"type":"tweets"}`)
	upload(t, first.UploadURL, "1")
	clk.Advance(time.Minute)
	_, second := createJob(t, s, app, `{"type":"tweets"}`)
	list := func(q string) []string {
		r := get(t, s, "/2/compliance/jobs?"+q, app)
		var w struct {
			Data []job
			Meta struct {
				ResultCount int `json:"result_count"`
			}
		}
		if err := json.Unmarshal(r.body, &w); err != nil || r.status != 200 || w.Meta.ResultCount != len(w.Data) {
			t.Fatalf("list %s: %d %s", q, r.status, r.body)
		}
		var ids []string
		for _, j := range w.Data {
			ids = append(ids, j.ID)
		}
		return ids
	}
	if got := list("type=tweets"); !slices.Equal(got, []string{second.ID, first.ID}) {
		t.Errorf("all: %v", got)
	}
	if got := list("type=tweets&status=complete"); !slices.Equal(got, []string{first.ID}) {
		t.Errorf("complete: %v", got)
	}
	if got := list("type=users"); len(got) != 0 {
		t.Errorf("users: %v", got)
	}
	for _, q := range []string{"", "type=posts", "type=tweets&status=done", "type=tweets&max_results=5"} {
		if r := get(t, s, "/2/compliance/jobs?"+q, app); r.status != 400 {
			t.Errorf("list %q: %d", q, r.status)
		}
	}
	for _, body := range []string{`{}`, `{"type":"posts"}`, `{"type":"tweets","extra":1}`, `{"type":"tweets","name":"` + strings.Repeat("n", 65) + `"}`, `not json`} {
		if r, _ := createJob(t, s, app, body); r.status != 400 {
			t.Errorf("create %s: %d", body, r.status)
		}
	}
}

// DeletePost removes the post from every list and folder, and reports it.
func TestDeletePostLeavesListsAndIsReported(t *testing.T) {
	clk := vclock()
	s := newSim(t, Options{Clock: clk, Compliance: ComplianceOptions{Delay: time.Minute}})
	ids := s.SeedBookmarks("1", 3)
	s.AddToFolder("1", "9", ids[1])
	if err := s.DeletePost(ids[1]); err != nil {
		t.Fatal(err)
	}
	if got := s.Bookmarks("1"); slices.Contains(got, ids[1]) || len(got) != 2 {
		t.Errorf("bookmarks after the delete: %v", got)
	}
	if got := s.FolderPosts("1", "9"); len(got) != 0 {
		t.Errorf("folder after the delete: %v", got)
	}
	app := s.IssueAppOnlyToken()
	_, j := createJob(t, s, app, `{"type":"tweets"}`)
	upload(t, j.UploadURL, ids...)
	clk.Advance(time.Minute)
	dl := doReq(t, "GET", j.DownloadURL, "", nil, nil)
	if !strings.Contains(string(dl.body), `"id":"`+ids[1]+`"`) || strings.Count(string(dl.body), "\n") != 1 {
		t.Errorf("results: %s", dl.body)
	}
}
