package plugin

import (
	"cmp"
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
	"github.com/cq-source-x/cq-source-x/spec"
	"github.com/rs/zerolog"
)

const tokenRequestTimeout = 30 * time.Second

// prepareAccounts builds one session per account, in spec order, without
// touching the network: token files are read here, and a user id that is in
// neither the spec nor the token file is resolved (GET /2/users/me) by the
// session's first resolver. A sharded sync keeps the accounts of its shard
// (docs/design/plugin.md#sharding).
func prepareAccounts(ctx context.Context, s *spec.Spec, o Options, logger zerolog.Logger, st state.Client, info account.Sync, r *secrets.Mask, sh *plugin.Shard) *account.Set {
	set := &account.Set{}
	request := client.Fields(s.RequestFields())
	// One naming for the sync: X names things one way for every account.
	naming, _ := client.NewNamingPolicy(s.APINaming) // the spec check refused other settings
	o.ClientOptions = append(slices.Clone(o.ClientOptions), client.WithNamingPolicy(naming))
	for i, a := range s.Accounts {
		if !inShard(a.UserID, sh) {
			continue
		}
		meter := billing.NewMeter(s.Rates())
		sess := &account.Session{
			Index:        i,
			UserID:       a.UserID,
			Meter:        meter,
			Fields:       request,
			AskedBy:      s.AskedBy,
			Walk:         s.WalkSettings(),
			FolderBudget: s.Planner.FolderRequestBudget,
			Clock:        o.Clock,
			Sync:         info,
			State:        st,
			Secrets:      r,
			RowsKept:     o.destination() != nil,
			Resend:       o.resendPolicy(s),
		}
		api, userID, err := connect(ctx, s, i, o, meter, logger, r)
		switch {
		case err != nil:
			sess.Err = err
		case a.UserID != "" && userID != "" && a.UserID != userID:
			sess.Err = fmt.Errorf("accounts[%d].user_id is %s but the token file belongs to user %s", i, a.UserID, userID)
			// Neither id can be trusted: no state of either user is read (or its folders
			// emitted again) for this account.
			sess.UserID = ""
		case cmp.Or(a.UserID, userID) == "":
			sess.API, sess.Setup = api, resolveUserID(s, sess, set)
		default:
			sess.API = api
			if err := claim(s, sess, set, cmp.Or(a.UserID, userID)); err != nil {
				sess.Err, sess.API, sess.UserID = err, nil, ""
			}
		}
		sess.Logger = logger.With().Str("account", sess.ID()).Logger()
		set.Sessions = append(set.Sessions, sess)
	}
	if sh != nil {
		set.Sessions = shardOf(set.Sessions, s.Accounts, sh)
	}
	return set
}

// resolveUserID asks the API whose token this is, once.
func resolveUserID(s *spec.Spec, sess *account.Session, set *account.Set) func(context.Context) error {
	return func(ctx context.Context) error {
		userID, err := UserID(ctx, sess.API, sess.Index)
		if err != nil {
			return err
		}
		return claim(s, sess, set, userID)
	}
}

// claim makes userID the account's, unless another account of set has it.
func claim(s *spec.Spec, sess *account.Session, set *account.Set, userID string) error {
	if err := set.Claim(sess, userID); err != nil {
		return err
	}
	sess.UserID = userID
	sess.Meter.SetOwnedReads(userID, s.OwnedReads(sess.Index, userID))
	return nil
}

// UserID asks the API whose token api sends for accounts[i] (GET /2/users/me).
func UserID(ctx context.Context, api *client.Client, i int) (string, error) {
	me, _, err := api.Me(ctx)
	if err != nil {
		return "", fmt.Errorf("resolving the user id with GET /2/users/me (set %s.user_id to skip this): %w", account.Label(i), err)
	}
	return me.ID, nil
}

// AuthConfig is the OAuth configuration that refreshes the token of
// s.Accounts[i], whose token file records the client id storedClientID.
func AuthConfig(s *spec.Spec, i int, storedClientID string) auth.Config {
	a := s.Accounts[i]
	return auth.Config{
		ClientID:     cmp.Or(a.ClientID, s.OAuth.ClientID, storedClientID),
		ClientSecret: cmp.Or(a.ClientSecret, s.OAuth.ClientSecret),
		TokenURL:     s.OAuth.TokenURL,
	}
}

