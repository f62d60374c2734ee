package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// Sentinel errors, matched with errors.Is; the concrete errors carry the details.
var (
	ErrInvalidRequest  = errors.New("invalid request")  // a 400
	ErrUnauthorized    = errors.New("unauthorized")     // a 401: an expired, revoked or bad token
	ErrCreditsDepleted = errors.New("credits depleted") // a 402 (title "CreditsDepleted"): never retried
	ErrForbidden       = errors.New("forbidden")        // a 403
	// ErrAppOnlyToken is a 403 "Unsupported Authentication" on a user-context
	// endpoint, ErrUserContextToken one on a compliance job's.
	ErrAppOnlyToken      = errors.New("app-only token where a user-context token is required")
	ErrUserContextToken  = errors.New("user-context token where an app-only bearer token is required")
	ErrClientNotEnrolled = errors.New("developer app not enrolled in a project") // a 403 "Client Forbidden"
	ErrNotFound          = errors.New("not found")                               // a 404
	ErrServer            = errors.New("server error")                            // a 5xx, after the retries
	// ErrRateLimited is a 429, or a request the client's own budget refused.
	ErrRateLimited = errors.New("rate limited")
	// ErrMalformedResponse is a body not read in full, or not the operation's
	// JSON; ErrResponseTooLarge one over the size cap.
	ErrMalformedResponse = errors.New("malformed response")
	ErrResponseTooLarge  = errors.New("response body too large")
	ErrInvalidInput      = errors.New("invalid input") // an argument refused before anything was sent
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

// ErrorItem is one element of the "errors" of an error body: X's legacy
// {"code":88,"message":"..."}, a 400's {"parameters":{...}}, or a problem.
type ErrorItem struct {
	Code       int
	Message    string
	Parameters map[string][]string // the query parameters refused, and their values
	Title      string
	Detail     string
	Type       string
}

// String is the item on one line: "expansions=[author_id]: The ...".
func (it ErrorItem) String() string {
	var parts []string
	if len(it.Parameters) > 0 {
		var ps []string
		for _, n := range slices.Sorted(maps.Keys(it.Parameters)) {
			ps = append(ps, oneLine(n, 40)+"=["+oneLine(strings.Join(it.Parameters[n], ","), 100)+"]")
		}
		parts = append(parts, strings.Join(ps, " "))
	}
	if it.Code != 0 {
		parts = append(parts, "code "+strconv.Itoa(it.Code))
	}
	for _, s := range []string{it.Title, it.Message, it.Detail} {
		if s = oneLine(s, 200); s != "" && !slices.Contains(parts, s) {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, ": ")
}

// APIError is an error status (other than 429) from the API. errors.Is
// matches the sentinels by status and title, never by the host inside Type.
type APIError struct {
	Response  *http.Response // its body read and closed
	Operation Operation
	Status    int
	Title     string
	Detail    string
	Type      string      // the problem type URI, e.g. https://api.x.com/2/problems/invalid-request
	Reason    string      // the problem's "reason", e.g. client-not-enrolled
	Errors    []ErrorItem // the body's "errors"
	Hint      string      // what to do about it, when the client knows
}

func (e *APIError) Error() string {
	s := fmt.Sprintf("%s%s: %d", errPrefix, e.Operation, e.Status)
	if t := http.StatusText(e.Status); t != "" {
		s += " " + t
	}
	if msg := e.message(); msg != "" {
		s += ": " + msg
	}
	if e.Hint != "" {
		s += " (hint: " + e.Hint + ")"
	}
	return s
}

// message is "title: detail", then what the "errors" say.
func (e *APIError) message() string {
	title, detail := oneLine(e.Title, 120), oneLine(e.Detail, 300)
	var parts []string
	if title != "" && !strings.EqualFold(title, http.StatusText(e.Status)) {
		parts = append(parts, title)
	}
	// Some servers repeat an element of "errors" as the detail.
	said := slices.ContainsFunc(e.Errors, func(it ErrorItem) bool { return it.Message == e.Detail || it.Detail == e.Detail })
	if detail != "" && !strings.EqualFold(detail, title) && !strings.EqualFold(detail, http.StatusText(e.Status)) && !said {
		parts = append(parts, detail)
	}
	if e.Reason != "" && title == "" && detail == "" {
		parts = append(parts, "reason "+oneLine(e.Reason, 60))
	}
	if items := itemsLine(e.Errors); items != "" {
		parts = append(parts, items)
	}
	return strings.Join(parts, ": ")
}

// itemsLine is what the first three items say, one after the other.
func itemsLine[T fmt.Stringer](items []T) string {
	var out []string
	for i, it := range items {
		if i == 3 {
			out = append(out, fmt.Sprintf("and %d more", len(items)-3))
			break
		}
		if s := it.String(); s != "" {
			out = append(out, s)
		}
	}
	return strings.Join(out, "; ")
}

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
		return e.Status == http.StatusForbidden && titleIs(e.Title, "Unsupported Authentication") && !appOnly(e.Operation)
	case ErrUserContextToken:
		return e.Status == http.StatusForbidden && titleIs(e.Title, "Unsupported Authentication") && appOnly(e.Operation)
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

func titleIs(got, want string) bool {
	return strings.EqualFold(strings.TrimSpace(got), want)
}

// RateLimitError is a 429, or a request the client's budget refused to send
// (the window used up, its reset past the wait cap).
type RateLimitError struct {
	Rate      Rate // the window as last known: Reset is zero when unknown
	Operation Operation
	Response  *http.Response // the 429 (body read and closed); nil for Budget
	Waited    bool           // the call already waited for a reset
	Budget    bool           // nothing was sent: the client's budget refused
	Wait      time.Duration  // until the reset (zero when unknown)
	Message   string         // what the server said, if anything
}

func (e *RateLimitError) Error() string {
	s := errPrefix + string(e.Operation)
	switch {
	case e.Budget && e.Rate.Limit > 0:
		s += fmt.Sprintf(": request budget for this window used up (%d requests), not sent", e.Rate.Limit)
	case e.Budget:
		s += ": request budget for this window used up, not sent"
	case e.Message != "":
		s += ": 429 Too Many Requests: " + oneLine(e.Message, 200)
	default:
		s += ": 429 Too Many Requests"
	}
	switch {
	case e.Rate.Reset.IsZero():
		s += "; reset time unknown"
	case e.Wait > 0:
		s += fmt.Sprintf("; window resets at %s (in %s)", e.Rate.Reset.UTC().Format(time.RFC3339), e.Wait.Round(time.Second))
	default:
		s += "; window resets at " + e.Rate.Reset.UTC().Format(time.RFC3339)
	}
	if e.Waited {
		s += "; already waited once"
	}
	return s
}

func (e *RateLimitError) Is(target error) bool { return target == ErrRateLimited }

// InputError is an argument rejected before anything was sent.
type InputError struct {
	Operation Operation
	Parameter string // e.g. "user id", "pagination_token", "max_results"
	Value     string // the bad value, when it is at most maxQuoted bytes (a longer one may be a credential)
	Length    int
	Reason    string
}

const maxQuoted = 24

func newInputError(op Operation, param, value, reason string) *InputError {
	e := &InputError{Operation: op, Parameter: param, Length: len(value), Reason: reason}
	if len(value) <= maxQuoted {
		e.Value = value
	}
	return e
}

func (e *InputError) Error() string {
	return fmt.Sprintf("%s%s: invalid %s %s: %s", errPrefix, e.Operation, e.Parameter, shown(e.Value, e.Length), e.Reason)
}

// shown is a value of n bytes as an error may show it: quoted when short,
// else its length only (it may be a credential a server echoes).
func shown(v string, n int) string {
	if n > maxQuoted {
		return fmt.Sprintf("(%d characters, not shown)", n)
	}
	return strconv.Quote(v)
}

func (e *InputError) Is(target error) bool { return target == ErrInvalidInput }

// MalformedResponseError is a body not read in full (cut short, over the
// cap) or not decoded as the operation's JSON.
type MalformedResponseError struct {
	Operation  Operation
	Status     int
	Response   *http.Response // its body read and closed
	Reason     string         // e.g. "body was not valid JSON"
	Err        error
	unreadable bool // cut short or not JSON: worth asking for again, unlike a wrong shape
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

// ErrorsOnlyError is a 2xx whose body holds only "errors", as X answers an
// unknown user id: not billed, not retried.
type ErrorsOnlyError struct {
	Operation Operation
	Status    int
	Response  *http.Response // its body read and closed
	Errors    []PartialError
}

func (e *ErrorsOnlyError) Error() string {
	s := fmt.Sprintf("%s%s: %d response with errors and no data", errPrefix, e.Operation, e.Status)
	if items := itemsLine(e.Errors); items != "" {
		s += ": " + items
	}
	return s
}

// Is matches ErrNotFound when an error says a resource was not found.
func (e *ErrorsOnlyError) Is(target error) bool {
	return target == ErrNotFound && slices.ContainsFunc(e.Errors, func(pe PartialError) bool {
		return titleIs(pe.Title, "Not Found Error") || strings.HasSuffix(pe.Type, "/problems/resource-not-found")
	})
}

// parse reads the error body's shapes into e. A body that is not JSON
// leaves it empty: the status still classifies the error.
func (e *APIError) parse(body []byte) {
	var p struct {
		Title  string `json:"title"`
		Detail string `json:"detail"`
		Type   string `json:"type"`
		Reason string `json:"reason"`
		Errors []struct {
			Code       json.RawMessage            `json:"code"`
			Message    string                     `json:"message"`
			Parameters map[string]json.RawMessage `json:"parameters"`
			Title      string                     `json:"title"`
			Detail     string                     `json:"detail"`
			Type       string                     `json:"type"`
		} `json:"errors"`
	}
	if json.Unmarshal(body, &p) != nil {
		return
	}
	e.Title, e.Detail, e.Type, e.Reason = p.Title, p.Detail, p.Type, p.Reason
	for _, pe := range p.Errors {
		if e.Title == "" && e.Detail == "" && pe.Message == "" && len(pe.Parameters) == 0 && len(pe.Code) == 0 {
			// A problem-details object in "errors" stands for the whole body.
			e.Title, e.Detail, e.Type = pe.Title, pe.Detail, pe.Type
			continue
		}
		code, _ := strconv.Atoi(strings.Trim(string(pe.Code), `"`))
		it := ErrorItem{Code: code, Message: pe.Message, Title: pe.Title, Detail: pe.Detail, Type: pe.Type}
		for name, raw := range pe.Parameters {
			if it.Parameters == nil {
				it.Parameters = map[string][]string{}
			}
			it.Parameters[name] = parameterValues(raw)
		}
		e.Errors = append(e.Errors, it)
	}
}

// parameterValues reads a refused parameter's values: a list of strings as
// X sends it, a single string, or else the JSON text.
func parameterValues(raw json.RawMessage) []string {
	var list []string
	if json.Unmarshal(raw, &list) == nil {
		return list
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return []string{one}
	}
	return []string{string(raw)}
}

func newAPIError(op Operation, resp *http.Response, body []byte) *APIError {
	e := &APIError{Response: resp, Operation: op, Status: resp.StatusCode}
	e.parse(body)
	switch {
	case e.Is(ErrAppOnlyToken):
		e.Hint = HintAppOnlyToken
	case e.Is(ErrUserContextToken):
		e.Hint = HintUserContextToken
	case e.Is(ErrUnauthorized) && appOnly(op):
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
	var p APIError
	p.parse(body)
	parts := slices.Compact([]string{p.Title, p.Detail, itemsLine(p.Errors)}) // a detail that repeats the title once
	parts = slices.DeleteFunc(parts, func(s string) bool { return s == "" })
	return &RateLimitError{Rate: rate, Operation: op, Response: resp, Waited: waited, Wait: wait, Message: strings.Join(parts, ": ")}
}

// oneLine makes s safe for a one-line message: runs of control characters
// and spaces become one space, and it is cut to at most max runes.
func oneLine(s string, max int) string {
	s = strings.Join(strings.FieldsFunc(s, func(r rune) bool {
		return unicode.IsControl(r) || unicode.IsSpace(r) || r == utf8.RuneError
	}), " ")
	if r := []rune(s); len(r) > max {
		return string(r[:max]) + "…"
	}
	return s
}
