package plugin

import (
	"context"
	"errors"
	"fmt"

	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
	"github.com/cq-source-x/cq-source-x/spec"
	"github.com/rs/zerolog"
)

// Error codes of the connection test (`cloudquery test-connection`).
const (
	codeInvalidSpec  = "INVALID_SPEC"
	codeUnauthorized = "UNAUTHORIZED"
	codeUnreachable  = "CONNECTION_FAILED"
)

// testConnection checks each account's token with GET /2/users/me (no post
// billed), and that it belongs to the configured user.
func testConnection(o Options) plugin.ConnectionTester {
	return func(ctx context.Context, logger zerolog.Logger, specBytes []byte) error {
		s, err := spec.Parse(specBytes)
		if err != nil {
			return plugin.NewTestConnError(codeInvalidSpec, err)
		}
		// A connection test answers now: it does not wait out a fault the
		// way a sync's retry budget does, only max_attempts.
		noBudget := spec.NewDuration(0)
		s.RetryBudget = &noBudget
		r := Credentials(s)
		for i := range s.Accounts {
			if code, err := testAccount(ctx, s, i, o, logger, r); err != nil {
				return plugin.NewTestConnError(code, r.Error(fmt.Errorf("accounts[%d]: %w", i, err)))
			}
		}
		return nil
	}
}

// testAccount tests s.Accounts[i]; code says why it failed.
func testAccount(ctx context.Context, s *spec.Spec, i int, o Options, logger zerolog.Logger, r *secrets.Mask) (code string, err error) {
	api, fileUserID, err := connect(ctx, s, i, o, billing.NewMeter(s.Rates()), logger, r)
	if err != nil {
		return codeUnauthorized, err
	}
	me, _, err := api.Me(ctx)
	if cause, ok := noAnswer(err); ok {
		return codeUnreachable, fmt.Errorf("GET /2/users/me to %s got no answer from the X API (%s): check base_url", s.BaseURL, cause)
	}
	if err != nil {
		text, _ := describe(s, i, err)
		code := codeUnreachable
		if errors.Is(err, client.ErrUnauthorized) || errors.Is(err, client.ErrForbidden) || errors.Is(err, auth.ErrLoginRequired) {
			code = codeUnauthorized
		}
		return code, errors.New(text)
	}
	for _, want := range []string{s.Accounts[i].UserID, fileUserID} {
		if want != "" && want != me.ID {
			return codeUnauthorized, fmt.Errorf("the token belongs to user %s (@%s), not %s", me.ID, me.Username, want)
		}
	}
	return "", nil
}