// connect builds the API client of s.Accounts[i] and returns the user id its
// token file names, if any; the token source adds its credentials to r.
func connect(ctx context.Context, s *spec.Spec, i int, o Options, meter *billing.Meter, logger zerolog.Logger, r *secrets.Mask) (*client.Client, string, error) {
	a := s.Accounts[i]
	var httpClient *http.Client
	var userID string
	log := accountLogger(logger, i, a.UserID)
	if a.AccessToken != "" {
		httpClient = client.StaticTokenWithTransport(a.AccessToken, o.Transport)
	} else {
		file := auth.TokenFile{Path: a.TokenFile}
		stored, err := file.Load()
		if err != nil {
			return nil, "", relativeTokenFileError(a.TokenFile, err)
		}
		userID = stored.UserID
		log = accountLogger(logger, i, cmp.Or(a.UserID, userID))
		cfg := AuthConfig(s, i, stored.ClientID)
		if cfg.ClientID == "" {
			return nil, "", fmt.Errorf("token file %s records no client id: set oauth.client_id (or the account's client_id) so its token can be refreshed", a.TokenFile)
		}
		src, err := auth.NewFileTokenSource(ctx, cfg, file,
			auth.WithClock(o.Clock),
			auth.WithLogger(log),
			auth.WithSecrets(r),
			auth.WithHTTPClient(&http.Client{Transport: o.Transport, Timeout: tokenRequestTimeout}))
		if err != nil {
			return nil, "", err
		}
		httpClient = &http.Client{Transport: auth.NewTransport(src, o.Transport)}
	}
	api, err := client.New(httpClient, apiOptions(s, o, meter, r,
		// A retry budget of 0 is none, which the client spells as a negative one.
		client.WithRetryPolicy(client.RetryPolicy{Budget: cmp.Or(s.RetryBudget.Duration(), -1), MaxAttempts: s.MaxAttempts}),
		client.WithLogger(log),
		// The document calls tokens base32hex, but real X tokens use the whole
		// alphabet (docs.x.com shows "7140w9gefhslx3"): only their form is checked.
		client.WithTokenCheck(client.TokenOpaque))...)
	return api, userID, err
}

// apiOptions are the options of every API client of a sync, then own, then Options'.
func apiOptions(s *spec.Spec, o Options, meter *billing.Meter, r *secrets.Mask, own ...client.Option) []client.Option {
	opts := []client.Option{
		client.WithBaseURL(s.BaseURL),
		client.WithClock(o.Clock),
		client.WithMeter(meter),
		client.WithRateLimitWaitCap(s.RateLimitWaitCap.Duration()),
		client.WithTimeouts(s.Timeouts()),
		client.WithSecrets(r),
		client.WithUserAgent(UserAgent()),
	}
	return append(append(opts, own...), o.ClientOptions...)
}

// Credentials returns a Mask holding the credentials the spec gives (client
// secrets also as a Basic header carries them); token sources add the tokens
// of token files as they read them, and prepareCompliance a bearer token file's.
func Credentials(s *spec.Spec) *secrets.Mask {
	r := secrets.New()
	if s.Compliance != nil {
		r.Add(s.Compliance.BearerToken)
	}
	r.AddBasic(s.OAuth.ClientID, s.OAuth.ClientSecret)
	for _, a := range s.Accounts {
		r.Add(a.AccessToken)
		r.AddBasic(cmp.Or(a.ClientID, s.OAuth.ClientID), cmp.Or(a.ClientSecret, s.OAuth.ClientSecret))
	}
	return r
}

// AccountClient is connect for the archive's bookmark commands: the API
// client of s.Accounts[i] as a sync builds it, its tokens added to r.
func AccountClient(ctx context.Context, s *spec.Spec, i int, meter *billing.Meter, logger zerolog.Logger, r *secrets.Mask, opts ...Option) (*client.Client, string, error) {
	return connect(ctx, s, i, options(opts), meter, logger, r)
}

// accountLogger logs under the name the account's session will have.
func accountLogger(logger zerolog.Logger, i int, userID string) zerolog.Logger {
	return logger.With().Str("account", (&account.Session{Index: i, UserID: userID}).ID()).Logger()
}
