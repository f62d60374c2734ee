package client

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"time"

	"github.com/cq-source-x/cq-source-x/billing"
)

// Batch compliance jobs (/2/compliance/jobs): a job takes post ids at its
// upload URL and reports those X asks to be changed at its download URL
// (signed URLs of X's storage). Its operations need the app-only bearer
// token and share 150 requests per 15 minutes per app; X bills none.

// Operations of the compliance jobs.
const (
	OpCreateComplianceJob       Operation = "compliance_create_job" // POST /2/compliance/jobs
	OpGetComplianceJob          Operation = "compliance_get_job"    // GET /2/compliance/jobs/:id
	OpListComplianceJobs        Operation = "compliance_list_jobs"  // GET /2/compliance/jobs
	OpUploadComplianceIDs       Operation = "compliance_upload"     // PUT the job's upload_url
	OpDownloadComplianceResults Operation = "compliance_download"   // GET the job's download_url
)

const complianceLimit = 150

// appOnly reports whether the operation needs an app-only bearer token.
func appOnly(op Operation) bool {
	return op == OpCreateComplianceJob || op == OpGetComplianceJob || op == OpListComplianceJobs
}

// Compliance job types and statuses.
const (
	ComplianceTweets = "tweets"
	ComplianceUsers  = "users"

	JobCreated    = "created"     // waiting for its ids (upload within 15 minutes)
	JobInProgress = "in_progress" // ids uploaded, being checked
	JobComplete   = "complete"    // results at the download URL (for a week)
	JobFailed     = "failed"
	JobExpired    = "expired" // not uploaded in time, or its results are gone
)

// MaxComplianceJobName is the longest job name the API accepts.
const MaxComplianceJobName = 64

// ComplianceJob is a batch compliance job. Its URLs are signed: whoever has
// them can upload to or read the job, so keep them out of logs.
type ComplianceJob struct {
	ID                string    `json:"id"`
	Type              string    `json:"type"`
	Name              string    `json:"name,omitempty"`
	Status            string    `json:"status"`
	CreatedAt         time.Time `json:"created_at"`
	UploadURL         string    `json:"upload_url"`
	UploadExpiresAt   time.Time `json:"upload_expires_at"`
	DownloadURL       string    `json:"download_url"`
	DownloadExpiresAt time.Time `json:"download_expires_at"`
}

// Active reports whether the job is the app's one job of its type running.
func (j *ComplianceJob) Active() bool { return j.Status == JobCreated || j.Status == JobInProgress }

// CreateComplianceJobOptions are the body of POST /2/compliance/jobs. (X's
// `resumable` is not asked for: its upload URL then takes Cloud Storage's
// resumable protocol only, and a job's ids are a few MB.)
type CreateComplianceJobOptions struct {
	Type string `json:"type"`           // ComplianceTweets or ComplianceUsers
	Name string `json:"name,omitempty"` // optional, at most MaxComplianceJobName characters
}

// ComplianceResult is one line of a job's results.
type ComplianceResult struct {
	ID         string     `json:"id"`
	Action     string     `json:"action"` // "delete" for every reason X documents
	Reason     string     `json:"reason"` // deleted, bounced, protected, suspended, scrub_geo, deactivated
	CreatedAt  *time.Time `json:"created_at,omitempty"`
	RedactedAt *time.Time `json:"redacted_at,omitempty"`
}

// NotFoundError is a job the API does not know (any more).
type NotFoundError struct {
	Operation Operation
	ID        string
	Detail    string
}

func (e *NotFoundError) Error() string {
	s := fmt.Sprintf("%s%s: job %s not found", errPrefix, e.Operation, e.ID)
	if e.Detail != "" {
		s += ": " + oneLine(e.Detail, 200)
	}
	return s
}

func (e *NotFoundError) Is(target error) bool { return target == ErrNotFound }

// WithStorageClient sets the HTTP client for the jobs' upload and download
// URLs, which must not add the app's Authorization header.
func WithStorageClient(hc *http.Client) Option {
	return option(func(c *Client) { c.storage = noRedirects(hc) }, hc == nil, "client: nil storage client")
}

// CreateComplianceJob creates a job: POST /2/compliance/jobs. X runs one job
// of a type per app at a time.
func (c *Client) CreateComplianceJob(ctx context.Context, opts CreateComplianceJobOptions) (*ComplianceJob, *Response, error) {
	const op = OpCreateComplianceJob
	if err := validJobType(op, opts.Type); err != nil {
		return nil, nil, err
	}
	if len(opts.Name) > MaxComplianceJobName {
		return nil, nil, newInputError(op, "name", opts.Name, fmt.Sprintf("must be at most %d characters", MaxComplianceJobName))
	}
	body, _ := json.Marshal(opts) // two strings: it cannot fail
	return send(ctx, c, &call{op: op, method: http.MethodPost, path: "/2/compliance/jobs", body: body}, unbilled(decodeJob))
}

// GetComplianceJob reads a job: GET /2/compliance/jobs/:id. A job the API
// does not know is a *NotFoundError.
func (c *Client) GetComplianceJob(ctx context.Context, id string) (*ComplianceJob, *Response, error) {
	const op = OpGetComplianceJob
	if err := validID(op, "job id", id); err != nil {
		return nil, nil, err
	}
	job, resp, err := send(ctx, c, &call{op: op, method: http.MethodGet, path: "/2/compliance/jobs/" + id}, unbilled(decodeJob))
	var eo *ErrorsOnlyError
	var ae *APIError
	switch {
	case errors.As(err, &eo): // X's answer to a lookup of what does not exist
		return nil, resp, &NotFoundError{Operation: op, ID: id, Detail: cmp.Or(eo.Errors[0].Detail, eo.Errors[0].Title)}
	case errors.As(err, &ae) && ae.Status == http.StatusNotFound:
		return nil, resp, &NotFoundError{Operation: op, ID: id, Detail: ae.message()}
	}
	return job, resp, err
}

