package compliance

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/ids"
)

// check runs the sync's part of the checks (docs/compliance.md), after its
// bookmark walks so that their new posts are in it: the jobs of posts of
// every account's due ids, each once and in id order, then the job of
// accounts (checkAuthors), also when a job of posts failed.
func (c *Check) check(ctx context.Context, emit Emit) error {
	if _, ok := c.State.(*state.NoOpClient); ok {
		return errors.New("compliance checks need a state backend (backend_options): the ids of the archived posts and the job in progress are kept there")
	}
	accts, err := c.loadAccounts(ctx)
	if err != nil || len(accts) == 0 {
		return err
	}
	usersKey := account.UsersKey(c.Scope)
	users, err := account.GetKey(ctx, c.State, usersKey)
	if err == nil {
		c.users, err = unmarshalUsers(users, "state "+strconv.Quote(usersKey))
	}
	if err != nil {
		return err
	}
	start := c.Clock.Now()
	for _, a := range accts {
		if err := a.resendFindings(ctx, c.Sync, c.Resend, emit); err != nil {
			return errors.Join(err, c.saveAccounts(ctx, accts))
		}
		// A round starts Every after the last one started.
		if a.roundStart.IsZero() && (a.lastRound.IsZero() || start.Sub(a.lastRound) >= c.Every) && len(a.archived) > 0 {
			a.roundStart, a.changed = start, true
			c.Logger.Info().Str("user_id", a.userID).Int("posts", len(a.archived)).Msg("compliance check of the archive starts")
		}
	}
	c.accts = accts
	_, err = c.runJobs(ctx, account.JobKey(c.Scope), client.ComplianceTweets, func() ids.Sorted { return dueBatch(accts, c.MaxIDsPerJob) },
		func(rec *jobRecord, reported results) error {
			return c.apply(ctx, rec, reported, accts, emit)
		}, accts, start.Add(c.Wait))
	if _, ok := errors.AsType[*jobError](err); (err == nil || ok) && ctx.Err() == nil {
		err = errors.Join(err, c.checkAuthors(ctx, accts, start.Add(c.Wait), emit))
	}
	for _, a := range accts {
		if !a.roundStart.IsZero() && !a.hasDue() {
			a.lastRound, a.roundStart, a.changed = a.roundStart, time.Time{}, true
			c.Logger.Info().Str("user_id", a.userID).Int("posts", len(a.archived)).Msg("compliance check of the archive complete")
		}
	}
	return errors.Join(err, c.saveAccounts(ctx, accts))
}

// runJobs resumes the job of type typ recorded under key, if any, then runs
// jobs of the ids next gives until it gives none (done) or the deadline has
// passed. A complete job's results are applied, then its record is cleared
// and the accounts' checks are saved.
func (c *Check) runJobs(ctx context.Context, key, typ string, next func() ids.Sorted, apply func(*jobRecord, results) error,
	accts []*accountChecks, deadline time.Time) (done bool, err error) {
	var rec *jobRecord
	value, err := c.State.GetKey(ctx, key)
	if err == nil && value != "" {
		rec, err = decodeJob(key, value)
	}
	if err != nil {
		return false, err
	}
	if rec != nil {
		c.Logger.Info().Str("job", rec.ID).Str("type", typ).Msg("resuming the compliance job of an earlier sync")
	}
	for {
		if rec == nil {
			batch := next()
			if len(batch) == 0 {
				return true, nil
			}
			if rec, err = c.startJob(ctx, key, typ, batch, deadline); err != nil {
				return false, err
			}
		}
		reported, complete, err := c.finishJob(ctx, key, rec, deadline)
		if err != nil || !complete {
			if err == nil {
				c.Logger.Warn().Str("job", rec.ID).Str("type", typ).Dur("waited", c.Wait).Msg("compliance job still running; the next sync picks it up")
			}
			return false, err
		}
		if err := apply(rec, reported); err != nil {
			return false, err
		}
		if err := errors.Join(saveJob(ctx, c.State, key, nil, false), c.saveAccounts(ctx, accts)); err != nil {
			return false, err
		}
		rec = nil
		if !c.Clock.Now().Before(deadline) {
			if len(next()) > 0 {
				c.Logger.Info().Str("type", typ).Msg("compliance check continues at the next sync (compliance.wait is over)")
			}
			return false, nil
		}
	}
}

