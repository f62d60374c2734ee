package auth

import (
	"context"
	"errors"
	"fmt"

	"net/url"
	"strings"
	"unicode"

	"golang.org/x/oauth2"
)

// ErrLoginRequired means the stored credentials can no longer be used: only a login fixes it.
var ErrLoginRequired = errors.New("login required: run `cq-source-x login` again")

const redacted = "[redacted]"

// TokenEndpointError is a failed call to the token endpoint. Its message never contains a token,
// an authorization code or the client secret.
type TokenEndpointError struct {
	Op          string // "refresh" or "exchange"
	StatusCode  int    // HTTP status; 0 when no response was received
	Code        string // OAuth "error", e.g. "invalid_request"
	Description string // OAuth "error_description", sanitised and truncated
	// Transient failures may go away by themselves (network, 429, 5xx, an unparseable 2xx).
	Transient bool
	// LoginRequired: X rejected the grant; errors.Is(err, ErrLoginRequired) holds.
	LoginRequired bool
	Hint          string // appended to the message (e.g. that an earlier refresh was interrupted)
	err           error  // sanitised cause (network errors); never a *oauth2.RetrieveError
}

func (e *TokenEndpointError) Error() string {
	s := "auth: token endpoint " + e.Op + " failed"
	if e.StatusCode != 0 {
		s += fmt.Sprintf(": HTTP %d", e.StatusCode)
	}
	if e.Code != "" {
		s += " " + e.Code
	}
	if e.Description != "" {
		s += " (" + e.Description + ")"
	}
	if e.err != nil {
		s += ": " + e.err.Error()
	}
	endpoint, where := "token endpoint", "oauth.token_url in a spec, --token-url"
	if e.Op == "revoke" {
		endpoint, where = "revocation endpoint", "--revoke-url"
	}
	switch {
	case e.LoginRequired && e.Op == "refresh":
		s += ": X no longer accepts the stored refresh token (refresh tokens are single-use and rotate on every refresh; it was spent, revoked or belongs to another app)"
	case e.LoginRequired:
		s += ": X rejected the authorization code (codes are single-use and live 30 seconds)"
	case e.StatusCode == 404 || e.StatusCode == 405:
		s += fmt.Sprintf(": there is no %s at that URL: check it (%s)", endpoint, where)
	case e.Transient && e.StatusCode/100 == 2:
		s += fmt.Sprintf(": the answer is not a token response: check the %s's URL (%s)", endpoint, where)
	case e.Transient && e.StatusCode == 0:
		s += fmt.Sprintf(" (no answer: check the %s's URL (%s) and the network; an outage passes by itself)", endpoint, where)
	case e.Transient:
		s += " (transient; try again later)"
	case e.Code == "invalid_client" || e.Code == "unauthorized_client":
		s += ": check the client id and secret (a confidential app needs its client secret; a public app must have none)"
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	if e.LoginRequired {
		s += ": " + ErrLoginRequired.Error()
	}
	return s
}

// Unwrap exposes ErrLoginRequired (when LoginRequired) and the sanitised network cause.
func (e *TokenEndpointError) Unwrap() []error {
	var errs []error
	if e.LoginRequired {
		errs = append(errs, ErrLoginRequired)
	}
	if e.err != nil {
		errs = append(errs, e.err)
	}
	return errs
}

func (e *TokenEndpointError) Temporary() bool { return e.Transient }

// tokenEndpointError turns an error of golang.org/x/oauth2 into one whose text holds no secret.
func tokenEndpointError(op string, err error, secrets ...string) *TokenEndpointError {
	e := &TokenEndpointError{Op: op}
	var re *oauth2.RetrieveError
	switch {
	case errors.As(err, &re):
		if re.Response != nil {
			e.StatusCode = re.Response.StatusCode
		}
		e.Code = sanitize(re.ErrorCode, 64, secrets)
		e.Description = sanitize(re.ErrorDescription, 200, secrets)
		// A 2xx carrying an "error" field is unusual: its outcome is unknown.
		e.Transient = e.StatusCode == 429 || e.StatusCode >= 500 || e.StatusCode/100 == 2
		e.LoginRequired = op != "revoke" && (e.StatusCode == 400 || e.StatusCode == 401) && isGrantRejection(re)
	default: // network errors, timeouts, unparseable bodies
		e.Transient = true
		e.err = sanitizedError(err, secrets)
	}
	return e
}

func isGrantRejection(re *oauth2.RetrieveError) bool {
	return re.ErrorCode == "invalid_grant" || re.ErrorCode == "invalid_request" ||
		strings.Contains(strings.ToLower(re.ErrorDescription), "token was invalid")
}

// netError keeps whether a network error is context.DeadlineExceeded or context.Canceled while
// its message is sanitised.
type netError struct {
	msg   string
	cause error
}

func (e *netError) Error() string { return e.msg }
func (e *netError) Unwrap() error { // never the original chain, whose text may hold request data
	switch {
	case errors.Is(e.cause, context.DeadlineExceeded):
		return context.DeadlineExceeded
	case errors.Is(e.cause, context.Canceled):
		return context.Canceled
	}
	return nil
}

func sanitizedError(err error, secrets []string) error {
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) { // keep the verb and the host of the URL only
		host := ""
		if u, perr := url.Parse(ue.URL); perr == nil {
			host = u.Host
		}
		msg = fmt.Sprintf("%s %s: %v", ue.Op, host, ue.Err)
	}
	return &netError{msg: sanitize(msg, 300, secrets), cause: err}
}

// sanitize removes secrets and control characters from text from the network and truncates it.
func sanitize(s string, max int, secrets []string) string {
	for _, sec := range secrets {
		if len(sec) >= 4 {
			s = strings.ReplaceAll(s, sec, redacted)
		}
	}
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if len(s) > max {
		s = strings.ToValidUTF8(s[:max], "") + "…" // a rune cut in two is dropped
	}
	return strings.TrimSpace(s)
}

// redactString shows whether a secret is set without showing it.
func redactString(s string) string {
	if s == "" {
		return `""`
	}
	return redacted
}
