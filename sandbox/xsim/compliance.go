package xsim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Batch compliance jobs (X API v2, /2/compliance/jobs), as X documents them:
//
//   - POST /2/compliance/jobs {"type":"tweets"|"users","name","resumable"}
//     creates a job with status "created" and two signed URLs on a separate
//     storage host (as X's are on Google Cloud Storage): the upload URL,
//     valid 15 minutes, and the download URL, valid a week from creation.
//   - PUT upload_url (Content-Type: text/plain) with one id per line starts
//     the job ("in_progress"); it is "complete" Delay later on the server's
//     clock, or "failed" (FailComplianceJobs, or more ids than MaxIDs, or a
//     line that is not an id). A job not uploaded in time is "expired". A
//     complete job stays "complete" once its download URL has expired (X
//     documents only that the URL expires, and "expired" as a job that
//     expired before completion), unless ExpireComplete.
//   - A job created with "resumable": true takes Cloud Storage's resumable
//     upload only (its URL is signed for x-goog-resumable): a plain PUT is
//     refused (403), and not modelled further.
//   - GET download_url serves the results of a complete job: one JSON line
//     per id whose post was deleted, suspended, protected, bounced or
//     geo-scrubbed (SetPostCompliance, DeletePost) before the job completed;
//     for a job of type users, per id whose account was deleted, suspended,
//     deactivated or made protected (SetUserCompliance, SuspendUser).
//   - GET /2/compliance/jobs/:id and GET /2/compliance/jobs?type=&status=
//     read jobs. An id the app does not own is a 200 with only errors (X's
//     lookups answer so).
//   - Only app-only bearer tokens work: a user's token gets 403
//     "Unsupported Authentication", a bad one 401. 150 requests per 15
//     minutes per app and operation. One job of a type at a time per app: a
//     create while one is created or in progress is refused (BusyStatus).
//   - The storage URLs refuse a request that carries an Authorization header
//     (a signed URL is its own credential), a wrong signature (403) and an
//     expired URL (400 ExpiredToken), with XML bodies as Cloud Storage does.
//
// The operations are metered under the user id "" (they are the app's).

// Operation names of the compliance jobs.
const (
	OpCreateComplianceJob = "compliance_create_job"
	OpGetComplianceJob    = "compliance_get_job"
	OpListComplianceJobs  = "compliance_list_jobs"
	OpComplianceUpload    = "compliance_upload"
	OpComplianceDownload  = "compliance_download"
)

// ComplianceAppLimit is the per-app limit of each compliance API operation
// per window (override with Options.AppLimits).
const ComplianceAppLimit = 150

// Upload and download URL lifetimes.
const (
	ComplianceUploadWindow   = 15 * time.Minute
	ComplianceDownloadWindow = 7 * 24 * time.Hour
)

// ComplianceReasons are the reasons a post can be reported for: X's table
// of them (deleted, bounced, protected, suspended, scrub_geo), and
// deactivated, which X's earlier pages listed for posts too.
var ComplianceReasons = []string{"deleted", "suspended", "deactivated", "protected", "bounced", "scrub_geo"}

// UserComplianceReasons are the reasons an account can be reported for.
var UserComplianceReasons = []string{"deleted", "suspended", "deactivated", "protected"}

// ComplianceOptions configure the compliance jobs.
type ComplianceOptions struct {
	// Delay from the upload to the job's completion, on the server's clock
	// (0 = 2 minutes).
	Delay time.Duration
	// MaxIDs fails a job given more ids (0 = no limit).
	MaxIDs int
	// BusyStatus answers a create while a job of the type is active: 409
	// (the default, problem "Conflict") or 400 (an invalid request).
	BusyStatus int
	// ExpireComplete turns a complete job "expired" once its download URL
	// has expired, which X does not document.
	ExpireComplete bool
}

// ComplianceJobInfo is a job as the server holds it, for tests.
type ComplianceJobInfo struct {
	ID, Type, Name, Status string
	Created                time.Time
	// IDs are the ids uploaded (nil before the upload).
	IDs []string
	// Uploads counts the PUTs to the upload URL.
	Uploads int
}

