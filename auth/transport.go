package auth

import (
	"context"
	"fmt"
	"net/http"

	"github.com/cq-source-x/cq-source-x/internal/bearer"
)

// NewTransport returns a RoundTripper that sends src's access token as
// "Authorization: Bearer <token>" and, when the response is 401, invalidates that token and
// retries the request ONCE with a refreshed one. Only requests whose body can be replayed
// (no body, or GetBody set, as http.NewRequest does for in-memory bodies) are retried; others
// get the 401 back. A second 401 is returned as is: never a loop. When the refresh itself fails
// the error is returned (it wraps ErrLoginRequired when a login is needed). base nil means
// http.DefaultTransport.
func NewTransport(src *FileTokenSource, base http.RoundTripper) http.RoundTripper {
	return &bearer.Transport{
		Base: base,
		Token: func(ctx context.Context) (string, error) {
			tok, err := src.TokenContext(ctx)
			if err != nil {
				return "", err
			}
			return tok.AccessToken, nil
		},
		Renew: func(ctx context.Context, refused string) (string, error) {
			src.log.Info().Str("token_file", src.file.Path).Msg("auth: the API answered 401; refreshing the access token and sending the request again")
			src.Invalidate(refused)
			tok, err := src.TokenContext(ctx)
			if err != nil {
				return "", fmt.Errorf("auth: the API answered 401 and the access token could not be refreshed: %w", err)
			}
			return tok.AccessToken, nil
		},
	}
}
