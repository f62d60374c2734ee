package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Sentinel errors. Match them with errors.Is; the concrete errors (*APIError,
// *RateLimitError, *InputError, *MalformedResponseError) carry the details.
var (
	// ErrInvalidRequest: the server answered 400.
	ErrInvalidRequest = errors.New("invalid request")
	// ErrUnauthorized: the server answered 401 (expired, revoked or bad token).
	ErrUnauthorized = errors.New("unauthorized")
	// ErrCreditsDepleted: the server answered 402 (title "CreditsDepleted").
	// Terminal: the client never retries it.
	ErrCreditsDepleted = errors.New("credits depleted")
	// ErrForbidden: the server answered 403.
	ErrForbidden = errors.New("forbidden")
	// ErrAppOnlyToken: a 403 "Unsupported Authentication", the answer to an
	// app-only (application context) token on a user-context endpoint.
	ErrAppOnlyToken = errors.New("app-only token where a user-context token is required")
	// ErrUserContextToken: a 403 "Unsupported Authentication" from an
	// app-only operation (the compliance jobs): a user's token where the
	// app's bearer token is required.
	ErrUserContextToken = errors.New("user-context token where an app-only bearer token is required")
	// ErrClientNotEnrolled: a 403 "Client Forbidden" (reason
	// client-not-enrolled): the developer app is not attached to a project.
	ErrClientNotEnrolled = errors.New("developer app not enrolled in a project")
	// ErrNotFound: the server answered 404.
	ErrNotFound = errors.New("not found")
	// ErrServer: the server answered 5xx (after the client's retries).
	ErrServer = errors.New("server error")
	// ErrRateLimited: a *RateLimitError, either a 429 from the server or a
	// request the client's own budget refused to send.
	ErrRateLimited = errors.New("rate limited")
	// ErrMalformedResponse: a response body that could not be read in full or
	// was not the JSON the operation returns.
	ErrMalformedResponse = errors.New("malformed response")
	// ErrResponseTooLarge: a response body larger than the configured cap
	// (WithMaxResponseBytes). Not retried.
	ErrResponseTooLarge = errors.New("response body too large")
	// ErrInvalidInput: an argument rejected before any request was sent.
	ErrInvalidInput = errors.New("invalid input")
)

// Hints attached to APIError.Hint.
const (
	HintAppOnlyToken      = "bookmarks need a user-context token; run `cq-source-x login`"
	HintClientNotEnrolled = "the developer app is not attached to a project; attach it to a project in the X developer portal (developer.x.com) and retry"
	HintUnauthorized      = "the access token is expired, revoked or invalid; run `cq-source-x login` again if refreshing does not help"
	HintCreditsDepleted   = "the developer account is out of credits; add credits in the X developer portal (requests are refused until then)"
	// Hints of the app-only operations (compliance jobs).
	HintUserContextToken = "compliance jobs need the app's app-only bearer token, not a user's token: copy the Bearer Token from the X developer portal (developer.x.com), your app's Keys and tokens page"
	HintAppUnauthorized  = "the app-only bearer token is invalid, or was regenerated: copy the Bearer Token again from the X developer portal (developer.x.com), your app's Keys and tokens page"
)

const errPrefix = "x api: "

// LegacyError is one element of the legacy error body
// {"errors":[{"code":88,"message":"Rate limit exceeded"}]}.
type LegacyError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// APIError is an error status (other than 429) from the API. Both body shapes
// are parsed: problem details {"title","detail","type","status"} and the
// legacy {"errors":[{"code","message"}]}. Match it with errors.Is against the
// sentinels (ErrUnauthorized, ErrForbidden, ErrAppOnlyToken, ...); matching
// uses the status code and the title, never the host inside Type.
type APIError struct {
	// Response is the HTTP response; its body has been read and closed.
	Response  *http.Response
	Operation Operation
	Status    int
	Title     string
	Detail    string
	// Type is the problem type URI, e.g.
	// https://api.x.com/2/problems/invalid-request or about:blank.
	Type string
	// Reason is the problem's "reason" member when present (e.g. client-not-enrolled).
	Reason string
	Legacy []LegacyError
	// Hint says what to do about it, when the client knows.
	Hint string
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString(errPrefix)
	b.WriteString(string(e.Operation))
	b.WriteString(": ")
	b.WriteString(strconv.Itoa(e.Status))
	if t := http.StatusText(e.Status); t != "" {
		b.WriteByte(' ')
		b.WriteString(t)
	}
	if msg := e.message(); msg != "" {
		b.WriteString(": ")
		b.WriteString(msg)
	}
	if e.Hint != "" {
		b.WriteString(" (hint: ")
		b.WriteString(e.Hint)
		b.WriteByte(')')
	}
	return b.String()
}

// message is "title: detail" (either may be missing) or the legacy messages.
func (e *APIError) message() string {
	title, detail := oneLine(e.Title, 120), oneLine(e.Detail, 300)
	var parts []string
	if title != "" && !strings.EqualFold(title, http.StatusText(e.Status)) {
		parts = append(parts, title)
	}
	if detail != "" && !strings.EqualFold(detail, title) && !strings.EqualFold(detail, http.StatusText(e.Status)) {
		parts = append(parts, detail)
	}
	for i, l := range e.Legacy {
		if i == 3 {
			parts = append(parts, fmt.Sprintf("and %d more", len(e.Legacy)-3))
			break
		}
		if l.Code != 0 {
			parts = append(parts, fmt.Sprintf("code %d: %s", l.Code, oneLine(l.Message, 200)))
		} else {
			parts = append(parts, oneLine(l.Message, 200))
		}
	}
	if e.Reason != "" && title == "" && detail == "" {
		parts = append(parts, "reason "+oneLine(e.Reason, 60))
	}
	return strings.Join(parts, ": ")
}

// Is matches the sentinels by status and title.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrInvalidRequest:
		return e.Status == http.StatusBadRequest
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized
	case ErrCreditsDepleted:
		return e.Status == http.StatusPaymentRequired || titleIs(e.Title, "CreditsDepleted")
	case ErrForbidden:
		return e.Status == http.StatusForbidden
	case ErrAppOnlyToken:
		return e.Status == http.StatusForbidden && titleIs(e.Title, "Unsupported Authentication") && !e.Operation.appOnly()
	case ErrUserContextToken:
		return e.Status == http.StatusForbidden && titleIs(e.Title, "Unsupported Authentication") && e.Operation.appOnly()
	case ErrClientNotEnrolled:
		return e.Status == http.StatusForbidden &&
			(titleIs(e.Title, "Client Forbidden") || titleIs(e.Reason, "client-not-enrolled"))
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrServer:
		return e.Status >= 500 && e.Status <= 599
	}
	return false
}