type complianceJob struct {
	id, typ, name, app string
	resumable          bool
	created            time.Time
	uploadSig, dlSig   string
	uploaded           time.Time // zero until the first upload
	uploads            int
	ids                []string
	fail               bool
}

type postStatus struct {
	at     time.Time
	reason string // "" = visible again
}

type complianceState struct {
	opts     ComplianceOptions
	jobs     []*complianceJob        // creation order
	history  map[string][]postStatus // of posts
	users    map[string][]postStatus // of accounts
	failNext int

	srv *http.Server
	url string // storage base URL
}

func newComplianceState(o ComplianceOptions) *complianceState {
	if o.Delay <= 0 {
		o.Delay = 2 * time.Minute
	}
	if o.BusyStatus == 0 {
		o.BusyStatus = http.StatusConflict
	}
	return &complianceState{opts: o, history: map[string][]postStatus{}, users: map[string][]postStatus{}}
}

// status is the job's status at now.
func (c *complianceState) status(j *complianceJob, now time.Time) string {
	switch {
	case j.uploaded.IsZero():
		if now.Before(j.created.Add(ComplianceUploadWindow)) {
			return "created"
		}
		return "expired"
	case now.Before(j.uploaded.Add(c.opts.Delay)):
		return "in_progress"
	case j.fail:
		return "failed"
	case c.opts.ExpireComplete && !now.Before(j.created.Add(ComplianceDownloadWindow)):
		return "expired"
	}
	return "complete"
}

// reasonAt is the post's compliance status at t ("" = visible).
func (c *complianceState) reasonAt(id string, t time.Time) (postStatus, bool) {
	return statusAt(c.history[id], t)
}

// statusAt is the status of a history at t ("" = visible).
func statusAt(history []postStatus, t time.Time) (postStatus, bool) {
	var last postStatus
	found := false
	for _, h := range history {
		if h.at.After(t) {
			break
		}
		last, found = h, true
	}
	return last, found && last.reason != ""
}

