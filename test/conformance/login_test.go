package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/cli"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// The login command (`cq-source-x login`, cli.Login) end to end against the
// simulator's OAuth endpoints, the test playing the browser.

// freeRedirectURL returns a loopback redirect URL on a port that was free a
// moment ago (listen on :0, close, reuse the port).
func freeRedirectURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	if err := ln.Close(); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("http://127.0.0.1:%d/callback", port)
}

var browserClient = &http.Client{
	Timeout:       10 * time.Second,
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
}

// authorize is the user's visit to the authorize URL: the simulator approves
// (or denies) at once and redirects; the redirect is not followed.
func authorize(authURL string) (string, error) {
	resp, err := browserClient.Get(authURL)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusFound {
		return "", fmt.Errorf("authorize: %s: %s", resp.Status, body)
	}
	return resp.Header.Get("Location"), nil
}

// browse plays the browser: the authorize URL, then the redirect on the
// loopback listener. It returns the status and body of the page shown.
func browse(authURL string) (int, string, error) {
	loc, err := authorize(authURL)
	if err != nil {
		return 0, "", err
	}
	resp, err := browserClient.Get(loc)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), nil
}

// output collects what the login prints, safely for concurrent writes.
type output struct {
	mu sync.Mutex
	b  strings.Builder
}

