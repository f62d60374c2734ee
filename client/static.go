package client

import (
	"context"
	"net/http"

	"github.com/cq-source-x/cq-source-x/internal/bearer"
)

// StaticToken returns an *http.Client that sends "Authorization: Bearer
// <token>" on every request, through http.DefaultTransport. It does not
// follow redirects (the header would go wherever the redirect points). The
// token never appears in errors, nor when the client or its transport is
// printed: the transport holds it in a function.
func StaticToken(token string) *http.Client { return StaticTokenWithTransport(token, nil) }

// StaticTokenWithTransport is StaticToken sending through base (nil =
// http.DefaultTransport), e.g. a transport that dials an in-process simulator.
func StaticTokenWithTransport(token string, base http.RoundTripper) *http.Client {
	return &http.Client{
		Transport: &bearer.Transport{Base: base, Token: func(context.Context) (string, error) { return token, nil }},
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}