// SetPostCompliance records, at the clock's now, that a post was deleted
// ("deleted"), its author suspended ("suspended"), deactivated
// ("deactivated") or made protected ("protected"), or that it "bounced" or
// had its location removed
// ("scrub_geo"): jobs that complete from then on report it. reason "" makes
// the post visible again. The bookmark lists are not changed (see DeletePost).
func (s *Server) SetPostCompliance(postID, reason string) error {
	if postID == "" {
		return ErrEmptyID
	}
	if reason != "" && !slices.Contains(ComplianceReasons, reason) {
		return fmt.Errorf("xsim: unknown compliance reason %q (want one of %v)", reason, ComplianceReasons)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.comp.history[postID] = append(s.comp.history[postID], postStatus{at: s.clk.Now(), reason: reason})
	return nil
}

// SetUserCompliance records, at the clock's now, that an account was
// deleted, suspended, deactivated or made protected: jobs of type users
// that complete from then on report it. reason "" makes it visible again.
// Its posts are not changed (SuspendUser changes them too).
func (s *Server) SetUserCompliance(userID, reason string) error {
	if userID == "" {
		return ErrEmptyID
	}
	if reason != "" && !slices.Contains(UserComplianceReasons, reason) {
		return fmt.Errorf("xsim: unknown user compliance reason %q (want one of %v)", reason, UserComplianceReasons)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.comp.users[userID] = append(s.comp.users[userID], postStatus{at: s.clk.Now(), reason: reason})
	return nil
}

// SuspendUser is X suspending an account: jobs that complete from then on
// report it (type users) and each post of it registered with PutPost
// (type tweets) "suspended", and posts that reference one get a partial
// error in its place. The bookmark lists are not changed.
func (s *Server) SuspendUser(userID string) error {
	if err := s.SetUserCompliance(userID, "suspended"); err != nil {
		return err
	}
	var posts []string
	s.posts.Range(func(id, p any) bool {
		if p.(*Post).AuthorID == userID {
			posts = append(posts, id.(string))
		}
		return true
	})
	for _, id := range posts {
		if err := s.SetPostCompliance(id, "suspended"); err != nil {
			return err
		}
	}
	return nil
}

// DeletePost is the author deleting a post: it leaves every bookmark list
// and folder, and compliance jobs report it as "deleted".
func (s *Server) DeletePost(postID string) error {
	if err := s.SetPostCompliance(postID, "deleted"); err != nil {
		return err
	}
	s.deleteMedia(postID)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, u := range s.users {
		s.unbookmarkLocked(u, postID)
		for _, f := range u.folders {
			if i := slices.Index(f.posts, postID); i >= 0 {
				f.posts = slices.Delete(f.posts, i, i+1)
			}
		}
	}
	return nil
}

// FailComplianceJobs makes the next n jobs uploaded fail.
func (s *Server) FailComplianceJobs(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.comp.failNext = n
}

// ComplianceJobs returns every job, oldest first.
func (s *Server) ComplianceJobs() []ComplianceJobInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clk.Now()
	out := make([]ComplianceJobInfo, len(s.comp.jobs))
	for i, j := range s.comp.jobs {
		out[i] = ComplianceJobInfo{ID: j.id, Type: j.typ, Name: j.name, Status: s.comp.status(j, now),
			Created: j.created, IDs: slices.Clone(j.ids), Uploads: j.uploads}
	}
	return out
}

// ComplianceJobsOf returns the jobs of a type ("tweets" or "users"), oldest
// first.
func (s *Server) ComplianceJobsOf(typ string) []ComplianceJobInfo {
	return slices.DeleteFunc(s.ComplianceJobs(), func(j ComplianceJobInfo) bool { return j.Type != typ })
}

// StorageURL is the base URL of the storage host of the upload and download
// URLs ("" before Start).
func (s *Server) StorageURL() string { return s.comp.url }

func (s *Server) complianceRoutes(mux *http.ServeMux) {
	mux.HandleFunc("POST /2/compliance/jobs", s.complianceAPI(OpCreateComplianceJob))
	mux.HandleFunc("GET /2/compliance/jobs", s.complianceAPI(OpListComplianceJobs))
	mux.HandleFunc("GET /2/compliance/jobs/{job}", s.complianceAPI(OpGetComplianceJob))
}

// startStorage serves the storage host on its own loopback port.
func (s *Server) startStorage() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("PUT /compliance/{job}/ids.txt", s.storage(OpComplianceUpload))
	mux.HandleFunc("GET /compliance/{job}/results.json", s.storage(OpComplianceDownload))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		storageError(w, http.StatusNotFound, "NoSuchKey", "The specified key does not exist.")
	})
	s.comp.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	s.comp.url = "http://" + ln.Addr().String()
	go func() { _ = s.comp.srv.Serve(ln) }()
	return nil
}

func (s *Server) closeStorage() {
	if s.comp.srv != nil {
		_ = s.comp.srv.Close()
	}
}

var userContextBody = []byte(`{"title":"Unsupported Authentication","detail":"Authenticating with OAuth 2.0 User Context is forbidden for this endpoint.  Supported authentication types are [OAuth 2.0 Application-Only].","type":"https://api.x.com/2/problems/unsupported-authentication","status":403}`)

const simTime = "2006-01-02T15:04:05.000Z"

func (s *Server) complianceAPI(op string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.callHook(op, "", r)
		fault, latency := s.nextFault(op)
		if latency > 0 {
			time.Sleep(latency)
		}
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(io.LimitReader(r.Body, 1<<16))
		}
		s.mu.Lock()
		res := s.decideCompliance(op, r, body, fault)
		s.mu.Unlock()
		s.respond(w, res)
	}
}

