package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"syscall"
	"time"
)

// call is one API call: what to send and how to decode a 2xx body.
type call struct {
	op       Operation
	user     string // budget and meter key ("" for users_me)
	method   string
	path     string
	query    url.Values
	body     []byte // JSON request body, or nil
	pageSize int    // max_results asked for (0 = API default), for PostsUnread
	// decode decodes a 2xx body and returns the posts it bills.
	decode func(body []byte) (posts int, err error)
}

// do sends a call with the client's budget, retry and rate-limit rules.
func (c *Client) do(ctx context.Context, cl *call) (*Response, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	resp := &Response{Operation: cl.op}
	key := budgetKey{cl.user, cl.op}
	target := c.baseURL + cl.path
	if len(cl.query) > 0 {
		target += "?" + cl.query.Encode()
	}
	failures := 0           // retryable failures so far (5xx, connection, unreadable body)
	limited := 0            // 429s waited out
	waitedForReset := false // any rate-limit wait in this call
	meter := func(f func(u *Usage)) { c.meter.add(cl.user, cl.op, f) }

	// retry backs off before the next attempt, or reports that none is left.
	retry := func(why string) (bool, error) {
		if failures+1 >= c.retry.MaxAttempts {
			return false, nil
		}
		failures++
		d := c.jitter(failures)
		c.logf("x api: %s: %s; retry %d of %d in %s", cl.op, why, failures, c.retry.MaxAttempts-1, d)
		if err := c.clock.Sleep(ctx, d); err != nil {
			return false, c.ctxError(cl.op, ctx, err)
		}
		resp.Waited += d
		meter(func(u *Usage) { u.Retries++; u.Backoff += d })
		return true, nil
	}

	for {
		if err := c.acquire(ctx, cl.op, key, resp, &waitedForReset); err != nil {
			return resp, err
		}
		var body io.Reader
		if cl.body != nil {
			body = bytes.NewReader(cl.body)
		}
		req, err := http.NewRequestWithContext(ctx, cl.method, target, body)
		if err != nil {
			c.budgets.settle(key, Rate{}, false, false, c.clock.Now())
			return resp, fmt.Errorf("%s%s: building request: %w", errPrefix, cl.op, err)
		}
		req.Header.Set("Accept", "application/json")
		req.Header.Set("User-Agent", c.userAgent)
		if cl.body != nil {
			req.Header.Set("Content-Type", "application/json")
		}

		resp.Attempts++
		meter(func(u *Usage) { u.Requests++ })
		hr, err := c.http.Do(req)
		now := c.clock.Now()
		if err != nil {
			c.budgets.settle(key, Rate{}, false, false, now)
			meter(func(u *Usage) { u.Errors++ })
			if ctx.Err() != nil {
				return resp, c.ctxError(cl.op, ctx, ctx.Err())
			}
			if retryableTransport(err) {
				ok, rerr := retry("connection error: " + oneLine(err.Error(), 200))
				if rerr != nil {
					return resp, rerr
				}
				if ok {
					continue
				}
			}
			return resp, fmt.Errorf("%s%s: request failed after %d attempt(s): %w", errPrefix, cl.op, resp.Attempts, err)
		}
		// The transport may have put the Authorization header on the request
		// it returns; hand back the request as built here instead.
		hr.Request = req
		raw, readErr := c.readBody(hr)
		rate, rateOK := parseRate(hr.Header)
		resp.Response = hr
		resp.Rate = rate
		status := hr.StatusCode
		c.budgets.settle(key, rate, rateOK, status == http.StatusTooManyRequests, now)

		switch {
		case errors.Is(readErr, ErrResponseTooLarge):
			meter(func(u *Usage) {
				u.Errors++
				if status/100 == 2 && cl.op.returnsPosts() {
					u.PostsUnread += pageSizeOrDefault(cl.pageSize)
				}
			})
			return resp, &MalformedResponseError{Operation: cl.op, Status: status, Response: hr,
				Reason: fmt.Sprintf("body larger than the %d-byte cap", c.maxBody), Err: ErrResponseTooLarge}

		case status == http.StatusTooManyRequests:
			meter(func(u *Usage) { u.RateLimited++ })
			// x-rate-limit-reset is the server's clock; ours may be off.
			var wait time.Duration
			if !rate.Reset.IsZero() {
				wait = rate.Reset.Add(c.margin).Sub(now)
			}
			if wait <= c.margin {
				// No reset, or one that looks past although the server
				// refused (our clock is ahead of X's): back off, longer
				// each time, rather than send again at once. (A reset far
				// ahead is taken as it is: it may be a daily cap, and one
				// past the wait cap is reported, not waited for.)
				wait = c.rateLimitBackoff(limited + 1)
				c.budgets.block(key, now.Add(wait))
			}
			if limited >= c.retry.MaxRateLimitWaits || wait > c.waitCap || c.waitCap <= 0 {
				c.logf("x api: %s: 429 Too Many Requests; giving up (reset in %s, cap %s)", cl.op, wait, c.waitCap)
				return resp, newRateLimitError(cl.op, hr, raw, rate, wait, waitedForReset)
			}
			limited++
			c.logf("x api: %s: 429 Too Many Requests; waiting %s for the window to reset", cl.op, wait)
			c.waitStarts(cl.user, cl.op, wait)
			if err := c.clock.Sleep(ctx, wait); err != nil {
				return resp, c.ctxError(cl.op, ctx, err)
			}
			waitedForReset = true
			resp.Waited += wait
			meter(func(u *Usage) { u.RateLimitWaits++; u.Waited += wait })
			continue

		case status/100 == 2:
			var derr error
			var reason string
			posts := 0
			if readErr != nil {
				derr, reason = readErr, "body was cut short"
			} else if posts, derr = cl.decode(raw); isSyntaxError(derr) {
				reason = "body was not valid JSON"
			} else {
				reason = "body was valid JSON but not what this operation returns"
			}
			if derr == nil {
				resp.PostsReturned = posts
				meter(func(u *Usage) { u.OK++; u.PostsReturned += posts })
				return resp, nil
			}
			meter(func(u *Usage) {
				u.Errors++
				if cl.op.returnsPosts() {
					u.PostsUnread += pageSizeOrDefault(cl.pageSize)
				}
			})
			merr := &MalformedResponseError{Operation: cl.op, Status: status, Response: hr, Reason: reason, Err: derr}
			// Bodies cut short or not JSON (a connection dropped mid-body)
			// are asked for again. One read whole and valid JSON, but of the
			// wrong shape, would come back the same: asking again would only
			// bill it again.
			unreadable := readErr != nil || isSyntaxError(derr)
			if unreadable && !c.retry.NoRetryUnreadable {
				ok, rerr := retry(reason)
				if rerr != nil {
					return resp, rerr
				}
				if ok {
					continue
				}
			}
			return resp, merr

		default:
			meter(func(u *Usage) { u.Errors++ })
			apiErr := newAPIError(cl.op, hr, raw)
			if status/100 == 3 {
				apiErr.Hint = "the API answered with a redirect, which the client does not follow; check the base URL"
			}
			if status >= 500 {
				ok, rerr := retry(fmt.Sprintf("%d %s", status, http.StatusText(status)))
				if rerr != nil {
					return resp, rerr
				}
				if ok {
					continue
				}
			}
			// Other statuses (400, 401, 402, 403, 404, ...) are never retried.
			return resp, apiErr
		}
	}
}

