package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/spec"
)

// LoginOptions are the settings of `cq-source-x login`; tests fill them in
// directly, the command line through flags.
type LoginOptions struct {
	ClientID, ClientSecret string
	RedirectURL            string
	AuthURL, TokenURL      string
	APIURL                 string
	TokenFile              string
	Write                  bool
	Headless               bool
	Replace                bool // overwrite a token file that holds another user's token
	In                     io.Reader
	Out                    io.Writer
	OpenBrowser            func(string) error
	HTTPClient             *http.Client
	Now                    func() time.Time
}

// Login runs the OAuth 2.0 PKCE login, resolves the user with GET
// /2/users/me and writes the token file (mode 0600, atomically).
func Login(ctx context.Context, o LoginOptions) error {
	if o.ClientID == "" {
		return errors.New("login: --client-id is required (the OAuth 2.0 Client ID of your X app; or set X_CLIENT_ID)")
	}
	if o.TokenFile == "" {
		return errors.New("login: --token-file is required")
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	cfg := auth.Config{
		ClientID:     o.ClientID,
		ClientSecret: o.ClientSecret,
		AuthURL:      o.AuthURL,
		TokenURL:     o.TokenURL,
		RedirectURL:  o.RedirectURL,
		Scopes:       auth.Scopes(o.Write),
	}
	tok, err := auth.Login(ctx, cfg, auth.LoginOptions{
		Headless:    o.Headless,
		In:          o.In,
		Out:         o.Out,
		OpenBrowser: o.OpenBrowser,
		HTTPClient:  o.HTTPClient,
	})
	if err != nil {
		return fmt.Errorf("login: %w", err)
	}
	transport := http.DefaultTransport
	if o.HTTPClient != nil && o.HTTPClient.Transport != nil {
		transport = o.HTTPClient.Transport
	}
	api, err := client.New(client.StaticTokenWithTransport(tok.AccessToken, transport), client.WithBaseURL(o.APIURL))
	if err != nil {
		return fmt.Errorf("login: %w", err)
	}
	me, _, err := api.Me(ctx)
	if err != nil {
		return fmt.Errorf("login: the token works for OAuth but GET /2/users/me failed: %w", err)
	}
	stored := auth.NewStoredToken(tok, o.ClientID, o.Now())
	stored.UserID, stored.Username = me.ID, me.Username
	file := auth.TokenFile{Path: o.TokenFile}
	unlock, err := file.Lock(ctx)
	if err != nil {
		return fmt.Errorf("login: %w", err)
	}
	defer unlock()
	if old, err := file.Load(); err == nil && old.UserID != "" && old.UserID != me.ID && !o.Replace {
		// The file is another account's, and its refresh token may be the only one that account
		// has: a second login with the default --token-file must not destroy it.
		return fmt.Errorf("login: %s holds the token of another user (id %s%s); logging in as @%s (id %s) would overwrite it, and that account would need to log in again: choose another --token-file, or pass --replace (the token just granted was not saved)",
			o.TokenFile, old.UserID, atName(old.Username), me.Username, me.ID)
	}
	if err := file.Save(stored); err != nil {
		return fmt.Errorf("login: %w", err)
	}
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
	fmt.Fprintf(o.Out, "Logged in as @%s (user id %s). Token saved to %s (mode 0600), %s.\n\nUse it in a spec:\n\n  accounts:\n    - token_file: %q\n", me.Username, me.ID, o.TokenFile, refresh, specPath)
	return nil
}

func atName(username string) string {
	if username == "" {
		return ""
	}
	return ", @" + username
}

func runLogin(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("login", flag.ContinueOnError)
	fs.SetOutput(stderr)
	o := LoginOptions{In: stdin, Out: stderr}
	fs.StringVar(&o.ClientID, "client-id", os.Getenv("X_CLIENT_ID"), "OAuth 2.0 Client ID of your X app (env X_CLIENT_ID)")
	fs.StringVar(&o.ClientSecret, "client-secret", os.Getenv("X_CLIENT_SECRET"), "client secret, for confidential apps (Web App, bot) only (env X_CLIENT_SECRET)")
	fs.StringVar(&o.RedirectURL, "redirect-url", auth.DefaultRedirectURL, "callback URL registered for the app; must be http://127.0.0.1:PORT/path or http://localhost:PORT/path")
	fs.StringVar(&o.TokenFile, "token-file", "x-token.json", "where to write the token")
	fs.BoolVar(&o.Write, "write", false, "also ask for bookmark.write (add and remove bookmarks)")
	fs.BoolVar(&o.Headless, "headless", false, "do not listen for the redirect: paste the address the browser was sent to")
	fs.BoolVar(&o.Replace, "replace", false, "overwrite --token-file even if it holds another user's token")
	fs.StringVar(&o.AuthURL, "auth-url", auth.DefaultAuthURL, "authorization endpoint")
	fs.StringVar(&o.TokenURL, "token-url", auth.DefaultTokenURL, "token endpoint")
	fs.StringVar(&o.APIURL, "api-url", spec.DefaultBaseURL, "X API base URL, for GET /2/users/me")
	fs.Usage = func() {
		fmt.Fprint(stderr, "Usage: cq-source-x login --client-id ID [flags]\n\nLog in to X with OAuth 2.0 (authorization code with PKCE) and write a token file for the spec's token_file.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("login: unexpected argument %q", fs.Arg(0))
	}
	return Login(ctx, o)
}