// Temporary reports whether retrying later may succeed (5xx).
func (e *APIError) Temporary() bool { return e.Status >= 500 }

func titleIs(got, want string) bool {
	return strings.EqualFold(strings.TrimSpace(got), want)
}

// RateLimitError is a 429 from the server, or a request the client's budget
// refused to send because the per-user window was used up and its reset was
// further away than the wait cap (Response is nil then). errors.Is(err,
// ErrRateLimited) holds for both.
type RateLimitError struct {
	// Rate is the window as last known: Reset is when requests may be sent
	// again (zero when unknown).
	Rate      Rate
	Operation Operation
	// Response is the 429 response (body read and closed); nil when the
	// client's own budget refused to send.
	Response *http.Response
	// Waited reports whether the client already waited for a reset during
	// this call before giving up.
	Waited bool
	// Budget is true when no request was sent: the client's own budget said
	// the window was used up.
	Budget bool
	// Wait is how long the caller would have to wait for the reset (zero when unknown).
	Wait time.Duration
	// Message is the server's title/detail or legacy message, if any.
	Message string
}

func (e *RateLimitError) Error() string {
	var b strings.Builder
	b.WriteString(errPrefix)
	b.WriteString(string(e.Operation))
	if e.Budget {
		b.WriteString(": request budget for this window used up")
		if e.Rate.Limit > 0 {
			fmt.Fprintf(&b, " (%d requests)", e.Rate.Limit)
		}
		b.WriteString(", not sent")
	} else {
		b.WriteString(": 429 Too Many Requests")
		if e.Message != "" {
			b.WriteString(": ")
			b.WriteString(oneLine(e.Message, 200))
		}
	}
	if !e.Rate.Reset.IsZero() {
		fmt.Fprintf(&b, "; window resets at %s", e.Rate.Reset.UTC().Format(time.RFC3339))
		if e.Wait > 0 {
			fmt.Fprintf(&b, " (in %s)", e.Wait.Round(time.Second))
		}
	} else {
		b.WriteString("; reset time unknown")
	}
	if e.Waited {
		b.WriteString("; already waited once")
	}
	return b.String()
}

// Is matches ErrRateLimited.
func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// InputError is an argument rejected before anything was sent.
type InputError struct {
	Operation Operation
	Parameter string // e.g. "user id", "pagination_token", "max_results"
	// Value is the bad value when it is short (at most maxQuoted bytes);
	// longer values are left out, since a long string in the wrong argument
	// may well be a credential, and only Length is given.
	Value  string
	Length int
	Reason string
}

// maxQuoted is the longest bad value an InputError repeats.
const maxQuoted = 24

func newInputError(op Operation, param, value, reason string) *InputError {
	e := &InputError{Operation: op, Parameter: param, Length: len(value), Reason: reason}
	if len(value) <= maxQuoted {
		e.Value = value
	}
	return e
}