// loadAccounts reads each account's archived ids and checks.
func (c *Check) loadAccounts(ctx context.Context) ([]*accountChecks, error) {
	var out []*accountChecks
	for _, s := range c.Set.Sessions {
		if s.UserID == "" {
			// Resolved by the data tables' first resolver, or here.
			if err := s.Ready(ctx); err != nil || s.UserID == "" {
				c.Logger.Warn().Err(c.Secrets.Error(err)).Str("account", s.ID()).Msg("account not checked: its user id is not known")
				continue
			}
		}
		rec, err := s.Record(ctx)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.ID(), err)
		}
		a := &accountChecks{userID: s.UserID, archived: rec.Bookmarks().Union(rec.Referenced()), bookmarks: rec.Bookmarks(),
			referenced: rec.Referenced(), authors: rec.Authors(), record: rec}
		key := account.ChecksKey(s.UserID)
		value, err := account.GetKey(ctx, c.State, key)
		if err == nil {
			err = a.unmarshalChecks(value, "state "+strconv.Quote(key))
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.ID(), err)
		}
		out = append(out, a)
	}
	return out, nil
}

// dueBatch is the next job's ids: the smallest max ids due in any account.
func dueBatch(accts []*accountChecks, max int) ids.Sorted {
	var all ids.Sorted
	for _, a := range accts {
		all = all.Union(slices.DeleteFunc(slices.Clone(a.archived), func(id uint64) bool { return !a.due(id) }))
	}
	return all[:min(max, len(all))]
}

func (c *Check) saveAccounts(ctx context.Context, accts []*accountChecks) error {
	for _, a := range accts {
		if !a.changed {
			continue
		}
		value, err := a.marshalChecks()
		if err != nil {
			return err
		}
		if err := account.SetKey(ctx, c.State, account.ChecksKey(a.userID), value); err != nil {
			return err
		}
		a.changed = false
	}
	return nil
}

// startJob creates a job of type typ for batch, records it under key and
// uploads its ids.
func (c *Check) startJob(ctx context.Context, key, typ string, batch ids.Sorted, deadline time.Time) (*jobRecord, error) {
	if err := c.waitForIdle(ctx, typ, deadline); err != nil {
		return nil, err
	}
	job, _, err := c.API.CreateComplianceJob(ctx, client.CreateComplianceJobOptions{Type: typ, Name: strings.TrimSpace("cq-source-x " + c.Scope)})
	if err != nil {
		if ae, ok := errors.AsType[*client.APIError](err); ok && (ae.Status == 400 || ae.Status == 409) {
			// X refuses a second job of a type; how is not documented.
			if busy, lerr := c.activeJob(ctx, typ); lerr == nil && busy != nil {
				return nil, busyError(busy)
			}
		}
		return nil, explain(err)
	}
	rec := &jobRecord{ID: job.ID, Type: typ, CreatedAt: cmp.Or(job.CreatedAt, c.Clock.Now()), IDs: batch}
	if err := saveJob(ctx, c.State, key, rec, true); err != nil {
		return nil, err
	}
	c.Logger.Info().Str("job", job.ID).Str("type", typ).Int("ids", len(batch)).Msg("compliance job created")
	return rec, c.upload(ctx, key, rec, job)
}

func (c *Check) upload(ctx context.Context, key string, rec *jobRecord, job *client.ComplianceJob) error {
	if _, err := c.API.UploadComplianceIDs(ctx, job, rec.IDs.Strings()); err != nil {
		return &jobError{client.OpUploadComplianceIDs, fmt.Errorf("uploading the ids of compliance job %s (the next sync tries again while the job takes them): %w", rec.ID, err)}
	}
	rec.Uploaded = true
	return saveJob(ctx, c.State, key, rec, true)
}

// waitForIdle waits, until the deadline, for another job of the type of
// the app (a shard's, another program's) to finish: X runs one at a time.
func (c *Check) waitForIdle(ctx context.Context, typ string, deadline time.Time) error {
	for n := 0; ; n++ {
		busy, err := c.activeJob(ctx, typ)
		if err != nil || busy == nil {
			return err
		}
		if !c.Clock.Now().Before(deadline) {
			return busyError(busy)
		}
		if err := c.sleep(ctx, pollInterval(n), deadline); err != nil {
			return err
		}
	}
}

// activeJob is the app's job of the type that is created or in progress.
func (c *Check) activeJob(ctx context.Context, typ string) (*client.ComplianceJob, error) {
	jobs, _, err := c.API.ListComplianceJobs(ctx, typ, "")
	if err != nil {
		return nil, explain(err)
	}
	for i := range jobs {
		if jobs[i].Active() {
			return &jobs[i], nil
		}
	}
	return nil, nil
}

func busyError(j *client.ComplianceJob) error {
	name := ""
	if j.Name != "" {
		name = fmt.Sprintf(" %q", j.Name)
	}
	return &jobError{client.OpCreateComplianceJob, fmt.Errorf("another compliance job of this X app is %s (job %s%s, created %s); X runs one at a time, so the next sync checks the posts",
		j.Status, j.ID, name, j.CreatedAt.UTC().Format(time.RFC3339))}
}

// finishJob polls the job until it ends or the deadline passes (done is
// false then: the job stays recorded), and returns a complete job's
// results. A job poll gives up is replaced at once, in rec, by a new job
// of its ids; one given up too is cleared and reported, and its ids are
// checked at the next sync.
func (c *Check) finishJob(ctx context.Context, key string, rec *jobRecord, deadline time.Time) (reported results, done bool, err error) {
	replaced := false
	for n := 0; ; n++ {
		reported, done, g, err := c.poll(ctx, key, rec)
		if err != nil || done {
			return reported, done, err
		}
		if g != nil {
			if err := saveJob(ctx, c.State, key, nil, true); err != nil {
				return nil, false, err
			}
			typ := cmp.Or(rec.Type, client.ComplianceTweets)
			if replaced {
				what := map[string]string{client.ComplianceTweets: "posts", client.ComplianceUsers: "accounts"}[typ]
				return nil, false, &jobError{g.op, fmt.Errorf("compliance job %s %v; its %d %s are checked by a new job at the next sync", rec.ID, g, len(rec.IDs), what)}
			}
			c.Logger.Warn().Str("job", rec.ID).Str("type", typ).Str("why", g.Error()).Int("ids", len(rec.IDs)).Msg("compliance job given up; a new job checks its ids")
			next, err := c.startJob(ctx, key, typ, rec.IDs, deadline)
			if err != nil {
				return nil, false, err
			}
			*rec, replaced, n = *next, true, -1
			continue
		}
		if !c.Clock.Now().Before(deadline) {
			return nil, false, nil
		}
		if err := c.sleep(ctx, pollInterval(n), deadline); err != nil {
			return nil, false, err
		}
	}
}

// resultsKept is how long X keeps a job's results: "The download_url
// expires after one week (from when the job was created)".
const resultsKept = 7 * 24 * time.Hour

// poll reads the job once and, complete, its results. A job that ended
// without them, or not ended when they would expire, is given up (g: the
// operation that found it, and why).
func (c *Check) poll(ctx context.Context, key string, rec *jobRecord) (reported results, done bool, g *jobError, err error) {
	job, _, err := c.API.GetComplianceJob(ctx, rec.ID)
	if errors.Is(err, client.ErrNotFound) {
		return nil, false, &jobError{client.OpGetComplianceJob, errors.New("is not known to X any more")}, nil
	}
	if err != nil {
		return nil, false, nil, explain(err)
	}
	expires := cmp.Or(job.DownloadExpiresAt, rec.CreatedAt.Add(resultsKept))
	past := !c.Clock.Now().Before(expires)
	at := expires.UTC().Format(time.RFC3339)
	switch job.Status {
	case client.JobCreated, client.JobInProgress:
		if job.Status == client.JobCreated && !rec.Uploaded {
			// A run stopped between creating the job and uploading.
			return nil, false, nil, c.upload(ctx, key, rec, job)
		}
		if past {
			return nil, false, &jobError{client.OpGetComplianceJob, errors.New("is still " + job.Status + " at " + at + ", when its results would expire")}, nil
		}
		return nil, false, nil, nil
	case client.JobComplete:
		if past {
			return nil, false, &jobError{client.OpDownloadComplianceResults, errors.New("is complete, but its results expired at " + at + ", before they were read")}, nil
		}
		reported, err := c.readResults(ctx, rec, job)
		ae, isAPI := errors.AsType[*client.APIError](err)
		if _, malformed := errors.AsType[*client.MalformedResponseError](err); (isAPI && ae.Status < 500) || malformed {
			return nil, false, &jobError{client.OpDownloadComplianceResults, errors.New("is complete, but its results could not be read: " + err.Error())}, nil
		}
		if err != nil {
			return nil, false, nil, &jobError{client.OpDownloadComplianceResults, fmt.Errorf("reading the results of compliance job %s (the next sync reads them again): %w", rec.ID, err)}
		}
		return reported, true, nil, nil
	case client.JobFailed:
		return nil, false, &jobError{client.OpGetComplianceJob, errors.New("failed (X gives no reason)")}, nil
	case client.JobExpired:
		if rec.Uploaded {
			return nil, false, &jobError{client.OpGetComplianceJob, errors.New("expired before its results were read")}, nil
		}
		return nil, false, &jobError{client.OpGetComplianceJob, errors.New("expired: its ids were not uploaded within 15 minutes of its creation (the sync that created it stopped)")}, nil
	}
	return nil, false, nil, fmt.Errorf("compliance job %s has status %q, which this version does not know", rec.ID, job.Status)
}

