package auth

import (
	"bufio"
	"cmp"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/pkg/browser"
	"golang.org/x/oauth2"
)

// DefaultLoginTimeout is how long Login waits for the redirect.
const DefaultLoginTimeout = 5 * time.Minute

type LoginOptions struct {
	// Headless reads the redirect URL the user pastes from In instead of listening for it.
	Headless    bool
	In          io.Reader              // default os.Stdin (headless only)
	Out         io.Writer              // prompts and the authorize URL; default os.Stderr
	OpenBrowser func(url string) error // default github.com/pkg/browser.OpenURL; the URL is printed anyway
	HTTPClient  *http.Client           // for the token exchange; default a client with a 30s timeout
	Timeout     time.Duration          // the wait for the redirect (default 5m)
}

// Login runs the OAuth 2.0 authorization-code flow with PKCE (S256) and returns the token. It
// prints the authorize URL and opens the browser, then listens on cfg.RedirectURL's loopback
// address, or with Headless reads the redirect the user pastes. It saves nothing: the caller
// builds a StoredToken (NewStoredToken) and saves it under TokenFile.Lock.
func Login(ctx context.Context, cfg Config, opts LoginOptions) (*oauth2.Token, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	opts.Out = cmp.Or[io.Writer](opts.Out, os.Stderr)
	opts.In = cmp.Or[io.Reader](opts.In, os.Stdin)
	opts.HTTPClient = cmp.Or(opts.HTTPClient, defaultHTTPClient())
	if opts.OpenBrowser == nil {
		opts.OpenBrowser = browser.OpenURL
	}
	opts.Timeout = cmp.Or(max(opts.Timeout, 0), DefaultLoginTimeout)
	redirect, _ := url.Parse(cfg.RedirectURL) // Validate parsed it

	state := oauth2.GenerateVerifier() // 256 random bits, base64url-encoded: a state as good
	verifier := oauth2.GenerateVerifier()
	oc := cfg.OAuth2()
	authURL := oc.AuthCodeURL(state, oauth2.S256ChallengeOption(verifier))

	exchange := func(q url.Values) (*oauth2.Token, error) {
		code, err := checkCallback(q, state)
		if err != nil {
			return nil, err
		}
		// The code lives 30 seconds: exchange at once, with a deadline of our own.
		ectx, cancel := context.WithTimeout(ctx, DefaultRequestTimeout)
		defer cancel()
		ectx = context.WithValue(ectx, oauth2.HTTPClient, opts.HTTPClient)
		tok, err := oc.Exchange(ectx, code, oauth2.VerifierOption(verifier))
		if err != nil {
			return nil, tokenEndpointError("exchange", err, code, verifier, cfg.ClientSecret)
		}
		warnGrant(opts.Out, cfg, tok)
		return tok, nil
	}

	wctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	if opts.Headless {
		q, err := readPastedRedirect(wctx, authURL, cfg.RedirectURL, opts)
		if err != nil {
			return nil, err
		}
		return exchange(q)
	}
	return loopbackLogin(wctx, redirect, authURL, opts, exchange)
}

var errStateMismatch = errors.New("auth: state mismatch: the redirect does not belong to this login attempt (an old browser tab, or a forged request); nothing was exchanged; run the login again")

// checkCallback validates the redirect's query and returns the code. A
// state that is not this login's is refused first, even beside an error: any
// web page can send the browser to the local callback.
func checkCallback(q url.Values, state string) (string, error) {
	got := q.Get("state")
	if got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(state)) != 1 {
		return "", errStateMismatch
	}
	if e := q.Get("error"); e != "" {
		desc := sanitize(q.Get("error_description"), 200, nil)
		if desc != "" {
			desc = " (" + desc + ")"
		}
		e = sanitize(e, 64, nil)
		if e == "access_denied" {
			return "", fmt.Errorf("auth: authorization denied: the request was declined in the browser (error=access_denied%s); run the login again and choose \"Authorize app\"", desc)
		}
		return "", fmt.Errorf("auth: authorization failed: X redirected with error=%s%s", e, desc)
	}
	if got == "" {
		return "", errors.New("auth: the redirect has no state parameter; paste the full address the browser was redirected to")
	}
	code := q.Get("code")
	if code == "" {
		return "", errors.New("auth: the redirect has no code parameter")
	}
	return code, nil
}

func warnGrant(out io.Writer, cfg Config, tok *oauth2.Token) {
	if tok.RefreshToken == "" {
		fmt.Fprintf(out, "warning: X returned no refresh token (was %q granted?); unattended runs will stop when the access token expires\n", ScopeOfflineAccess)
	}
	granted, _ := tok.Extra("scope").(string)
	if granted == "" {
		return
	}
	have := strings.Fields(granted)
	missing := slices.DeleteFunc(slices.Clone(cfg.Scopes), func(s string) bool { return slices.Contains(have, s) })
	if len(missing) > 0 {
		fmt.Fprintf(out, "warning: X did not grant the scopes %s (granted: %s)\n", strings.Join(missing, " "), granted)
	}
}

// readPastedRedirect prints the authorize URL and reads the pasted redirect.
func readPastedRedirect(ctx context.Context, authURL, redirectURL string, opts LoginOptions) (url.Values, error) {
	fmt.Fprintf(opts.Out, "Open this URL in a browser and authorize the app:\n\n  %s\n\n", authURL)
	fmt.Fprintf(opts.Out, "The browser is then sent to %s?state=...&code=... ; that page may fail to load, which is fine.\n", redirectURL)
	fmt.Fprintf(opts.Out, "Copy the full address from the address bar and paste it here within 30 seconds (the code expires):\n")

	var line string
	read := make(chan error, 1)
	go func() {
		var err error
		if line, err = bufio.NewReader(opts.In).ReadString('\n'); errors.Is(err, io.EOF) && strings.TrimSpace(line) != "" {
			err = nil
		}
		read <- err
	}()
	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("auth: no redirect URL pasted: %w", context.Cause(ctx))
	case err := <-read:
		if err != nil {
			return nil, fmt.Errorf("auth: reading the pasted redirect URL: %w", err)
		}
	}
	return parsePastedRedirect(line)
}

