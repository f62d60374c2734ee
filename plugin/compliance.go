package plugin

import (
	"net/http"

	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
	"github.com/cq-source-x/cq-source-x/plan"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/spec"
	"github.com/rs/zerolog"
)

// prepareCompliance builds the client of x_post_compliance for the sync's
// accounts, without touching the network (no API without a compliance section).
func prepareCompliance(s *spec.Spec, o Options, logger zerolog.Logger, st state.Client, set *account.Set, info account.Sync, scope string, r *secrets.Mask) *compliance.Check {
	c := &compliance.Check{
		Set: set, State: st, Clock: o.Clock, Sync: info, Secrets: r, Resend: o.resendPolicy(s), Scope: scope,
		Logger: logger.With().Str("table", resources.PostComplianceTable).Logger(),
	}
	cs := s.Compliance
	if cs == nil {
		return c
	}
	c.Every, c.Wait, c.MaxIDsPerJob = cs.Every.Duration(), cs.Wait.Duration(), cs.MaxIDsPerJob
	actions := map[string]plan.Action{spec.ActionRedact: plan.Redact, spec.ActionDelete: plan.Delete, spec.ActionScrub: plan.ScrubGeo}
	c.ActionOf = func(reason string) plan.Action { return actions[cs.Action(reason)] } // Keep for any other
	c.Meter = billing.NewMeter(s.Rates())
	token, err := cs.ReadBearerToken()
	if err != nil {
		c.Err = err
		return c
	}
	r.Add(token)
	// The app-only token goes to the API only; the jobs' upload and
	// download URLs are signed storage URLs and get no token.
	c.API, c.Err = client.New(client.StaticTokenWithTransport(token, o.Transport), apiOptions(s, o, c.Meter, r,
		client.WithStorageClient(&http.Client{Transport: o.Transport}),
		client.WithRetryPolicy(client.RetryPolicy{MaxAttempts: s.MaxAttempts}))...)
	return c
}