// decideCompliance serves a compliance API request. s.mu held.
func (s *Server) decideCompliance(op string, r *http.Request, body []byte, fault Fault) *result {
	now := s.clk.Now()
	res := &result{status: 200}
	fail := func(status int, b []byte) *result {
		res.status, res.body = status, b
		s.record("", op, status, 0, 0)
		return res
	}
	t := s.tokens[bearerToken(r)]
	app := ""
	if t != nil {
		app = t.client
	}
	bucket := bucketKey{app: true, who: "compliance\x00" + app, op: op}
	peek := func() rlInfo {
		limit := s.complianceLimit(op)
		if s.opts.DisableRateLimits {
			return rlInfo{true, unlimited, unlimited, ceilUnix(now.Add(s.window))}
		}
		if b := s.buckets[bucket]; b != nil && now.Before(b.start.Add(s.window)) {
			return rlInfo{true, limit, max(0, limit-b.count), ceilUnix(b.start.Add(s.window))}
		}
		return rlInfo{true, limit, limit, ceilUnix(now.Add(s.window))}
	}
	switch fault.Kind {
	case FaultServerError:
		res.rl = peek()
		return fail(fault.Status, serverErrorBody(fault.Status))
	case FaultRateLimit:
		res.rl = rlInfo{true, s.complianceLimit(op), 0, ceilUnix(now.Add(fault.ResetIn))}
		return fail(429, s.tooMany())
	case FaultConnReset:
		res.connReset = true
		s.record("", op, 0, 0, 0)
		return res
	}
	res.rl = peek()
	switch {
	case t == nil || t.kind == kindRefresh || !t.live(now):
		return fail(401, unauthorizedBody)
	case t.kind != kindApp:
		return fail(403, userContextBody)
	}
	if s.opts.DisableRateLimits {
		res.rl = peek()
	} else {
		rl, over := s.hit(bucket, s.complianceLimit(op), now)
		res.rl = rl
		if over {
			return fail(429, s.tooMany())
		}
	}
	var perr paramErrors
	switch op {
	case OpCreateComplianceJob:
		checkParams(r.URL.Query(), []string{"compliance_job.fields"}, &perr)
		var req struct {
			Type      *string `json:"type"`
			Name      string  `json:"name"`
			Resumable bool    `json:"resumable"`
		}
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		switch err := dec.Decode(&req); {
		case err != nil:
			perr.add("body", string(body), "The request body must be a JSON object with `type` and optional `name` and `resumable`: "+err.Error())
		case req.Type == nil || (*req.Type != "tweets" && *req.Type != "users"):
			v := ""
			if req.Type != nil {
				v = *req.Type
			}
			perr.add("type", v, "The `type` value ["+v+"] is not one of [tweets, users]")
		case len(req.Name) > 64:
			perr.add("name", req.Name, "The `name` value is longer than 64 characters")
		}
		if !perr.empty() {
			return fail(400, invalidRequest(&perr))
		}
		for _, j := range s.comp.jobs {
			if j.app == app && j.typ == *req.Type {
				if st := s.comp.status(j, now); st == "created" || st == "in_progress" {
					detail := "There is already an active compliance job of type [" + j.typ + "] for this app: [" + j.id + "]. Try again when it has finished."
					if s.comp.opts.BusyStatus == http.StatusBadRequest {
						perr.add("type", j.typ, detail)
						return fail(400, invalidRequest(&perr))
					}
					return fail(s.comp.opts.BusyStatus, problem("Conflict", detail, "about:blank", s.comp.opts.BusyStatus))
				}
			}
		}
		j := &complianceJob{id: strconv.FormatUint(s.nextID(), 10), typ: *req.Type, name: req.Name, app: app,
			resumable: req.Resumable, created: now, uploadSig: randomToken(18), dlSig: randomToken(18)}
		s.comp.jobs = append(s.comp.jobs, j)
		res.body = s.jobBody(j, now)
	case OpGetComplianceJob:
		checkParams(r.URL.Query(), []string{"compliance_job.fields"}, &perr)
		id := r.PathValue("job")
		if !isPostID(id) {
			perr.add("id", id, "The `id` path parameter value ["+id+"] does not match ^[0-9]{1,19}$")
		}
		if !perr.empty() {
			return fail(400, invalidRequest(&perr))
		}
		j := s.comp.job(id)
		if j == nil || j.app != app {
			b := make([]byte, 0, 256)
			b = append(b, `{"errors":[{"value":`...)
			b = appendStr(b, id)
			b = appendKeyStr(b, "detail", "Could not find compliance job with id: ["+id+"].")
			b = append(b, `,"title":"Not Found Error","resource_type":"compliance_job","parameter":"id"`...)
			b = appendKeyStr(b, "resource_id", id)
			res.body = append(b, `,"type":"https://api.x.com/2/problems/resource-not-found"}]}`...)
			break
		}
		res.body = s.jobBody(j, now)
	case OpListComplianceJobs:
		q := r.URL.Query()
		checkParams(q, []string{"type", "status", "compliance_job.fields"}, &perr)
		typ := q.Get("type")
		if typ != "tweets" && typ != "users" {
			perr.add("type", typ, "The `type` query parameter value ["+typ+"] is not one of [tweets, users]")
		}
		status := q.Get("status")
		if _, ok := q["status"]; ok && !slices.Contains([]string{"created", "in_progress", "failed", "complete", "expired"}, status) {
			perr.add("status", status, "The `status` query parameter value ["+status+"] is not one of [created, in_progress, failed, complete, expired]")
		}
		if !perr.empty() {
			return fail(400, invalidRequest(&perr))
		}
		var data []json.RawMessage
		for i := len(s.comp.jobs) - 1; i >= 0; i-- { // newest first
			j := s.comp.jobs[i]
			if j.app == app && j.typ == typ && (status == "" || s.comp.status(j, now) == status) {
				data = append(data, s.jobJSON(j, now))
			}
		}
		out := map[string]any{"meta": map[string]int{"result_count": len(data)}}
		if len(data) > 0 {
			out["data"] = data
		}
		res.body, _ = json.Marshal(out)
	}
	res.truncate = fault.Kind == FaultTruncate
	s.record("", op, 200, 0, 0)
	return res
}

