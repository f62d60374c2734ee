package client

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

const jobJSON = `{"data":{"id":"1425543269983784962","type":"tweets","name":"n","status":"created","resumable":false,` +
	`"created_at":"2021-08-11T19:42:55.000Z","upload_url":"UP","upload_expires_at":"2021-08-11T19:57:55.000Z",` +
	`"download_url":"DOWN","download_expires_at":"2021-08-18T19:42:55.000Z"}}`

// newComplianceClient returns a client of api with the token "app" and a
// storage server whose handler is set per test.
func newComplianceClient(t *testing.T, api, storage *testServer) *Client {
	t.Helper()
	c, _ := newTestClient(t, api, StaticTokenWithTransport("app", api.Client().Transport),
		WithStorageClient(storage.Client()))
	return c
}

func jobOn(storage *testServer) string {
	body := strings.Replace(jobJSON, "UP", storage.URL+"/b/ids.txt?X-Goog-Signature=a%2Fb&X-Goog-Date=20210811T194255Z", 1)
	return strings.Replace(body, "DOWN", storage.URL+"/b/results.json?X-Goog-Signature=c%2Bd", 1)
}

// POST /2/compliance/jobs sends {"type","name"} as JSON with the app's
// token, and decodes the job.
func TestCreateComplianceJobSendsTypeAndName(t *testing.T) {
	storage := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {})
	api := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, jobOn(storage)) })
	c := newComplianceClient(t, api, storage)
	job, _, err := c.CreateComplianceJob(context.Background(), CreateComplianceJobOptions{Type: ComplianceTweets, Name: "nightly"})
	if err != nil {
		t.Fatal(err)
	}
	req := api.Requests()[0]
	if req.Method != "POST" || req.Path != "/2/compliance/jobs" || req.Body != `{"type":"tweets","name":"nightly"}` ||
		req.Header.Get("Authorization") != "Bearer app" || req.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("request %+v", req)
	}
	if job.ID != "1425543269983784962" || job.Status != JobCreated || !job.Active() ||
		job.UploadExpiresAt.Sub(job.CreatedAt).Minutes() != 15 {
		t.Fatalf("job %+v", job)
	}
	for _, bad := range []CreateComplianceJobOptions{{Type: "posts"}, {Type: ComplianceTweets, Name: strings.Repeat("n", 65)}} {
		if _, _, err := c.CreateComplianceJob(context.Background(), bad); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if api.Count() != 1 {
		t.Errorf("invalid input was sent")
	}
}

// The upload and download go to the job's URLs, query exactly as given,
// without the app's token; the upload is text/plain, one id per line. The
// storage requests are retried and metered like the others.
func TestComplianceStorageGetsTheJobURLsWithoutTheToken(t *testing.T) {
	storage := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch {
		case n == 1:
			writeJSON(w, 503, bodyServer)
		case r.Method == "PUT":
			w.WriteHeader(200)
		default:
			writeJSON(w, 200, `{"id":"1","action":"delete","created_at":"2021-08-07T18:34:13.000Z","redacted_at":"2021-08-10T16:20:47.209Z","reason":"deleted"}`+"\n\n"+
				`{"id":"2","action":"delete","reason":"suspended"}`+"\n")
		}
	})
	api := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, jobOn(storage)) })
	c := newComplianceClient(t, api, storage)
	ctx := context.Background()
	job, _, err := c.GetComplianceJob(ctx, "1425543269983784962")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.UploadComplianceIDs(ctx, job, []string{"1", "2", "3"}); err != nil {
		t.Fatal(err)
	}
	var results []ComplianceResult
	if _, err := c.DownloadComplianceResults(ctx, job, func(r ComplianceResult) { results = append(results, r) }); err != nil {
		t.Fatal(err)
	}
	reqs := storage.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d storage requests, want 3 (a 503 retried)", len(reqs))
	}
	for _, r := range reqs {
		if r.Header.Get("Authorization") != "" {
			t.Errorf("%s %s carried an Authorization header", r.Method, r.Path)
		}
	}
	put := reqs[1]
	if put.Method != "PUT" || put.Path != "/b/ids.txt" || put.Body != "1\n2\n3\n" || put.Header.Get("Content-Type") != "text/plain" ||
		put.Query["X-Goog-Signature"][0] != "a/b" {
		t.Errorf("upload %+v", put)
	}
	if len(results) != 2 || results[0].Reason != "deleted" || results[0].RedactedAt == nil || results[0].RedactedAt.Nanosecond() != 209e6 ||
		results[1].ID != "2" || results[1].CreatedAt != nil {
		t.Errorf("results %+v", results)
	}
	if api.Count() != 1 {
		t.Errorf("storage requests reached the API")
	}
	u := c.Meter().Usage("", OpUploadComplianceIDs)
	if u.Requests != 2 || u.OK != 1 || u.Retries != 1 || c.Meter().Usage("", OpDownloadComplianceResults).OK != 1 {
		t.Errorf("meter %+v", c.Meter().Snapshot())
	}
}