// ListComplianceJobs lists the app's jobs of a type, optionally of one
// status: GET /2/compliance/jobs?type=...&status=....
func (c *Client) ListComplianceJobs(ctx context.Context, jobType, status string) ([]ComplianceJob, *Response, error) {
	const op = OpListComplianceJobs
	if err := validJobType(op, jobType); err != nil {
		return nil, nil, err
	}
	q := url.Values{"type": {jobType}}
	if status != "" {
		if !slices.Contains([]string{JobCreated, JobInProgress, JobComplete, JobFailed}, status) { // X's description lists no other
			return nil, nil, newInputError(op, "status", status, "must be created, in_progress, complete or failed")
		}
		q.Set("status", status)
	}
	return send(ctx, c, &call{op: op, method: http.MethodGet, path: "/2/compliance/jobs", query: q}, unbilled(decodeJobs))
}

// UploadComplianceIDs uploads a job's ids, one per line, to its upload URL.
// Uploading again replaces the file.
func (c *Client) UploadComplianceIDs(ctx context.Context, job *ComplianceJob, ids []string) (*Response, error) {
	const op = OpUploadComplianceIDs
	if job == nil {
		return nil, newInputError(op, "job", "", "is nil")
	}
	var body []byte
	for _, id := range ids {
		if err := validID(op, "post id", id); err != nil {
			return nil, err
		}
		body = append(append(body, id...), '\n')
	}
	resp, err := c.storageCall(ctx, &call{op: op, method: http.MethodPut, body: body, contentType: "text/plain",
		decode: func([]byte) (billing.Billed, error) { return billing.Billed{}, nil }}, "upload_url", job.UploadURL)
	return resp, storageHint(err, "the upload URL takes the ids for 15 minutes after the job was created; a job not uploaded by then expires")
}

// DownloadComplianceResults passes each result of a complete job to each,
// as its lines are read; a retried attempt reads the file again. A line
// that is not a result with an id is a *MalformedResponseError naming it.
func (c *Client) DownloadComplianceResults(ctx context.Context, job *ComplianceJob, each func(ComplianceResult)) (*Response, error) {
	const op = OpDownloadComplianceResults
	if job == nil {
		return nil, newInputError(op, "job", "", "is nil")
	}
	resp, err := c.storageCall(ctx, &call{op: op, method: http.MethodGet, stream: func(body io.Reader) error {
		return readComplianceResults(body, each)
	}}, "download_url", job.DownloadURL)
	return resp, storageHint(err, "the download URL serves the results of a complete job for a week after it was created")
}

// MaxComplianceResultLine is the longest line of a job's results read: X's
// lines (an id, an action, a reason and two dates) are about 150 bytes.
const MaxComplianceResultLine = 64 << 10

// storageCall sends cl to a job's storage URL as given (its signed query is
// not re-encoded), on the storage client, by the client's other rules.
func (c *Client) storageCall(ctx context.Context, cl *call, param, rawURL string) (*Response, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil {
		// The value is a signed URL: InputError leaves long values out.
		return nil, newInputError(cl.op, param, rawURL, "must be the absolute http(s) URL the API gave for the job")
	}
	if _, err := checkBaseURL(u.Scheme + "://" + u.Host); err != nil {
		return nil, err
	}
	cl.storageURL = rawURL
	return c.do(ctx, cl)
}

// storageHint adds what the URLs' lifetimes are to a storage refusal.
func storageHint(err error, hint string) error {
	var ae *APIError
	if errors.As(err, &ae) && ae.Hint == "" && ae.Status >= 400 && ae.Status < 500 {
		ae.Hint = hint
	}
	return err
}

func validJobType(op Operation, t string) error {
	if t != ComplianceTweets && t != ComplianceUsers {
		return newInputError(op, "type", t, `must be "tweets" or "users"`)
	}
	return nil
}

func decodeJob(body []byte) (*ComplianceJob, error) {
	job, err := decodeData(body, func(j *ComplianceJob) error {
		if err := badID("data.id", j.ID); err != nil || j.Status != "" {
			return err
		}
		return errors.New("no data.status")
	})
	if err != nil {
		return nil, err
	}
	return job, nil
}

func decodeJobs(body []byte) ([]ComplianceJob, error) {
	var w struct {
		Data []ComplianceJob `json:"data"`
	}
	err := decodeSmall(body, &w, func() error {
		if i := slices.IndexFunc(w.Data, func(j ComplianceJob) bool { return j.ID == "" }); i >= 0 {
			return fmt.Errorf("no data[%d].id", i)
		}
		return nil
	})
	return w.Data, err
}

// readComplianceResults reads newline-delimited JSON results, skipping blank lines.
func readComplianceResults(body io.Reader, each func(ComplianceResult)) error {
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 4096), MaxComplianceResultLine)
	n := 0
	for sc.Scan() {
		n++
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var r ComplianceResult
		if err := unmarshalObject(validText(line), &r); err != nil {
			return fmt.Errorf("results line %d: %w", n, err)
		}
		if err := badID("id", r.ID); err != nil {
			return fmt.Errorf("results line %d: %w", n, err)
		}
		each(r)
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("results line %d is longer than %d bytes", n+1, MaxComplianceResultLine)
	}
	return sc.Err()
}
