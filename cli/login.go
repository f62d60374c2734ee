package cli

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/spec"
	"github.com/spf13/cobra"
)

// LoginOptions are the settings of `cq-source-x login`.
type LoginOptions struct {
	ClientID, ClientSecret string
	RedirectURL            string
	AuthURL, TokenURL      string
	APIURL                 string
	TokenFile              string
	// Scopes are asked for beside the read scopes and offline.access
	// (auth.ReadScopes); Write adds bookmark.write.
	Scopes  []string
	Write   bool
	Replace bool // overwrite a token file that holds another user's token
	Now     func() time.Time
	auth.LoginOptions
}

// Login runs the OAuth 2.0 PKCE login, resolves the user with GET
// /2/users/me and writes the token file (mode 0600, atomically).
func Login(ctx context.Context, o LoginOptions) error {
	cfg, err := o.authConfig()
	if err != nil {
		return err
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	// The token endpoint and the API may echo what they were sent (the
	// Basic header of a confidential app, the token): the errors say none
	// of the credentials the login holds.
	credentials := secrets.New()
	credentials.AddBasic(o.ClientID, o.ClientSecret)
	tok, err := auth.Login(ctx, cfg, o.LoginOptions)
	if err != nil {
		return credentials.Error(fmt.Errorf("login: %w", err))
	}
	credentials.Add(tok.AccessToken, tok.RefreshToken)
	me, err := o.me(ctx, tok.AccessToken, credentials)
	if err != nil {
		return credentials.Error(err)
	}
	stored := auth.NewStoredToken(tok, o.ClientID, o.Now())
	stored.UserID, stored.Username = me.ID, me.Username
	file := auth.TokenFile{Path: o.TokenFile}
	unlock, err := file.Lock(ctx)
	if err != nil {
		return fmt.Errorf("login: %w", err)
	}
	defer unlock()
	if err := o.mayOverwrite(file, me); err != nil {
		return err
	}
	if err := file.Save(stored); err != nil {
		return fmt.Errorf("login: %w", err)
	}
	o.sayLoggedIn(me, stored)
	return nil
}

// authConfig is the OAuth client the options describe; a missing flag or
// a bad scope is a usage error.
func (o LoginOptions) authConfig() (auth.Config, error) {
	if o.ClientID == "" {
		return auth.Config{}, usageError(errors.New("login: --client-id is required (the OAuth 2.0 Client ID of your X app; or set X_CLIENT_ID)"))
	}
	if o.TokenFile == "" {
		return auth.Config{}, usageError(errors.New("login: --token-file is required"))
	}
	scopes, err := loginScopes(o.Scopes, o.Write)
	if err != nil {
		return auth.Config{}, usageError(err)
	}
	return auth.Config{
		ClientID:     o.ClientID,
		ClientSecret: o.ClientSecret,
		AuthURL:      o.AuthURL,
		TokenURL:     o.TokenURL,
		RedirectURL:  o.RedirectURL,
		Scopes:       scopes,
	}, nil
}

// me is the user the access token is for, from GET /2/users/me.
func (o LoginOptions) me(ctx context.Context, accessToken string, credentials *secrets.Mask) (*client.User, error) {
	transport := http.DefaultTransport
	if o.HTTPClient != nil && o.HTTPClient.Transport != nil {
		transport = o.HTTPClient.Transport
	}
	api, err := client.New(client.StaticTokenWithTransport(accessToken, transport), client.WithBaseURL(o.APIURL),
		client.WithSecrets(credentials), client.WithUserAgent(xplugin.UserAgent()))
	if err != nil {
		return nil, fmt.Errorf("login: %w", err)
	}
	me, _, err := api.Me(ctx)
	if err != nil {
		return nil, fmt.Errorf("login: the token works for OAuth but GET /2/users/me failed: %w", err)
	}
	return me, nil
}

// mayOverwrite refuses to overwrite a token file that holds another
// user's token, unless Replace.
func (o LoginOptions) mayOverwrite(file auth.TokenFile, me *client.User) error {
	// The file's refresh token may be the only one its account has: a
	// second login with the default --token-file must not destroy it.
	if old, err := file.Load(); err == nil && old.UserID != "" && old.UserID != me.ID && !o.Replace {
		at := ""
		if old.Username != "" {
			at = ", @" + old.Username
		}
		return fmt.Errorf("login: %s holds the token of another user (id %s%s); logging in as @%s (id %s) would overwrite it, and that account would need to log in again: choose another --token-file, or pass --replace (the token just granted was not saved)",
			o.TokenFile, old.UserID, at, me.Username, me.ID)
	}
	return nil
}

// sayLoggedIn says who logged in, where the token is, and how to use it.
func (o LoginOptions) sayLoggedIn(me *client.User, stored *auth.StoredToken) {
	refresh := "with a refresh token: scheduled syncs renew it by themselves"
	if stored.RefreshToken == "" {
		refresh = "WITHOUT a refresh token (offline.access was not granted): it expires in two hours"
	}
	// The spec gets the absolute path: a relative one means the spec file's
	// directory to `export` but the working directory to a CloudQuery sync.
	specPath := o.TokenFile
	if abs, err := filepath.Abs(specPath); err == nil {
		specPath = abs
	}
	fmt.Fprintf(o.Out, "Logged in as @%s (user id %s). Token saved to %s (mode 0600), %s.\n\nUse it in a spec:\n\n", me.Username, me.ID, o.TokenFile, refresh)
	status := []string{Name, "status", "--token-file", archive.ShellQuote(specPath)}
	logout := []string{Name, "logout", "--token-file", archive.ShellQuote(specPath)}
	if o.TokenURL != auth.DefaultTokenURL {
		// Refreshes go to the token endpoint the login used.
		fmt.Fprintf(o.Out, "  oauth:\n    token_url: %q\n", o.TokenURL)
		status = append(status, "--token-url", archive.ShellQuote(o.TokenURL))
		if revoke, ok := strings.CutSuffix(o.TokenURL, "/oauth2/token"); ok {
			logout = append(logout, "--revoke-url", archive.ShellQuote(revoke+"/oauth2/revoke"))
		}
	}
	if o.APIURL != spec.DefaultBaseURL {
		fmt.Fprintf(o.Out, "  base_url: %q\n", o.APIURL)
		status = append(status, "--api-url", archive.ShellQuote(o.APIURL))
	}
	fmt.Fprintf(o.Out, "  accounts:\n    - token_file: %q\n\nSee who it is and whether a refresh works, and revoke it when it is no longer needed:\n\n  %s\n  %s\n",
		specPath, strings.Join(status, " "), strings.Join(logout, " "))
}

// loginScopes are the read scopes and offline.access, plus extra (given
// as names, or as comma- or space-separated lists) and bookmark.write with
// write.
func loginScopes(extra []string, write bool) ([]string, error) {
	scopes := auth.Scopes(write)
	for _, e := range extra {
		for _, s := range strings.FieldsFunc(e, func(r rune) bool { return r == ',' || unicode.IsSpace(r) }) {
			if !validScope.MatchString(s) {
				return nil, fmt.Errorf("login: --scopes: %q is not a scope name such as %s", s, auth.ScopeBookmarkWrite)
			}
			if !slices.Contains(scopes, s) {
				scopes = append(scopes, s)
			}
		}
	}
	return scopes, nil
}

var validScope = regexp.MustCompile(`^[a-z]+(\.[a-z]+)+$`)

const loginLong = `Log in to X with OAuth 2.0 (authorization code with PKCE) and write a token
file for the spec's accounts[].token_file. The login opens the authorize page
in a browser and receives the redirect on --redirect-url, which must be
registered as a callback URL of your X app; --headless opens nothing and asks
you to paste the address the browser was sent to. Syncs refresh the file by
themselves (X rotates refresh tokens on every refresh). One token file per
account. See docs/auth.md.

It asks for tweet.read users.read bookmark.read offline.access; --scopes asks
for more, e.g. --scopes bookmark.write (adding and removing bookmarks).`

func (a *app) loginCommand() *cobra.Command {
	o := LoginOptions{LoginOptions: auth.LoginOptions{In: a.stdin, Out: a.stderr}}
	cmd := &cobra.Command{
		Use:   "login --client-id ID [--token-file FILE]",
		Short: "Log in to X and write a token file",
		Long:  loginLong,
		Example: "  " + Name + " login --client-id YOUR_CLIENT_ID --token-file alice.json\n" +
			"  " + Name + " login --client-id YOUR_CLIENT_ID --token-file alice.json --headless --scopes bookmark.write",
		GroupID: groupAccounts,
		RunE: func(cmd *cobra.Command, _ []string) error {
			fromEnv(&o.ClientID, "X_CLIENT_ID")
			fromEnv(&o.ClientSecret, "X_CLIENT_SECRET")
			return Login(cmd.Context(), o)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.ClientID, "client-id", "", "OAuth 2.0 Client ID of your X app (env X_CLIENT_ID)")
	fs.StringVar(&o.ClientSecret, "client-secret", "", "client secret, for confidential apps (Web App, bot) only (env X_CLIENT_SECRET)")
	fs.StringVar(&o.RedirectURL, "redirect-url", auth.DefaultRedirectURL, "callback URL registered for the app; must be http://127.0.0.1:PORT/path or http://localhost:PORT/path")
	fs.StringVar(&o.TokenFile, "token-file", "x-token.json", "where to write the token")
	fs.StringSliceVar(&o.Scopes, "scopes", nil, "more scopes to ask for, e.g. bookmark.write (comma-separated or repeated)")
	fs.BoolVar(&o.Write, "write", false, "ask for bookmark.write as well")
	_ = fs.MarkDeprecated("write", "use --scopes bookmark.write")
	fs.BoolVar(&o.Headless, "headless", false, "do not listen for the redirect: paste the address the browser was sent to")
	fs.BoolVar(&o.Replace, "replace", false, "overwrite --token-file even if it holds another user's token")
	fs.StringVar(&o.AuthURL, "auth-url", auth.DefaultAuthURL, "authorization endpoint")
	fs.StringVar(&o.TokenURL, "token-url", auth.DefaultTokenURL, "token endpoint")
	fs.StringVar(&o.APIURL, "api-url", spec.DefaultBaseURL, "X API base URL, for GET /2/users/me")
	_ = cmd.MarkFlagFilename("token-file", "json")
	_ = cmd.RegisterFlagCompletionFunc("scopes", cobra.FixedCompletions([]string{auth.ScopeBookmarkWrite}, cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