// readResults reads a complete job's results: the last line of each id the
// job was given, so that memory follows the job's size, whatever the file's.
// A line without a reason is acted on as an unknown reason, with a warning.
func (c *Check) readResults(ctx context.Context, rec *jobRecord, job *client.ComplianceJob) (results, error) {
	byID := results{}
	_, err := c.API.DownloadComplianceResults(ctx, job, func(r client.ComplianceResult) {
		if n, ok := ids.Parse(r.ID); ok && rec.IDs.Has(n) {
			byID[n] = r
		}
	})
	field := "post_id"
	if rec.Type == client.ComplianceUsers {
		field = "author_id"
	}
	for _, r := range byID {
		if r.Reason == "" && err == nil {
			c.Logger.Warn().Str("job", rec.ID).Str(field, r.ID).Msg("compliance result without a reason: acted on as a reason this version does not know (compliance.on_change)")
		}
	}
	return byID, err
}

// apply records a complete job's results: each account's check of every
// post of the job it archived, and a row where what X says changed.
func (c *Check) apply(ctx context.Context, rec *jobRecord, reported results, accts []*accountChecks, emit Emit) error {
	now := c.Clock.Now()
	var rows []*Finding
	for _, a := range accts {
		var updates []check
		for _, id := range rec.IDs {
			if !a.archived.Has(id) {
				continue
			}
			r, isReported := reported[id]
			code := reasonClean
			if isReported {
				code = reasonCode(r.Reason)
			}
			prev, seen := a.find(id)
			updates = append(updates, check{id: id, at: now.UnixMilli(), reason: code, applied: prev.applied})
			if (!seen && code == reasonClean) || (seen && prev.reason == code) {
				continue
			}
			row := &Finding{UserID: a.userID, PostID: strconv.FormatUint(id, 10), JobID: rec.ID, CheckedAt: now}
			if isReported {
				row.Action, row.Reason, row.CreatedAt, row.RedactedAt = r.Action, r.Reason, r.CreatedAt, r.RedactedAt
				row.ArchiveAction = c.archiveAction(code)
			}
			rows = append(rows, row)
			if c.Resend.On() {
				if err := a.rows.Add(row); err != nil {
					return err
				}
			}
		}
		a.setAll(updates)
	}
	c.Logger.Info().Str("job", rec.ID).Int("posts", len(rec.IDs)).Int("reported", len(reported)).Int("changes", len(rows)).Msg("compliance job complete")
	return emit(ctx, rows)
}

// jobError is a job that could not be run, found by op: the other type's
// job runs all the same.
type jobError struct {
	op  client.Operation
	err error
}

func (e *jobError) Error() string { return e.err.Error() }
func (e *jobError) Unwrap() error { return e.err }

// explain says which credential a refusal is about.
func explain(err error) error {
	if ae, ok := errors.AsType[*client.APIError](err); errors.Is(err, client.ErrUserContextToken) || (ok && ae.Hint == client.HintAppUnauthorized) {
		return fmt.Errorf("the compliance bearer token was refused: %w", err)
	}
	return err
}

// pollInterval is the wait before poll n: 1s, doubling up to a minute.
func pollInterval(n int) time.Duration { return min(time.Second<<min(n, 6), time.Minute) }

func (c *Check) sleep(ctx context.Context, d time.Duration, deadline time.Time) error {
	if d = min(d, deadline.Sub(c.Clock.Now())); d <= 0 {
		return nil
	}
	return c.API.Sleep(ctx, d) // the client's clock, and its stop
}