func (o *output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.Write(p)
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// urlIn returns the first URL in s that starts with prefix.
func urlIn(s, prefix string) string {
	i := strings.Index(s, prefix)
	if i < 0 {
		return ""
	}
	s = s[i:]
	if j := strings.IndexAny(s, " \n\t"); j >= 0 {
		s = s[:j]
	}
	return s
}

type loginCase struct {
	name, clientID, secret string
	write, headless        bool
}

// login runs cli.Login against the simulator for tc, playing the browser,
// and returns the token file path, what the login printed and the authorize
// URL the browser was sent to.
func (e *env) login(t *testing.T, tc loginCase, redirect string) (string, string, *url.URL, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x-token.json")
	out := &output{}
	opts := cli.LoginOptions{
		ClientID: tc.clientID, ClientSecret: tc.secret, RedirectURL: redirect,
		AuthURL: e.sim.AuthorizeURL(), TokenURL: e.sim.TokenURL(), APIURL: e.sim.URL(),
		TokenFile: path, Write: tc.write, Now: e.clk.Now, LoginOptions: auth.LoginOptions{Headless: tc.headless, Out: out},
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var authURL string
	var wg sync.WaitGroup
	var browserErr error
	if tc.headless {
		// The user copies the authorize URL into a browser elsewhere and
		// pastes the address it was redirected to.
		pr, pw := io.Pipe()
		opts.In = pr
		opts.OpenBrowser = func(string) error { return errors.New("headless login opened a browser") }
		wg.Go(func() {
			defer pw.Close()
			for authURL == "" && ctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
				authURL = urlIn(out.String(), e.sim.AuthorizeURL()+"?")
			}
			loc, err := authorize(authURL)
			if err != nil {
				browserErr = err
				return
			}
			_, _ = io.WriteString(pw, loc+"\n")
		})
	} else {
		opts.OpenBrowser = func(u string) error {
			authURL = u
			wg.Go(func() {
				status, body, err := browse(u)
				if err == nil && (status != 200 || !strings.Contains(body, "Login complete")) {
					err = fmt.Errorf("browser shown %d: %s", status, body)
				}
				browserErr = err
			})
			return nil
		}
	}
	err := cli.Login(ctx, opts)
	wg.Wait()
	if err == nil && browserErr != nil {
		t.Errorf("browser: %v", browserErr)
	}
	u, perr := url.Parse(authURL)
	if perr != nil || authURL == "" {
		t.Fatalf("no authorize URL seen (%v)", perr)
	}
	return path, out.String(), u, err
}

// Token test (d), and Part 5, L100 ("OAuth 2.0 user context, authorization
// code flow with PKCE. The user must approve the request."), L102-103: the
// login command against the simulator, for a public and a confidential app,
// with the browser and headless (pasting the redirect URL). The token file is
// mode 0600 and holds the user from /2/users/me, the client id and a refresh
// token; a client built from it with auth.NewFileTokenSource and
// auth.NewTransport reads the bookmarks, also after the access token's two
// hours, and (with --write) adds one.
func TestLoginCommandEndToEnd(t *testing.T) {
	for _, tc := range []loginCase{
		{name: "public app", clientID: "native-app"},
		{name: "confidential app with write", clientID: "web-app", secret: "web-app-secret-0123456789", write: true},
		{name: "public app, headless", clientID: "native-app", headless: true},
		{name: "confidential app, headless", clientID: "web-app", secret: "web-app-secret-0123456789", headless: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, xsim.Options{})
			e.sim.AddUser(alice, "alice")
			want := e.sim.SeedBookmarks(alice, 42)
			redirect := freeRedirectURL(t)
			e.sim.RegisterClient(tc.clientID, tc.secret, redirect)
			e.sim.SetAuthorizingUser(tc.clientID, alice)

			path, printed, authURL, err := e.login(t, tc, redirect)
			if err != nil {
				t.Fatalf("login: %v\n%s", err, printed)
			}

			// The authorization request: code flow, PKCE S256, state, the scopes.
			q := authURL.Query()
			wantScopes := auth.Scopes(tc.write)
			if q.Get("response_type") != "code" || q.Get("client_id") != tc.clientID || q.Get("redirect_uri") != redirect ||
				q.Get("code_challenge_method") != "S256" || len(q.Get("code_challenge")) != 43 || len(q.Get("state")) < 22 ||
				!slices.Equal(strings.Fields(q.Get("scope")), wantScopes) {
				t.Errorf("authorize URL query = %v", q)
			}
			if !strings.Contains(printed, "Logged in as @alice (user id "+alice+")") {
				t.Errorf("login output: %s", printed)
			}

			// The token file.
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("token file mode %#o, want 0600", fi.Mode().Perm())
			}
			raw, _ := os.ReadFile(path)
			var f map[string]any
			if err := json.Unmarshal(raw, &f); err != nil {
				t.Fatal(err)
			}
			if f["version"] != float64(1) || f["user_id"] != alice || f["username"] != "alice" || f["client_id"] != tc.clientID ||
				f["refresh_token"] == nil || f["refresh_token"] == "" || f["access_token"] == "" || f["token_type"] != "bearer" ||
				f["expiry"] != t0.Add(2*time.Hour).Format(time.RFC3339) ||
				!slices.Equal(strings.Fields(f["scope"].(string)), wantScopes) {
				t.Errorf("token file = %s", redactTokens(f))
			}
			if tc.secret != "" && (strings.Contains(string(raw), tc.secret) || strings.Contains(printed, tc.secret)) {
				t.Error("the client secret was written to the token file or printed")
			}
			if u := e.sim.Usage(alice)[xsim.OpToken]; u.OK != 1 || u.Requests != 1 {
				t.Errorf("token endpoint: %+v, want one exchange", u)
			}

			// A client from the token file.
			cfg := auth.Config{ClientID: tc.clientID, ClientSecret: tc.secret, AuthURL: e.sim.AuthorizeURL(), TokenURL: e.sim.TokenURL()}
			src, err := auth.NewFileTokenSource(context.Background(), cfg, auth.TokenFile{Path: path}, auth.WithClock(e.clk))
			if err != nil {
				t.Fatal(err)
			}
			c := e.authedClient(src)
			if got, _ := walkAll(t, c, alice, 10); !slices.Equal(got, want) {
				t.Errorf("read %d bookmarks, want %d", len(got), len(want))
			}
			e.clk.Advance(2 * time.Hour) // the access token has expired: a refresh with the right client authentication
			if got, _ := walkAll(t, c, alice, 100); !slices.Equal(got, want) {
				t.Errorf("after a refresh: read %d bookmarks", len(got))
			}
			if u := e.sim.Usage(alice)[xsim.OpToken]; u.OK != 2 {
				t.Errorf("token endpoint: %d OK, want 2 (exchange, refresh)", u.OK)
			}
			st, err := auth.TokenFile{Path: path}.Load()
			if err != nil || st.UserID != alice || st.Username != "alice" || st.ClientID != tc.clientID || !st.Expiry.Equal(e.clk.Now().Add(2*time.Hour)) {
				t.Errorf("token file after refresh: %v, %v", st, err)
			}
			_, _, err = c.AddBookmark(context.Background(), alice, e.sim.NewPostID())
			if tc.write && err != nil {
				t.Errorf("--write: AddBookmark: %v", err)
			}
			if !tc.write && !errors.Is(err, client.ErrForbidden) {
				t.Errorf("without --write: AddBookmark err = %v, want 403", err)
			}
		})
	}
}

