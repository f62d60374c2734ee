// Package media fetches the photos and videos of archived posts from X's
// CDN into a media store (package media/store), each file once
// (docs/design/media.md).
package media

import (
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"sync"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/bearer"
)

// Status is what became of a file.
type Status string

// The statuses of a file. Stored, Gone, Forbidden, TooLarge and Failed are
// final; a file OverBudget or Transient is tried again by the next sync.
const (
	Stored     Status = "stored"
	Gone       Status = "gone"        // 404 or 410: the post or its media was deleted
	Forbidden  Status = "forbidden"   // 401, 403 or 451: protected, suspended or withheld
	TooLarge   Status = "too_large"   // larger than the largest file size
	OverBudget Status = "over_budget" // the run's byte budget was spent
	Transient  Status = "transient"   // a fault that may pass: 5xx, 429, a dropped connection, a timeout, a body cut short
	Failed     Status = "failed"      // refused for good: a URL not https, a redirect to http, another 4xx
	// Interrupted is no status of the file: the run was stopped before it
	// was done with it (SaverOptions.Stop), and the next run tries it.
	Interrupted Status = "interrupted"
)

// Final reports whether a file of status s is never tried again.
func (s Status) Final() bool { return s != OverBudget && s != Transient && s != Interrupted }

// Error is a file that could not be fetched, and why.
type Error struct {
	Status Status
	// HTTPStatus is the status of the answer, 0 when there was none.
	HTTPStatus int
	// Size is the file's size as announced (TooLarge), or 0.
	Size int64
	Err  error
}

func (e *Error) Error() string {
	if e.HTTPStatus != 0 && e.Err == nil {
		return fmt.Sprintf("%s: the server answered %d %s", e.Status, e.HTTPStatus, http.StatusText(e.HTTPStatus))
	}
	return fmt.Sprintf("%s: %v", e.Status, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Fetcher makes one GET of one file, with no X credential, https only
// (docs/design/media.md#one-fetch-of-one-file-mediafetchgo).
type Fetcher struct {
	// Transport sends the requests; nil: http.DefaultTransport. It must add
	// no credential: give the base transport, never the API's.
	Transport http.RoundTripper
	// Timeouts bound each request: Connect and Headers as the API's,
	// Request the whole file.
	Timeouts client.Timeouts
	// MaxSize is the largest file fetched; 0: no limit.
	MaxSize   int64
	UserAgent string
}

const maxRedirects = 5

// checkRedirect follows a redirect only to https (or, from plain http on a
// loopback host, such as the simulator, to a loopback host), and at most
// maxRedirects times.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return &Error{Status: Failed, Err: fmt.Errorf("more than %d redirects", maxRedirects)}
	}
	from := via[0].URL
	if req.URL.Scheme != "https" && !(req.URL.Scheme == "http" && from.Scheme == "http" && loopback(from) && loopback(req.URL)) {
		return &Error{Status: Failed, Err: fmt.Errorf("redirected to %s, which is not https", oneLine(req.URL.Redacted()))}
	}
	return nil
}

func loopback(u *url.URL) bool { return bearer.Loopback(u.Hostname()) }

// CheckURL says why a media URL is not fetched, or nil: it must be https,
// or http to a loopback host.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return &Error{Status: Failed, Err: fmt.Errorf("the URL does not parse: %w", err)}
	case u.Host == "" || u.User != nil:
		return &Error{Status: Failed, Err: fmt.Errorf("%s is not a URL of a file", oneLine(raw))}
	case u.Scheme == "https", u.Scheme == "http" && loopback(u):
		return nil
	}
	return &Error{Status: Failed, Err: fmt.Errorf("%s is not https", oneLine(u.Redacted()))}
}

// Result is a file fetched whole.
type Result struct {
	Size        int64
	ContentType string
}

// Fetch GETs rawURL and writes the file to w. It fails with an *Error when
// the file is not fetched whole: w then holds part of it, or nothing.
// budget, when not nil, is charged for the bytes read.
func (f *Fetcher) Fetch(ctx context.Context, rawURL string, w io.Writer, budget *Budget) (*Result, error) {
	if err := CheckURL(rawURL); err != nil {
		return nil, err
	}
	d := client.StartDeadlines(ctx, f.Timeouts)
	defer d.Stop()
	req, err := http.NewRequestWithContext(d.Context(), http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, &Error{Status: Failed, Err: err}
	}
	if f.UserAgent != "" {
		req.Header.Set("User-Agent", f.UserAgent)
	}
	resp, err := (&http.Client{Transport: f.Transport, CheckRedirect: checkRedirect}).Do(req)
	if err != nil {
		return nil, requestError(d.Err(err))
	}
	defer resp.Body.Close()
	d.GotResponse()
	if err := statusError(resp.StatusCode); err != nil {
		return nil, err
	}
	if n := resp.ContentLength; n > 0 && f.MaxSize > 0 && n > f.MaxSize {
		return nil, &Error{Status: TooLarge, Size: n, Err: fmt.Errorf("the server announced %d bytes; the largest file size is %d", n, f.MaxSize)}
	}
	if resp.ContentLength > 0 && !budget.take(resp.ContentLength) {
		return nil, &Error{Status: OverBudget, Size: resp.ContentLength, Err: fmt.Errorf("the file's %d bytes do not fit in what is left of the run's byte budget", resp.ContentLength)}
	}
	res, n, err := f.copyBody(resp, w, budget)
	if resp.ContentLength > 0 {
		// The bytes read count, whether the file is stored or not (they
		// were downloaded); a body that ended early gives the rest back.
		budget.give(resp.ContentLength - n)
	}
	if err != nil {
		return nil, bodyError(d.Err(err))
	}
	return res, nil
}