// acquire reserves a request in the (user, operation) window, waiting for the
// reset when the window is used up and the wait is within the cap.
func (c *Client) acquire(ctx context.Context, op Operation, key budgetKey, resp *Response, waited *bool) error {
	for {
		ok, wait, rate := c.budgets.reserve(key, c.clock.Now())
		if ok {
			return nil
		}
		if wait > c.waitCap {
			c.meter.add(key.user, op, func(u *Usage) { u.Refused++ })
			c.logf("x api: %s: request budget used up (%d per window); reset in %s is past the %s cap, not sending", op, rate.Limit, wait, c.waitCap)
			return &RateLimitError{Rate: rate, Operation: op, Budget: true, Wait: wait, Waited: *waited}
		}
		c.logf("x api: %s: request budget used up (%d per window); waiting %s for the reset", op, rate.Limit, wait)
		c.waitStarts(key.user, op, wait)
		if err := c.clock.Sleep(ctx, wait); err != nil {
			return c.ctxError(op, ctx, err)
		}
		*waited = true
		resp.Waited += wait
		c.meter.add(key.user, op, func(u *Usage) { u.RateLimitWaits++; u.Waited += wait })
	}
}

// waitStarts tells the wait hook, if any, that a rate-limit wait begins.
func (c *Client) waitStarts(user string, op Operation, d time.Duration) {
	if c.waitHook != nil {
		c.waitHook(user, op, d)
	}
}

func (c *Client) ctxError(op Operation, ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil {
		err = cause
	}
	return fmt.Errorf("%s%s: %w", errPrefix, op, err)
}

// readBody reads and closes the body, at most maxBody bytes.
func (c *Client) readBody(hr *http.Response) ([]byte, error) {
	defer hr.Body.Close()
	size := 4096
	if cl := hr.ContentLength; cl >= 0 && cl <= c.maxBody {
		size = int(cl) + 1
	}
	lr := io.LimitReader(hr.Body, c.maxBody+1)
	b := make([]byte, 0, size)
	for {
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
		n, err := lr.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if int64(len(b)) > c.maxBody {
			return nil, ErrResponseTooLarge
		}
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
	}
}

// jitter is the full-jitter backoff before retry n (1-based).
func (c *Client) jitter(n int) time.Duration {
	ceil := c.retry.BaseDelay
	for i := 1; i < n && ceil < c.retry.MaxDelay; i++ {
		ceil *= 2
	}
	ceil = min(ceil, c.retry.MaxDelay)
	c.rngMu.Lock()
	d := time.Duration(c.rng.Int64N(int64(ceil) + 1))
	c.rngMu.Unlock()
	return d
}

// rateLimitBackoff is the wait after the n-th 429 without a reset header:
// half of min(cap, base×2^(n-1)) plus a random part up to the other half.
func (c *Client) rateLimitBackoff(n int) time.Duration {
	ceil := c.retry.RateLimitBaseDelay
	for i := 1; i < n && ceil < c.waitCap; i++ {
		ceil *= 2
	}
	ceil = min(ceil, c.waitCap)
	half := ceil / 2
	c.rngMu.Lock()
	d := half + time.Duration(c.rng.Int64N(int64(ceil-half)+1))
	c.rngMu.Unlock()
	return d
}

func pageSizeOrDefault(n int) int {
	if n <= 0 {
		return 10
	}
	return n
}

// retryableTransport reports whether a failed round trip is worth another
// try: connection resets, refusals, timeouts and early EOFs. Other errors
// (from an auth transport refreshing a token, for one) are returned at once.
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