// A job's results are read as a stream, line by line, whatever their size:
// a file of 200,000 lines, past the cap of a response body, is read whole;
// one cut short is read again from its first line; a line longer than
// MaxComplianceResultLine is an error naming it.
func TestComplianceResultsOfAnySizeAreRead(t *testing.T) {
	var body string
	storage := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 { // cut short after a line and a half
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(200)
			_, _ = w.Write([]byte(body[:(strings.IndexByte(body, '\n')+1)*3/2]))
			return
		}
		writeJSON(w, 200, body)
	})
	c := newComplianceClient(t, newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {}), storage)
	job := &ComplianceJob{ID: "1", DownloadURL: storage.URL + "/r"}
	var b strings.Builder
	for i := range 200_000 {
		fmt.Fprintf(&b, `{"id":"%d","action":"delete","created_at":"2021-08-07T18:34:13.000Z","redacted_at":"2021-08-10T16:20:47.209Z","reason":"deleted"}`+"\n", 1_400_000_000_000_000_000+i)
	}
	body = b.String()
	if len(body) <= DefaultMaxResponseBytes {
		t.Fatalf("the file is %d bytes, not past the cap", len(body))
	}
	n, last := 0, ""
	resp, err := c.DownloadComplianceResults(context.Background(), job, func(r ComplianceResult) { n, last = n+1, r.ID })
	if err != nil || resp.Attempts != 2 || n != 200_001 || last != "1400000000000199999" {
		t.Fatalf("%d attempts read %d results, the last %s: %v; want the first line, then the 200,000 of the second attempt", resp.Attempts, n, last, err)
	}
	body = `{"id":"1","action":"delete","reason":"deleted"}` + "\n" + `{"id":"2","reason":"` + strings.Repeat("x", MaxComplianceResultLine) + `"}`
	_, err = c.DownloadComplianceResults(context.Background(), job, func(ComplianceResult) {})
	if !errors.Is(err, ErrMalformedResponse) || !strings.Contains(err.Error(), "line 2 is longer than") {
		t.Errorf("a line past the cap: %v", err)
	}
}

// A user's token on the app-only endpoints: X's 403 "Unsupported
// Authentication" is ErrUserContextToken (not ErrAppOnlyToken) and says
// where the app's bearer token is; a 401 says the bearer token is wrong.
func TestUserTokenOnComplianceSaysAnAppOnlyTokenIsNeeded(t *testing.T) {
	api := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			writeJSON(w, 403, `{"title":"Unsupported Authentication","detail":"Authenticating with OAuth 2.0 User Context is forbidden for this endpoint.  Supported authentication types are [OAuth 2.0 Application-Only].","type":"https://api.twitter.com/2/problems/unsupported-authentication","status":403}`)
			return
		}
		writeJSON(w, 401, bodyUnauthorized)
	})
	c := newComplianceClient(t, api, api)
	_, _, err := c.ListComplianceJobs(context.Background(), ComplianceTweets, "")
	var ae *APIError
	if !errors.Is(err, ErrUserContextToken) || errors.Is(err, ErrAppOnlyToken) || !errors.As(err, &ae) || ae.Hint != HintUserContextToken ||
		!strings.Contains(err.Error(), "Keys and tokens") {
		t.Fatalf("403: %v", err)
	}
	_, _, err = c.ListComplianceJobs(context.Background(), ComplianceTweets, "")
	if !errors.Is(err, ErrUnauthorized) || !errors.As(err, &ae) || ae.Hint != HintAppUnauthorized {
		t.Fatalf("401: %v", err)
	}
	if api.Count() != 2 {
		t.Errorf("%d requests: refusals were retried", api.Count())
	}
}

// A job the API does not know: X's lookups answer a 200 with only errors;
// a 404 is taken the same way.
func TestGetComplianceJobNotFoundEitherWay(t *testing.T) {
	api := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			writeJSON(w, 200, `{"errors":[{"value":"12","detail":"Could not find compliance job with id: [12].","title":"Not Found Error","resource_type":"compliance_job","parameter":"id","resource_id":"12","type":"https://api.x.com/2/problems/resource-not-found"}]}`)
			return
		}
		writeJSON(w, 404, bodyNotFound)
	})
	c := newComplianceClient(t, api, api)
	for i := range 2 {
		_, _, err := c.GetComplianceJob(context.Background(), "12")
		var nf *NotFoundError
		if !errors.Is(err, ErrNotFound) || !errors.As(err, &nf) || nf.ID != "12" {
			t.Errorf("answer %d: %v", i+1, err)
		}
	}
	if _, _, err := c.GetComplianceJob(context.Background(), "12a"); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("bad id: %v", err)
	}
}

