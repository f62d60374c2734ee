// Package bearer sends a bearer token with HTTP requests, and says where
// it may go: over https, or over plain http only to a loopback host (a
// simulator, a test server), where it does not cross a network in clear.
// The API client's fixed tokens and the token files' rotating ones both go
// through its Transport.
package bearer

import (
	"cmp"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
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