func (e *InputError) Error() string {
	shown := strconv.Quote(e.Value)
	if e.Length > maxQuoted {
		shown = fmt.Sprintf("(%d characters, not shown)", e.Length)
	}
	return fmt.Sprintf("%s%s: invalid %s %s: %s", errPrefix, e.Operation, e.Parameter, shown, e.Reason)
}

// Is matches ErrInvalidInput.
func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// MalformedResponseError is a response body that could not be read in full
// (cut short, or over the size cap) or did not decode as the operation's JSON.
type MalformedResponseError struct {
	Operation Operation
	Status    int
	// Response is the HTTP response; its body has been read and closed.
	Response *http.Response
	// Reason says what was wrong, e.g. "body was not valid JSON".
	Reason string
	Err    error
}

func (e *MalformedResponseError) Error() string {
	s := fmt.Sprintf("%s%s: %d response: %s", errPrefix, e.Operation, e.Status, e.Reason)
	if e.Err != nil {
		s += ": " + oneLine(e.Err.Error(), 200)
	}
	return s
}

func (e *MalformedResponseError) Unwrap() error { return e.Err }

// Is matches ErrMalformedResponse (and ErrResponseTooLarge through Unwrap).
func (e *MalformedResponseError) Is(target error) bool { return target == ErrMalformedResponse }

// problemBody is the union of the two error body shapes.
type problemBody struct {
	Title  string          `json:"title"`
	Detail string          `json:"detail"`
	Type   string          `json:"type"`
	Status json.RawMessage `json:"status"`
	Reason string          `json:"reason"`
	Errors []struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
		Title   string          `json:"title"`
		Detail  string          `json:"detail"`
		Type    string          `json:"type"`
	} `json:"errors"`
}

// parseProblem reads either error body shape. It never fails: a body that is
// not JSON yields an empty problem (the status still classifies the error).
func parseProblem(body []byte) (title, detail, typ, reason string, legacy []LegacyError) {
	var p problemBody
	if len(body) == 0 || json.Unmarshal(body, &p) != nil {
		return "", "", "", "", nil
	}
	title, detail, typ, reason = p.Title, p.Detail, p.Type, p.Reason
	for _, e := range p.Errors {
		if e.Message != "" || len(e.Code) > 0 {
			code, _ := strconv.Atoi(strings.Trim(string(e.Code), `"`))
			legacy = append(legacy, LegacyError{Code: code, Message: e.Message})
			continue
		}
		// A problem-details object inside "errors" (seen on some endpoints):
		// use the first as the title/detail when the top level has none.
		if title == "" && detail == "" {
			title, detail, typ = e.Title, e.Detail, e.Type
		}
	}
	return
}

func newAPIError(op Operation, resp *http.Response, body []byte) *APIError {
	e := &APIError{Response: resp, Operation: op, Status: resp.StatusCode}
	e.Title, e.Detail, e.Type, e.Reason, e.Legacy = parseProblem(body)
	switch {
	case e.Is(ErrAppOnlyToken):
		e.Hint = HintAppOnlyToken
	case e.Is(ErrUserContextToken):
		e.Hint = HintUserContextToken
	case e.Is(ErrUnauthorized) && op.appOnly():
		e.Hint = HintAppUnauthorized
	case e.Is(ErrClientNotEnrolled):
		e.Hint = HintClientNotEnrolled
	case e.Is(ErrCreditsDepleted):
		e.Hint = HintCreditsDepleted
	case e.Is(ErrUnauthorized):
		e.Hint = HintUnauthorized
	}
	return e
}

func newRateLimitError(op Operation, resp *http.Response, body []byte, rate Rate, wait time.Duration, waited bool) *RateLimitError {
	title, detail, _, _, legacy := parseProblem(body)
	var parts []string
	if title != "" {
		parts = append(parts, title)
	}
	if detail != "" && detail != title {
		parts = append(parts, detail)
	}
	for _, l := range legacy {
		if l.Code != 0 {
			parts = append(parts, fmt.Sprintf("code %d: %s", l.Code, l.Message))
		} else {
			parts = append(parts, l.Message)
		}
	}
	return &RateLimitError{
		Rate: rate, Operation: op, Response: resp, Waited: waited, Wait: wait,
		Message: strings.Join(parts, ": "),
	}
}

// oneLine makes s safe for a one-line message: control characters become
// spaces, runs of spaces collapse, and it is cut to at most max runes.
func oneLine(s string, max int) string {
	if s == "" {
		return s
	}
	var b strings.Builder
	space := false
	n := 0
	for _, r := range s {
		if unicode.IsControl(r) || unicode.IsSpace(r) || r == utf8.RuneError {
			if !space && b.Len() > 0 {
				b.WriteByte(' ')
				n++
			}
			space = true
			continue
		}
		space = false
		if n >= max {
			b.WriteString("…")
			return strings.TrimSpace(b.String())
		}
		b.WriteRune(r)
		n++
	}
	return strings.TrimSpace(b.String())
}
