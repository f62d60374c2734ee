package client

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/go-json-experiment/json/jsontext"
)

// call is one API call: what to send and how to decode a 2xx body.
type call struct {
	op          Operation
	user        string // budget and meter key ("" for users_me)
	method      string
	path        string
	query       url.Values
	body        []byte // request body, or nil
	contentType string // body's; "" is application/json
	storageURL  string // a compliance job's signed URL, in place of the base URL and path (storageCall)
	pageSize    int    // max_results asked for (0 = API default), for PostsUnread
	// decode returns what a 2xx body billed, also when it refuses the body.
	decode func(body []byte) (billing.Billed, error)
	stream func(body io.Reader) error // in place of decode: a body of any size, read as it arrives, unbilled
}

// attempts is what one call has been through so far.
type attempts struct {
	*call
	resp           *Response
	key            budgetKey
	url            string
	http           *http.Client
	answered       *atomic.Bool  // a response came from the call's server: the client's, or a storage URL's (the call's own)
	start          time.Time     // first send, for the retry budget
	paused         time.Duration // waiting for rate-limit windows: not counted in the retry budget
	faults         int           // transient faults so far
	rateLimitWaits int           // 429s waited out
	waitedForReset bool
	streamErr      error // what stream returned of the last attempt's body
}

// do sends a call in named steps: acquire a request from the budget, send
// it, wait out a 429, check the response, and after a transient fault back
// off and send again while the retry budget lasts.
func (c *Client) do(ctx context.Context, cl *call) (*Response, error) {
	ctx = cmp.Or(ctx, context.Background())
	a := c.newAttempts(cl)
	// Once the client is stopped, waits end at once, a request in flight within the grace.
	sendCtx, doneSend := c.stopping(ctx, c.stopGrace)
	defer doneSend()
	ctx, done := c.stopping(ctx, 0)
	defer done()
	for {
		if ctx.Err() != nil { // stopped: nothing more is sent
			return a.resp, c.ctxError(a.op, ctx, ctx.Err())
		}
		if err := c.acquire(ctx, a); err != nil {
			return a.resp, err
		}
		hr, body, err := c.send(sendCtx, a)
		if hr != nil && hr.StatusCode == http.StatusTooManyRequests {
			if err := c.waitRateLimit(ctx, a, hr, body); err != nil {
				return a.resp, err
			}
			continue
		}
		if hr != nil {
			if err = c.checkResponse(a, hr, body, err); err == nil {
				return a.resp, nil
			}
			c.record(a, func(u *billing.Usage) { u.Errors++ })
		}
		if hr == nil && sendCtx.Err() != nil {
			return a.resp, c.ctxError(a.op, sendCtx, sendCtx.Err())
		}
		if err := c.backoff(ctx, a, hr, err); err != nil {
			return a.resp, err
		}
	}
}

func (c *Client) newAttempts(cl *call) *attempts {
	target := c.baseURL + cl.path
	if len(cl.query) > 0 {
		target += "?" + cl.query.Encode()
	}
	a := &attempts{call: cl, resp: &Response{Operation: cl.op}, key: budgetKey{cl.user, cl.op}, url: target, http: c.http, answered: &c.answered}
	if cl.storageURL != "" {
		a.url, a.http, a.answered = cl.storageURL, c.storage, new(atomic.Bool)
	}
	return a
}

func (c *Client) record(a *attempts, f func(u *billing.Usage)) { c.meter.Record(a.user, a.op, f) }

// acquire reserves a request in the (user, operation) window, waiting for the
// reset when the window is used up and the wait is within the cap.
func (c *Client) acquire(ctx context.Context, a *attempts) error {
	for {
		ok, wait, rate := c.budgets.reserve(a.key, c.clock.Now())
		if ok {
			return nil
		}
		log := c.log.With().Str("operation", string(a.op)).Str("user_id", a.user).
			Int("limit", rate.Limit).Stringer("wait", wait).Logger()
		if wait > c.waitCap {
			c.record(a, func(u *billing.Usage) { u.Refused++ })
			log.Warn().Stringer("wait_cap", c.waitCap).Msg("x api: request budget of the window used up, and its reset is past the wait cap: not sending")
			return &RateLimitError{Rate: rate, Operation: a.op, Budget: true, Wait: wait, Waited: a.waitedForReset}
		}
		log.Info().Msg("x api: request budget of the window used up; waiting for the reset")
		if err := c.waitForWindow(ctx, a, wait); err != nil {
			return err
		}
	}
}

