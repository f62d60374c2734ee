package auth

import (
	"fmt"
	"io"
	"net/http"
)

// NewTransport returns a RoundTripper that sends src's access token as
// "Authorization: Bearer <token>" and, when the response is 401, invalidates that token and
// retries the request ONCE with a refreshed one. Only requests whose body can be replayed
// (no body, or GetBody set, as http.NewRequest does for in-memory bodies) are retried; others
// get the 401 back. A second 401 is returned as is: never a loop. When the refresh itself fails
// the error is returned (it wraps ErrLoginRequired when a login is needed). base nil means
// http.DefaultTransport.
func NewTransport(src *FileTokenSource, base http.RoundTripper) http.RoundTripper {
	if base == nil {
		base = http.DefaultTransport
	}
	return &transport{src: src, base: base}
}

type transport struct {
	src  *FileTokenSource
	base http.RoundTripper
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	tok, err := t.src.TokenContext(ctx)
	if err != nil {
		closeRequestBody(req)
		return nil, err
	}
	replayable := req.Body == nil || req.Body == http.NoBody || req.GetBody != nil

	r1 := req.Clone(ctx)
	r1.Header.Set("Authorization", "Bearer "+tok.AccessToken)
	resp, err := t.base.RoundTrip(r1)
	if err != nil || resp.StatusCode != http.StatusUnauthorized || !replayable {
		return resp, err
	}

	t.src.log.Info().Str("token_file", t.src.file.Path).Msg("auth: the API answered 401; refreshing the access token and sending the request again")
	t.src.Invalidate(tok.AccessToken)
	tok2, err := t.src.TokenContext(ctx)
	if err != nil {
		drainAndClose(resp.Body)
		return nil, fmt.Errorf("auth: the API answered 401 and the access token could not be refreshed: %w", err)
	}
	if tok2.AccessToken == tok.AccessToken {
		return resp, nil // nothing new to try
	}
	r2 := req.Clone(ctx)
	if req.Body != nil && req.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil {
			return resp, nil // cannot replay: give the caller the 401
		}
		r2.Body = body
	}
	r2.Header.Set("Authorization", "Bearer "+tok2.AccessToken)
	drainAndClose(resp.Body)
	return t.base.RoundTrip(r2)
}

func closeRequestBody(req *http.Request) {
	if req.Body != nil {
		_ = req.Body.Close()
	}
}

func drainAndClose(body io.ReadCloser) {
	if body == nil {
		return
	}
	_, _ = io.CopyN(io.Discard, body, 64<<10)
	_ = body.Close()
}