func redactTokens(f map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range f {
		if strings.HasSuffix(k, "_token") && k != "token_type" && v != "" {
			v = "[set]"
		}
		out[k] = v
	}
	return out
}

// Part 5, L100: "The user must approve the request." A user who declines in
// the browser ends the login with a clear error; nothing is exchanged and no
// token file is written.
func TestLoginDeclinedByTheUserWritesNoTokenFile(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	redirect := freeRedirectURL(t)
	e.sim.RegisterClient("native-app", "", redirect)
	e.sim.SetAuthorizingUser("native-app", "") // clicks Cancel
	path := filepath.Join(t.TempDir(), "x-token.json")
	var shown int
	var wg sync.WaitGroup
	err := cli.Login(context.Background(), cli.LoginOptions{
		ClientID: "native-app", RedirectURL: redirect, AuthURL: e.sim.AuthorizeURL(), TokenURL: e.sim.TokenURL(),
		APIURL: e.sim.URL(), TokenFile: path, Now: e.clk.Now,
		LoginOptions: auth.LoginOptions{Out: io.Discard, OpenBrowser: func(u string) error {
			wg.Go(func() { shown, _, _ = browse(u) })
			return nil
		}},
	})
	wg.Wait()
	if err == nil || !strings.Contains(err.Error(), "authorization denied") {
		t.Fatalf("err = %v, want authorization denied", err)
	}
	if shown != http.StatusBadRequest {
		t.Errorf("browser was shown %d, want 400 (login failed)", shown)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("token file written: %v", err)
	}
	if n := e.sim.Usage("")[xsim.OpToken].Requests + e.sim.Usage(alice)[xsim.OpToken].Requests; n != 0 {
		t.Errorf("%d token requests after a denial", n)
	}
}

// The facts: "Public clients (Native App, SPA) send `client_id` in the body;
// confidential clients (Web App, bot) must send HTTP Basic
// `client_id:client_secret`. Set the auth style explicitly". A confidential
// app used without its secret (so with the public style) is refused at the
// exchange with a hint about the client id and secret; nothing is written.
func TestConfidentialAppWithoutItsSecretCannotLogIn(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.AddUser(alice, "alice")
	redirect := freeRedirectURL(t)
	e.sim.RegisterClient("web-app", "web-app-secret-0123456789", redirect)
	e.sim.SetAuthorizingUser("web-app", alice)
	path, _, _, err := e.login(t, loginCase{clientID: "web-app", headless: true}, redirect)
	if err == nil || !strings.Contains(err.Error(), "check the client id and secret") {
		t.Fatalf("err = %v", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("token file written: %v", err)
	}
}

// Part 5, L103: "Refresh token | Issued when the additional scope
// `offline.access` is granted". Through the plain protocol (PKCE code flow
// with golang.org/x/oauth2): without offline.access there is no refresh token,
// and a token file holding such a token stops working when the access token
// expires (ErrLoginRequired naming offline.access); with it there is one. The
// login of cq-source-x refuses to ask without offline.access.
func TestRefreshTokenIsIssuedOnlyWithOfflineAccess(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.AddUser(alice, "alice")
	e.sim.SeedBookmarks(alice, 3)
	redirect := freeRedirectURL(t) // registered; nothing listens: the code is read off the redirect
	e.sim.RegisterClient("native-app", "", redirect)
	e.sim.SetAuthorizingUser("native-app", alice)
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: e.tr})

	for _, offline := range []bool{false, true} {
		scopes := []string{"tweet.read", "users.read", "bookmark.read"}
		if offline {
			scopes = append(scopes, auth.ScopeOfflineAccess)
		}
		oc := &oauth2.Config{
			ClientID: "native-app", RedirectURL: redirect, Scopes: scopes,
			Endpoint: oauth2.Endpoint{AuthURL: e.sim.AuthorizeURL(), TokenURL: e.sim.TokenURL(), AuthStyle: oauth2.AuthStyleInParams},
		}
		verifier := oauth2.GenerateVerifier()
		loc, err := authorize(oc.AuthCodeURL("state-0123456789abcdef", oauth2.S256ChallengeOption(verifier)))
		if err != nil {
			t.Fatal(err)
		}
		back, _ := url.Parse(loc)
		tok, err := oc.Exchange(ctx, back.Query().Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("offline.access=%v: exchange: %v", offline, err)
		}
		if (tok.RefreshToken != "") != offline {
			t.Errorf("offline.access=%v: refresh token present = %v", offline, tok.RefreshToken != "")
		}
		if offline {
			continue
		}
		// Without a refresh token the file is good for two hours.
		file := auth.TokenFile{Path: filepath.Join(t.TempDir(), "x-token.json")}
		if err := file.Save(auth.NewStoredToken(tok, "native-app", e.clk.Now())); err != nil {
			t.Fatal(err)
		}
		cfg := auth.Config{ClientID: "native-app", AuthURL: e.sim.AuthorizeURL(), TokenURL: e.sim.TokenURL(), RedirectURL: redirect}
		src, err := auth.NewFileTokenSource(context.Background(), cfg, file, auth.WithClock(e.clk))
		if err != nil {
			t.Fatal(err)
		}
		c := e.authedClient(src)
		if _, _, err := c.ListBookmarks(context.Background(), alice, client.ListOptions{}); err != nil {
			t.Fatalf("within two hours: %v", err)
		}
		e.clk.Advance(2 * time.Hour)
		_, _, err = c.ListBookmarks(context.Background(), alice, client.ListOptions{})
		if !errors.Is(err, auth.ErrLoginRequired) || !strings.Contains(err.Error(), "offline.access") {
			t.Errorf("after two hours: err = %v, want ErrLoginRequired naming offline.access", err)
		}
	}

	// cq-source-x's own login always asks for offline.access.
	cfg := auth.Config{ClientID: "native-app", AuthURL: e.sim.AuthorizeURL(), TokenURL: e.sim.TokenURL(), RedirectURL: redirect,
		Scopes: []string{"tweet.read", "users.read", "bookmark.read"}}
	if _, err := auth.Login(context.Background(), cfg, auth.LoginOptions{Out: io.Discard}); err == nil || !strings.Contains(err.Error(), "offline.access") {
		t.Errorf("login without offline.access: err = %v", err)
	}
}