func (c *Client) waitForWindow(ctx context.Context, a *attempts, wait time.Duration) error {
	if c.waitHook != nil {
		c.waitHook(a.user, a.op, wait)
	}
	if err := c.clock.Sleep(ctx, wait); err != nil {
		return c.ctxError(a.op, ctx, err)
	}
	a.waitedForReset = true
	a.paused += wait
	a.resp.Waited += wait
	c.record(a, func(u *billing.Usage) { u.RateLimitWaits++; u.Waited += wait })
	return nil
}

// send sends one attempt and reads its body: no response is a
// *transportError, a body not read whole what was read and the read error.
func (c *Client) send(ctx context.Context, a *attempts) (*http.Response, []byte, error) {
	if a.start.IsZero() {
		a.start = c.clock.Now()
	}
	deadlines := StartDeadlines(ctx, c.timeouts)
	defer deadlines.Stop()
	req, err := http.NewRequestWithContext(deadlines.Context(), a.method, a.url, bytes.NewReader(a.body))
	if err != nil {
		c.budgets.settle(a.key, Rate{}, false, false, c.clock.Now())
		return nil, nil, fmt.Errorf("%s%s: building request: %w", errPrefix, a.op, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.userAgent)
	if a.body != nil {
		req.Header.Set("Content-Type", cmp.Or(a.contentType, "application/json"))
	}
	a.resp.Attempts++
	c.record(a, func(u *billing.Usage) { u.Requests++ })
	hr, err := a.http.Do(req)
	deadlines.GotResponse()
	now := c.clock.Now()
	if err != nil {
		c.budgets.settle(a.key, Rate{}, false, false, now)
		c.record(a, func(u *billing.Usage) { u.Errors++ })
		return nil, nil, &transportError{deadlines.Err(err)}
	}
	a.answered.Store(true)
	// Not the transport's request, which may hold the Authorization header.
	hr.Request = req
	var body []byte
	var readErr error
	if a.stream != nil && hr.StatusCode/100 == 2 {
		r := &bodyReader{r: hr.Body}
		a.streamErr = a.stream(r) // what the stream said of the body; r.err is a read's error
		readErr = r.err
		hr.Body.Close()
	} else {
		body, readErr = c.readBody(hr)
	}
	readErr = deadlines.Err(readErr)
	rate, rateOK := parseRate(hr.Header)
	a.resp.Response, a.resp.Rate = hr, rate
	c.budgets.settle(a.key, rate, rateOK, hr.StatusCode == http.StatusTooManyRequests, now)
	return hr, body, readErr
}

// transportError is a round trip that got no response.
type transportError struct{ err error }

func (e *transportError) Error() string { return e.err.Error() }
func (e *transportError) Unwrap() error { return e.err }

// waitRateLimit waits out a 429 until the window resets, or returns a
// *RateLimitError when the wait is past the cap or the call has already
// waited out maxRateLimitWaits 429s.
func (c *Client) waitRateLimit(ctx context.Context, a *attempts, hr *http.Response, body []byte) error {
	c.record(a, func(u *billing.Usage) { u.RateLimited++ })
	now := c.clock.Now()
	rate := a.resp.Rate
	// x-rate-limit-reset is the server's clock; ours may be off.
	var wait time.Duration
	if !rate.Reset.IsZero() {
		wait = rate.Reset.Add(c.budgets.margin).Sub(now)
	}
	if wait <= c.budgets.margin {
		// No reset, or one that looks past (our clock is ahead of X's): wait
		// what a Retry-After asks, or back off, longer each time.
		if ra, ok := retryAfter(hr, now); ok && ra > 0 {
			wait = ra + c.budgets.margin
		} else {
			wait = c.rateLimitBackoff(a.rateLimitWaits + 1)
		}
		c.budgets.block(a.key, now.Add(wait))
	}
	log := c.log.With().Str("operation", string(a.op)).Str("user_id", a.user).Stringer("wait", wait).Logger()
	if a.rateLimitWaits >= maxRateLimitWaits || wait > c.waitCap || c.waitCap <= 0 {
		log.Warn().Stringer("wait_cap", c.waitCap).Int("waits", a.rateLimitWaits).Msg("x api: 429 Too Many Requests; giving up")
		return newRateLimitError(a.op, hr, body, rate, wait, a.waitedForReset)
	}
	a.rateLimitWaits++
	log.Warn().Msg("x api: 429 Too Many Requests; waiting for the window to reset")
	return c.waitForWindow(ctx, a, wait)
}

// checkResponse is the result of a response other than a 429 (each error
// is metered in Errors).
func (c *Client) checkResponse(a *attempts, hr *http.Response, body []byte, readErr error) error {
	status := hr.StatusCode
	switch {
	case errors.Is(readErr, ErrResponseTooLarge):
		c.recordUnread(a, status)
		return &MalformedResponseError{Operation: a.op, Status: status, Response: hr,
			Reason: fmt.Sprintf("body larger than the %d-byte cap", c.maxBody), Err: ErrResponseTooLarge}
	case status/100 == 2:
		return c.decode(a, hr, body, readErr)
	}
	apiErr := newAPIError(a.op, hr, body)
	if status/100 == 3 {
		apiErr.Hint = "the API answered with a redirect, which the client does not follow; check the base URL"
	}
	return apiErr
}

// decode decodes a 2xx body and meters the posts it billed.
func (c *Client) decode(a *attempts, hr *http.Response, body []byte, readErr error) error {
	malformed := func(reason string, err error, unreadable bool) error {
		return &MalformedResponseError{Operation: a.op, Status: hr.StatusCode, Response: hr, Reason: reason, Err: err, unreadable: unreadable}
	}
	if readErr != nil {
		c.recordUnread(a, hr.StatusCode)
		return malformed("body was cut short", readErr, true)
	}
	var res billing.Billed
	var err error
	if a.stream != nil {
		err = a.streamErr
	} else {
		res, err = a.decode(body)
	}
	if err == nil {
		c.bill(a, res, true)
		return nil
	}
	var eo *ErrorsOnlyError
	switch {
	case errors.As(err, &eo):
		eo.Operation, eo.Status, eo.Response = a.op, hr.StatusCode, hr
		return eo
	case isSyntaxError(err):
		c.recordUnread(a, hr.StatusCode)
		reason := "body was not valid JSON"
		var se *jsontext.SyntacticError
		if errors.As(err, &se) {
			reason += fmt.Sprintf(" (at offset %d)", se.ByteOffset)
		}
		return malformed(reason, err, true)
	}
	// Read whole, but not what the operation returns: billed, not asked again.
	c.bill(a, res, false)
	return malformed("body was valid JSON but not what this operation returns", err, false)
}

// bill meters a 2xx body (ok: it was decoded) and logs a count mismatch.
func (c *Client) bill(a *attempts, res billing.Billed, ok bool) {
	a.resp.PostsReturned = len(res.Posts) + res.UnknownPosts
	c.meter.Bill(a.user, a.op, c.clock.Now(), res, ok)
	if res.CountMismatch != "" {
		c.log.Warn().Str("operation", string(a.op)).Str("user_id", a.user).Msg("x api: " + res.CountMismatch)
	}
}

// recordUnread meters a 2xx post page whose body could not be read: X billed
// its posts, at most the page size asked for, but how many is not known.
func (c *Client) recordUnread(a *attempts, status int) {
	if status/100 == 2 && (a.op == OpListBookmarks || a.op == OpGetFolder) {
		c.record(a, func(u *billing.Usage) { u.PostsUnread += cmp.Or(a.pageSize, 10) })
	}
}

// transient reports whether err is a fault another attempt may not meet: a
// dropped connection, a 5xx, a 2xx body cut short or not JSON.
func (c *Client) transient(err error) bool {
	var te *transportError
	var apiErr *APIError
	var me *MalformedResponseError
	switch {
	case errors.As(err, &te):
		return retryableTransport(te.err)
	case errors.As(err, &apiErr):
		return apiErr.Status >= 500
	case errors.As(err, &me):
		return me.unreadable
	}
	return false
}

// backoff sleeps before the next attempt after a transient fault, or
// returns the call's final error. A Retry-After past the budget ends the call.
func (c *Client) backoff(ctx context.Context, a *attempts, hr *http.Response, fault error) error {
	if !c.transient(fault) {
		return c.finalError(a, fault)
	}
	a.faults++
	now := c.clock.Now()
	left := c.retry.Budget - (now.Sub(a.start) - a.paused)
	floor := a.resp.Attempts < c.retry.MaxAttempts
	if !floor && (left <= 0 || a.neverAnswered(fault)) {
		return c.finalError(a, fault)
	}
	d := c.random(doubled(c.retry.BaseDelay, c.retry.MaxDelay, a.faults)) // full jitter
	ra, hasRA := retryAfter(hr, now)
	switch {
	case hasRA && ra > max(left, c.retry.MaxDelay):
		return c.finalError(a, fault)
	case hasRA:
		d = ra
	case !floor:
		d = min(d, left)
	}
	c.log.Info().Str("operation", string(a.op)).Str("user_id", a.user).Int("attempt", a.resp.Attempts).
		Str("fault", oneLine(c.redactor.String(fault.Error()), 200)).Stringer("backoff", d).Stringer("retry_budget_left", max(left, 0)).
		Msg("x api: transient fault; retrying")
	if err := c.clock.Sleep(ctx, d); err != nil {
		return c.ctxError(a.op, ctx, err)
	}
	a.resp.Waited += d
	c.record(a, func(u *billing.Usage) { u.Retries++; u.Backoff += d })
	return nil
}

// finalError is the error the caller gets: after transient faults, with
// how many attempts the call had and for how long.
func (c *Client) finalError(a *attempts, err error) error {
	tried := (c.clock.Now().Sub(a.start) - a.paused).Round(time.Millisecond)
	var te *transportError
	switch {
	case errors.As(err, &te):
		return fmt.Errorf("%s%s: request failed after %d attempt(s) in %s: %w", errPrefix, a.op, a.resp.Attempts, tried, te.err)
	case a.resp.Attempts > 1 && c.transient(err):
		return fmt.Errorf("%w (after %d attempts in %s)", err, a.resp.Attempts, tried)
	}
	return err
}

func (c *Client) ctxError(op Operation, ctx context.Context, err error) error {
	return fmt.Errorf("%s%s: %w", errPrefix, op, cmp.Or(context.Cause(ctx), err))
}

// retryAfter reads hr's Retry-After header: delay-seconds or an HTTP date.
func retryAfter(hr *http.Response, now time.Time) (time.Duration, bool) {
	if hr == nil {
		return 0, false
	}
	v := strings.TrimSpace(hr.Header.Get("Retry-After"))
	if n, err := strconv.ParseInt(v, 10, 32); err == nil && n >= 0 {
		return time.Duration(n) * time.Second, true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// readBody reads and closes the body, at most maxBody bytes.
func (c *Client) readBody(hr *http.Response) ([]byte, error) {
	defer hr.Body.Close()
	b, err := io.ReadAll(io.LimitReader(hr.Body, c.maxBody+1))
	if int64(len(b)) > c.maxBody {
		return nil, ErrResponseTooLarge
	}
	return b, err
}

// bodyReader keeps the error of a read, other than the end of the body.
type bodyReader struct {
	r   io.Reader
	err error
}

func (b *bodyReader) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	if err != nil && err != io.EOF {
		b.err = err
	}
	return n, err
}

// rateLimitBackoff is the wait after the n-th 429 without a reset header:
// half of min(cap, base×2^(n-1)) plus a random part up to the other half.
func (c *Client) rateLimitBackoff(n int) time.Duration {
	ceil := doubled(rateLimitBaseDelay, c.waitCap, n)
	return ceil/2 + c.random(ceil-ceil/2)
}

func doubled(base, limit time.Duration, n int) time.Duration {
	for i := 1; i < n && base < limit; i++ {
		base *= 2
	}
	return min(base, limit)
}

func (c *Client) random(d time.Duration) time.Duration {
	c.rngMu.Lock()
	defer c.rngMu.Unlock()
	return time.Duration(c.rng.Int64N(int64(d) + 1))
}

// neverAnswered reports whether a fault reached no server that has ever
// answered: a wrong base_url or no network, tried MaxAttempts times so that
// the user hears of it in seconds. Once the server has answered, such a
// fault is a blip (a load balancer during a deploy), retried within the budget.
func (a *attempts) neverAnswered(fault error) bool {
	return unreached(fault) && !a.answered.Load()
}

// unreached: the address did not resolve, or no connection was made in time.
func unreached(err error) bool {
	var dnsErr *net.DNSError
	var opErr *net.OpError
	var te *TimeoutError
	return errors.As(err, &dnsErr) || (errors.As(err, &opErr) && opErr.Op == "dial") ||
		(errors.As(err, &te) && te.Phase == PhaseConnect)
}

// retryableTransport reports whether a failed round trip is worth another
// try; others (an auth transport's failed refresh) are returned at once.
func retryableTransport(err error) bool {
	switch {
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed), errors.Is(err, http.ErrHandlerTimeout):
		return true
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var oe *net.OpError
	return errors.As(err, &oe)
}