// parsePastedRedirect accepts the redirect URL or its query. Errors never echo the input.
func parsePastedRedirect(s string) (url.Values, error) {
	s, _, _ = strings.Cut(strings.Trim(strings.TrimSpace(s), `"'<>`), "#")
	if _, query, ok := strings.Cut(s, "?"); ok {
		s = query
	}
	q, err := url.ParseQuery(s)
	if err != nil {
		return nil, errors.New("auth: the pasted text is not a redirect URL or query (expected ...?state=...&code=...)")
	}
	if q.Get("error") == "" && (q.Get("code") == "" || q.Get("state") == "") {
		return nil, errors.New("auth: the pasted text has no code and state parameters; paste the full address the browser was redirected to")
	}
	return q, nil
}

// loopbackLogin listens on the redirect URL, opens the browser and exchanges the code.
func loopbackLogin(ctx context.Context, redirect *url.URL, authURL string, opts LoginOptions, exchange func(url.Values) (*oauth2.Token, error)) (*oauth2.Token, error) {
	lns, path, err := listenRedirect(redirect)
	if err != nil {
		return nil, err
	}
	calls, done := make(chan url.Values), make(chan error, 1) // done: the outcome, for the page shown in the browser
	stop := make(chan struct{})
	srv := &http.Server{Handler: callbackHandler(path, calls, done, stop), ReadHeaderTimeout: 10 * time.Second}
	for _, ln := range lns {
		go func() { _ = srv.Serve(ln) }()
	}
	defer func() {
		close(stop) // handlers still waiting to hand over a callback give up
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}()

	fmt.Fprintf(opts.Out, "Open this URL in your browser to authorize cq-source-x (opening it for you):\n\n  %s\n\n", authURL)
	fmt.Fprintf(opts.Out, "Waiting for the redirect to %s ...\n", redirect.String())
	if err := opts.OpenBrowser(authURL); err != nil {
		fmt.Fprintf(opts.Out, "Could not open a browser (%v); open the URL above yourself. If the browser runs on another machine, use the headless login instead.\n", err)
	}

	select {
	case <-ctx.Done():
		return nil, fmt.Errorf("auth: no redirect arrived at %s: %w", redirect.String(), context.Cause(ctx))
	case q := <-calls:
		tok, err := exchange(q)
		done <- err
		return tok, err
	}
}

// listenRedirect binds the loopback listener(s) for the redirect URL.
func listenRedirect(redirect *url.URL) ([]net.Listener, string, error) {
	host := redirect.Hostname()
	if redirect.Scheme != "http" || !(host == "127.0.0.1" || strings.EqualFold(host, "localhost")) {
		return nil, "", fmt.Errorf("auth: RedirectURL %q is not a loopback address: the login listens for the redirect on http://127.0.0.1:PORT/path or http://localhost:PORT/path, and that exact URL must be registered as a callback URL of the X app (X compares it character for character); or use the headless login to paste the redirect instead", redirect.String())
	}
	port := redirect.Port()
	if port == "" {
		return nil, "", fmt.Errorf("auth: RedirectURL %q has no port: give one explicitly, e.g. %s, and register exactly that URL with the X app", redirect.String(), DefaultRedirectURL)
	}
	path := cmp.Or(redirect.EscapedPath(), "/")
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		return nil, "", fmt.Errorf("auth: cannot listen for the redirect on 127.0.0.1:%s (is another login running, or the port in use?): %w", port, err)
	}
	lns := []net.Listener{ln}
	if strings.EqualFold(host, "localhost") {
		// Browsers may resolve localhost to ::1 first; listen there too when possible.
		if ln6, err := net.Listen("tcp", net.JoinHostPort("::1", port)); err == nil {
			lns = append(lns, ln6)
		}
	}
	return lns, path, nil
}

func callbackHandler(path string, calls chan<- url.Values, done <-chan error, stop <-chan struct{}) http.Handler {
	handled := make(chan struct{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.EscapedPath() != path || r.Method != http.MethodGet {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Referrer-Policy", "no-referrer")
		select {
		case calls <- r.URL.Query():
			close(handled)
		case <-r.Context().Done():
			return
		case <-stop:
			writePage(w, http.StatusGone, "Login ended", "cq-source-x is no longer waiting for this login. Run the login again.")
			return
		case <-handled:
			writePage(w, http.StatusConflict, "Already handled", "This login has already been handled. You can close this tab.")
			return
		}
		if err := <-done; err != nil { // sent once the exchange, which has a deadline, is over
			writePage(w, http.StatusBadRequest, "Login failed",
				"cq-source-x could not complete the login: "+err.Error()+"\n\nYou can close this tab; details are in the terminal.")
			return
		}
		writePage(w, http.StatusOK, "Login complete", "cq-source-x is authorized. You can close this tab and return to the terminal.")
	})
}

func writePage(w http.ResponseWriter, status int, title, msg string) {
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><html><head><meta charset=\"utf-8\"><title>%s</title></head><body><h1>%s</h1><p style=\"white-space:pre-wrap\">%s</p></body></html>\n",
		html.EscapeString(title), html.EscapeString(title), html.EscapeString(msg))
}