func (s *Server) complianceLimit(op string) int {
	if n, ok := s.opts.AppLimits[op]; ok {
		return n
	}
	return ComplianceAppLimit
}

func (c *complianceState) job(id string) *complianceJob {
	for _, j := range c.jobs {
		if j.id == id {
			return j
		}
	}
	return nil
}

func (s *Server) jobJSON(j *complianceJob, now time.Time) json.RawMessage {
	base := s.comp.url + "/compliance/" + j.id
	v := map[string]any{
		"id": j.id, "type": j.typ, "status": s.comp.status(j, now), "resumable": j.resumable,
		"created_at":          j.created.UTC().Format(simTime),
		"upload_url":          base + "/ids.txt?X-Sim-Expires=" + strconv.FormatInt(j.created.Add(ComplianceUploadWindow).Unix(), 10) + "&X-Sim-Signature=" + j.uploadSig,
		"upload_expires_at":   j.created.Add(ComplianceUploadWindow).UTC().Format(simTime),
		"download_url":        base + "/results.json?X-Sim-Expires=" + strconv.FormatInt(j.created.Add(ComplianceDownloadWindow).Unix(), 10) + "&X-Sim-Signature=" + j.dlSig,
		"download_expires_at": j.created.Add(ComplianceDownloadWindow).UTC().Format(simTime),
	}
	if j.name != "" {
		v["name"] = j.name
	}
	b, _ := json.Marshal(v)
	return b
}

func (s *Server) jobBody(j *complianceJob, now time.Time) []byte {
	return append(append([]byte(`{"data":`), s.jobJSON(j, now)...), '}')
}

// storage serves the upload and download URLs.
func (s *Server) storage(op string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.callHook(op, "", r)
		fault, latency := s.nextFault(op)
		if latency > 0 {
			time.Sleep(latency)
		}
		switch fault.Kind {
		case FaultServerError:
			s.meterLocked(op, fault.Status)
			storageError(w, fault.Status, "InternalError", "We encountered an internal error. Please try again.")
			return
		case FaultConnReset:
			s.meterLocked(op, 0)
			resetConn(w)
			return
		}
		var body []byte
		if op == OpComplianceUpload {
			body, _ = io.ReadAll(io.LimitReader(r.Body, 64<<20))
		}
		s.mu.Lock()
		status, code, msg, out := s.serveStorage(op, r, body)
		s.record("", op, status, 0, 0)
		s.mu.Unlock()
		switch {
		case status != http.StatusOK:
			storageError(w, status, code, msg)
		case fault.Kind == FaultTruncate && len(out) > 0:
			writeTruncated(w, &result{status: 200}, out)
		default:
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(out)))
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(out)
		}
	}
}

func (s *Server) meterLocked(op string, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.record("", op, status, 0, 0)
}

