// Package bearer sends a bearer token with HTTP requests, and says where it
// may go: over https, or over plain http only to a loopback host (CheckURL).
package bearer

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"unicode"
)

// Loopback reports whether host (without port) is "localhost" or a
// loopback IP address: the only hosts plain http may carry a credential to.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// CheckURL checks a URL that requests carry a credential to: absolute,
// https (plain http only to a loopback host), no user info, query, fragment
// or white space. Its errors name the URL (user info masked) first.
func CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("does not parse: %w", errors.Unwrap(err)) // url.Error repeats the URL, user info and all
	}
	if u.User != nil {
		return nil, fmt.Errorf("%s must not carry a user name or password", u.Redacted())
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https" || u.Host == "":
		return nil, fmt.Errorf("%q is not an absolute http(s) URL", raw)
	case u.Scheme == "http" && !Loopback(u.Hostname()):
		return nil, fmt.Errorf("%q must use https: plain http, allowed only for a loopback host, would carry credentials in clear", raw)
	case strings.ContainsFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		return nil, fmt.Errorf("%q holds white space", raw)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return nil, fmt.Errorf("%q must not have a query or fragment", raw)
	}
	return u, nil
}

// Transport adds "Authorization: Bearer <token>" to each request it sends
// through Base (nil: http.DefaultTransport), never to the caller's request.
// When the API answers 401 and Renew is set, it asks Renew for another
// token and sends the request again, once, if its body can be replayed (no
// body, or GetBody set, as http.NewRequest does for in-memory bodies).
type Transport struct {
	Base http.RoundTripper
	// Token is the token to send.
	Token func(ctx context.Context) (string, error)
	// Renew is given the token the API refused and returns another, or the
	// same one when there is none to try.
	Renew func(ctx context.Context, refused string) (string, error)
}

func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	token, err := t.Token(ctx)
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, err
	}
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
	resp, err := t.send(req, req.Body, token)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || !replayable || t.Renew == nil {
		return resp, err
	}
	renewed, err := t.Renew(ctx, token)
	if err != nil {
		drainAndClose(resp.Body)
		return nil, err
	}
	if renewed == token {
		return resp, nil // nothing new to try
	}
	body := req.Body
	if body != nil && body != http.NoBody {
		if body, err = req.GetBody(); err != nil {
			return resp, nil // cannot replay: give the caller the 401
		}
	}
	drainAndClose(resp.Body)
	return t.send(req, body, renewed)
}

// send sends a copy of req with body and token; the response names req, as
// the caller sent it.
func (t *Transport) send(req *http.Request, body io.ReadCloser, token string) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.Body = body
	r.Header.Set("Authorization", "Bearer "+token)
	resp, err := cmp.Or(t.Base, http.DefaultTransport).RoundTrip(r)
	if resp != nil {
		resp.Request = req
	}
	return resp, err
}

func drainAndClose(body io.ReadCloser) {
	if body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, body, 64<<10)
	_ = body.Close()
}