// copyBody copies the body to w through one pooled buffer, checking the
// size limit, the budget (when the size was not announced) and that the
// file is whole. It returns the bytes read too.
func (f *Fetcher) copyBody(resp *http.Response, w io.Writer, budget *Budget) (*Result, int64, error) {
	bufp := buffers.Get().(*[]byte)
	defer buffers.Put(bufp)
	buf := *bufp
	var check wholeFile
	var n int64
	for {
		k, rerr := resp.Body.Read(buf)
		if k > 0 {
			n += int64(k)
			if f.MaxSize > 0 && n > f.MaxSize {
				return nil, n, &Error{Status: TooLarge, Size: n, Err: fmt.Errorf("the file is larger than the largest file size, %d bytes", f.MaxSize)}
			}
			if resp.ContentLength <= 0 && !budget.take(int64(k)) {
				return nil, n, &Error{Status: OverBudget, Err: errors.New("the run's byte budget was spent while the file was read")}
			}
			check.Write(buf[:k])
			if _, err := w.Write(buf[:k]); err != nil {
				return nil, n, fmt.Errorf("writing the file: %w", err)
			}
		}
		if errors.Is(rerr, io.EOF) {
			break
		}
		if rerr != nil {
			return nil, n, bodyError(rerr)
		}
	}
	if !check.whole() {
		return nil, n, &Error{Status: Transient, HTTPStatus: resp.StatusCode, Err: fmt.Errorf("the body ended after %d bytes, before the end of the file it began", n)}
	}
	ct := contentType(resp.Header.Get("Content-Type"), &check)
	if !isMedia(ct) {
		// An error page or a captive portal's, answered 200.
		return nil, n, &Error{Status: Transient, HTTPStatus: resp.StatusCode, Err: fmt.Errorf("the server sent %s, not a photo or a video", ct)}
	}
	return &Result{Size: n, ContentType: ct}, n, nil
}

func isMedia(contentType string) bool {
	return strings.HasPrefix(contentType, "image/") || strings.HasPrefix(contentType, "video/")
}

var buffers = sync.Pool{New: func() any { b := make([]byte, 256<<10); return &b }}

// contentType is the Content-Type the server gave, when it is a media type,
// else the one the file's first bytes say.
func contentType(header string, w *wholeFile) string {
	mt, _, err := mime.ParseMediaType(header)
	if err == nil && isMedia(mt) {
		return mt
	}
	ct, _, _ := mime.ParseMediaType(http.DetectContentType(w.head))
	return ct
}

func statusError(code int) error {
	switch {
	case code == http.StatusOK:
		return nil
	case code == http.StatusNotFound || code == http.StatusGone:
		return &Error{Status: Gone, HTTPStatus: code}
	case code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusUnavailableForLegalReasons:
		return &Error{Status: Forbidden, HTTPStatus: code}
	case code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500:
		return &Error{Status: Transient, HTTPStatus: code}
	}
	return &Error{Status: Failed, HTTPStatus: code}
}

// requestError is the error of a request that got no answer: a redirect
// refused, or a transient fault (no connection, a timeout).
func requestError(err error) error {
	if fe, ok := errors.AsType[*Error](err); ok {
		return fe
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err // it repeats the URL
	}
	return &Error{Status: Transient, Err: err}
}

// bodyError is the error of a body that could not be read whole.
func bodyError(err error) error {
	if fe, ok := errors.AsType[*Error](err); ok {
		return fe
	}
	if te, ok := errors.AsType[*client.TimeoutError](err); ok {
		return &Error{Status: Transient, Err: te}
	}
	return &Error{Status: Transient, Err: fmt.Errorf("reading the file: %w", err)}
}

func oneLine(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Budget is a run's byte budget, shared by its fetches. A nil *Budget has
// no limit. Safe for concurrent use.
type Budget struct {
	mu   sync.Mutex
	left int64
}

// NewBudget returns a budget of n bytes; nil (no limit) for n <= 0.
func NewBudget(n int64) *Budget {
	if n <= 0 {
		return nil
	}
	return &Budget{left: n}
}

// take spends n bytes, when they are left.
func (b *Budget) take(n int64) bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if n > b.left {
		b.left = 0 // what is left is too little for this file; the next ones wait for the next run
		return false
	}
	b.left -= n
	return true
}

func (b *Budget) give(n int64) {
	if b == nil || n <= 0 {
		return
	}
	b.mu.Lock()
	b.left += n
	b.mu.Unlock()
}