// serveStorage checks a storage request and serves it. s.mu held.
func (s *Server) serveStorage(op string, r *http.Request, body []byte) (status int, code, msg string, out []byte) {
	now := s.clk.Now()
	if r.Header.Get("Authorization") != "" {
		return 400, "InvalidArgument", "Invalid argument: the request carries an Authorization header and a signed URL; use one authentication mechanism.", nil
	}
	j := s.comp.job(r.PathValue("job"))
	q := r.URL.Query()
	if j == nil {
		return 404, "NoSuchKey", "The specified key does not exist.", nil
	}
	sig, expires := j.uploadSig, j.created.Add(ComplianceUploadWindow)
	if op == OpComplianceDownload {
		sig, expires = j.dlSig, j.created.Add(ComplianceDownloadWindow)
	}
	if q.Get("X-Sim-Signature") != sig || q.Get("X-Sim-Expires") != strconv.FormatInt(expires.Unix(), 10) {
		return 403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature you provided.", nil
	}
	if !now.Before(expires) {
		return 400, "ExpiredToken", "The provided token has expired. Request signature expired at: " + expires.UTC().Format(time.RFC3339), nil
	}
	if op == OpComplianceUpload {
		if ct := r.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
			return 400, "InvalidArgument", "The upload URL was signed for Content-Type text/plain, not " + strconv.Quote(ct) + ".", nil
		}
		if st := s.comp.status(j, now); st != "created" && st != "in_progress" {
			return 400, "InvalidArgument", "The job is " + st + ": the upload URL no longer takes ids.", nil
		}
		if j.resumable {
			return 403, "SignatureDoesNotMatch", "The URL was signed for a resumable upload: POST with x-goog-resumable: start, then PUT to the Location it answers.", nil
		}
		s.comp.upload(j, body, now)
		return 200, "", "", nil
	}
	if s.comp.status(j, now) != "complete" {
		return 404, "NoSuchKey", "The specified key does not exist.", nil
	}
	return 200, "", "", s.comp.results(s, j)
}

// upload stores a job's ids; the first upload starts the job.
func (c *complianceState) upload(j *complianceJob, body []byte, now time.Time) {
	ids := strings.Fields(string(body))
	bad := false
	for _, id := range ids {
		bad = bad || !isPostID(id)
	}
	j.ids = ids
	j.uploads++
	if !j.uploaded.IsZero() {
		return
	}
	j.uploaded = now
	j.fail = bad || (c.opts.MaxIDs > 0 && len(ids) > c.opts.MaxIDs)
	if c.failNext > 0 {
		c.failNext--
		j.fail = true
	}
}

// results is a complete job's file: one line per reported id.
func (c *complianceState) results(s *Server, j *complianceJob) []byte {
	done := j.uploaded.Add(c.opts.Delay)
	var b bytes.Buffer
	seen := map[string]bool{}
	for _, id := range j.ids {
		st, reported := c.reasonAt(id, done)
		if j.typ == "users" {
			st, reported = statusAt(c.users[id], done)
		}
		if !reported || seen[id] {
			continue
		}
		seen[id] = true
		line := map[string]string{"id": id, "action": "delete", "reason": st.reason,
			"redacted_at": st.at.UTC().Format(simTime)}
		if j.typ == "tweets" {
			var v view
			s.fillView(&v, id)
			if p := v.toPost(); !p.CreatedAt.IsZero() {
				line["created_at"] = p.CreatedAt.UTC().Format(simTime)
			}
		}
		enc, _ := json.Marshal(line)
		b.Write(enc)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// storageError writes a Cloud Storage style XML error.
func storageError(w http.ResponseWriter, status int, code, msg string) {
	var b bytes.Buffer
	b.WriteString("<?xml version='1.0' encoding='UTF-8'?><Error><Code>")
	b.WriteString(code)
	b.WriteString("</Code><Message>")
	_ = xmlEscape(&b, msg)
	b.WriteString("</Message></Error>")
	w.Header().Set("Content-Type", "application/xml; charset=UTF-8")
	w.Header().Set("Content-Length", strconv.Itoa(b.Len()))
	w.WriteHeader(status)
	_, _ = w.Write(b.Bytes())
}

func xmlEscape(w io.Writer, s string) error {
	r := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&apos;", `"`, "&quot;")
	_, err := r.WriteString(w, s)
	return err
}