// The compliance operations have the app's 150 requests per window, kept
// under the user ID "".
func TestComplianceRequestsAreBudgetedPerApp(t *testing.T) {
	api := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, `{"meta":{"result_count":0}}`) })
	c, _ := newTestClient(t, api, nil, WithRateLimitWaitCap(0))
	ctx := context.Background()
	for i := range 150 {
		if jobs, _, err := c.ListComplianceJobs(ctx, ComplianceTweets, JobInProgress); err != nil || jobs != nil {
			t.Fatalf("request %d: %v %v", i+1, jobs, err)
		}
	}
	_, _, err := c.ListComplianceJobs(ctx, ComplianceTweets, "")
	var rl *RateLimitError
	if !errors.As(err, &rl) || !rl.Budget || api.Count() != 150 {
		t.Fatalf("request 151: %v (%d sent)", err, api.Count())
	}
	if b := c.Budget("", OpListComplianceJobs); b.Limit != 150 || b.Remaining != 0 {
		t.Errorf("budget %+v", b)
	}
	if _, _, err := c.ListComplianceJobs(ctx, ComplianceTweets, "done"); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("bad status: %v", err)
	}
}

// Results that are not NDJSON objects with an id are an error naming the
// line; a URL that is not absolute, or ids that are not ids, are refused
// before anything is sent, and the signed URL is not repeated.
func TestComplianceBadResultsAndInputs(t *testing.T) {
	var body string
	storage := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, body) })
	api := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {})
	c := newComplianceClient(t, api, storage)
	job := &ComplianceJob{ID: "1", UploadURL: "/relative?X-Goog-Signature=secretsecretsecretsecret", DownloadURL: storage.URL + "/r"}
	for _, b := range []string{`{"id":"1"}` + "\n" + `{"action":"delete"}`, `{"id":"1"}` + "\n[1]"} {
		body = b
		_, err := c.DownloadComplianceResults(context.Background(), job, func(ComplianceResult) {})
		if !errors.Is(err, ErrMalformedResponse) || !strings.Contains(err.Error(), "line 2") {
			t.Errorf("%q: %v", b, err)
		}
	}
	_, err := c.UploadComplianceIDs(context.Background(), job, []string{"1"})
	if !errors.Is(err, ErrInvalidInput) || strings.Contains(err.Error(), "secret") {
		t.Errorf("relative URL: %v", err)
	}
	job.UploadURL = storage.URL + "/u"
	if _, err := c.UploadComplianceIDs(context.Background(), job, []string{"1", "x1"}); !errors.Is(err, ErrInvalidInput) {
		t.Errorf("bad id: %v", err)
	}
	if n := storage.Count(); n != 2 {
		t.Errorf("%d storage requests, want the 2 downloads", n)
	}
}

// Whether a server was ever reached is judged for the storage host alone:
// an answer from the API does not give a storage host that refuses every
// connection the retry budget (it is given up on after MaxAttempts, as a
// wrong base URL is), and a storage host that has answered is retried
// through refused connections within the budget.
func TestComplianceStorageIsJudgedReachedForItsOwnHost(t *testing.T) {
	var storage *outageServer
	storage = newOutageServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if n == 1 {
			storage.Stop() // answers this one, then refuses connections
			writeJSON(w, 503, bodyServer)
			return
		}
		w.WriteHeader(200)
	})
	job := strings.NewReplacer("UP", storage.URL+"/up", "DOWN", storage.URL+"/down").Replace(jobJSON)
	api := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, job) })
	clk := &hookClock{recClock: newRecClock()}
	c, _ := newTestClient(t, api, StaticTokenWithTransport("app", api.Client().Transport),
		WithStorageClient(noKeepAlive()), WithClock(clk), WithRetryPolicy(RetryPolicy{Budget: 5 * time.Minute, MaxAttempts: 3}))
	ctx := context.Background()

	storage.Stop()
	j, _, err := c.GetComplianceJob(ctx, "1425543269983784962")
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.UploadComplianceIDs(ctx, j, []string{"1"})
	if err == nil || resp.Attempts != 3 || !strings.Contains(err.Error(), "connection refused") {
		t.Fatalf("a storage host never reached, after the API answered: %d attempts, err %v; want 3 and refused", resp.Attempts, err)
	}

	storage.Start()
	const refused = 5 // more than MaxAttempts
	restart := len(clk.Sleeps()) + 1 + refused
	clk.before = func(n int) {
		if n == restart {
			storage.Start()
		}
	}
	resp, err = c.UploadComplianceIDs(ctx, j, []string{"1"})
	if err != nil || resp.Attempts != 1+refused+1 || storage.Count() != 2 {
		t.Errorf("a storage host that answered: %d attempts, %d answered, err %v; want %d and 2", resp.Attempts, storage.Count(), err, 1+refused+1)
	}
}