// Part 5, L106 ("token lifetimes: not shown"), the facts: "The authorization
// code lives 30 seconds" (and is single-use), and the authorize request's
// "`redirect_uri` exactly as registered".
func TestAuthorizationCodeLives30SecondsAndRedirectMustBeRegisteredExactly(t *testing.T) {
	e := newEnv(t, xsim.Options{})
	e.sim.AddUser(alice, "alice")
	redirect := freeRedirectURL(t)
	e.sim.RegisterClient("native-app", "", redirect)
	e.sim.SetAuthorizingUser("native-app", alice)
	ctx := context.WithValue(context.Background(), oauth2.HTTPClient, &http.Client{Transport: e.tr})
	oc := &oauth2.Config{
		ClientID: "native-app", RedirectURL: redirect, Scopes: auth.Scopes(false),
		Endpoint: oauth2.Endpoint{AuthURL: e.sim.AuthorizeURL(), TokenURL: e.sim.TokenURL(), AuthStyle: oauth2.AuthStyleInParams},
	}
	code := func(verifier string) string {
		t.Helper()
		loc, err := authorize(oc.AuthCodeURL("state-0123456789abcdef", oauth2.S256ChallengeOption(verifier)))
		if err != nil {
			t.Fatal(err)
		}
		u, _ := url.Parse(loc)
		return u.Query().Get("code")
	}

	v := oauth2.GenerateVerifier()
	c := code(v)
	e.clk.Advance(31 * time.Second)
	if _, err := oc.Exchange(ctx, c, oauth2.VerifierOption(v)); err == nil {
		t.Error("a 31-second-old code was exchanged")
	}
	v = oauth2.GenerateVerifier()
	c = code(v)
	e.clk.Advance(29 * time.Second)
	if _, err := oc.Exchange(ctx, c, oauth2.VerifierOption(v)); err != nil {
		t.Errorf("a 29-second-old code: %v", err)
	}
	if _, err := oc.Exchange(ctx, c, oauth2.VerifierOption(v)); err == nil {
		t.Error("a code was exchanged twice")
	}
	c = code(oauth2.GenerateVerifier())
	if _, err := oc.Exchange(ctx, c, oauth2.VerifierOption(oauth2.GenerateVerifier())); err == nil {
		t.Error("a code was exchanged with the wrong PKCE verifier")
	}

	other := *oc
	other.RedirectURL = redirect + "/"
	if _, err := authorize(other.AuthCodeURL("state-0123456789abcdef", oauth2.S256ChallengeOption(v))); err == nil || !strings.Contains(err.Error(), "400") {
		t.Errorf("an unregistered redirect URL (one character more): err = %v, want 400 and no redirect", err)
	}
}
