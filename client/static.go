package client

import (
	"fmt"
	"net/http"
)

// StaticToken returns an *http.Client that sends "Authorization: Bearer
// <token>" on every request, through http.DefaultTransport. It does not
// follow redirects (the header would go wherever the redirect points). The
// token never appears in errors or when the client or its transport is
// printed with any fmt verb.
func StaticToken(token string) *http.Client { return StaticTokenWithTransport(token, nil) }

// StaticTokenWithTransport is StaticToken sending through base (nil =
// http.DefaultTransport), e.g. a transport that dials an in-process simulator.
func StaticTokenWithTransport(token string, base http.RoundTripper) *http.Client {
	return &http.Client{
		Transport: &bearerTransport{token: token, base: base},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// bearerTransport adds a fixed bearer token.
type bearerTransport struct {
	token string
	base  http.RoundTripper // nil = http.DefaultTransport
}

func (t *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := t.base
	if base == nil {
		base = http.DefaultTransport
	}
	// RoundTrip must not modify the caller's request.
	r2 := req.Clone(req.Context())
	r2.Header.Set("Authorization", "Bearer "+t.token)
	resp, err := base.RoundTrip(r2)
	if resp != nil {
		resp.Request = req // without the header
	}
	return resp, err
}

const redacted = "client.bearerTransport{token: REDACTED}"

func (t *bearerTransport) String() string   { return redacted }
func (t *bearerTransport) GoString() string { return redacted }

// Format keeps the token out of every fmt verb.
func (t *bearerTransport) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }
