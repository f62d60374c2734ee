package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/cq-source-x/cq-source-x/internal/clock"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func freeRedirect(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	return fmt.Sprintf("http://127.0.0.1:%d/callback", port)
}

// syncBuffer is an io.Writer safe for the test to read while Login writes, and it reports the
// first authorize URL written.
type syncBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	urls chan string
}

var authorizeURLRe = regexp.MustCompile(`http://127\.0\.0\.1:\d+/i/oauth2/authorize\?\S+`)

func newSyncBuffer() *syncBuffer { return &syncBuffer{urls: make(chan string, 4)} }

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if m := authorizeURLRe.Find(p); m != nil {
		select {
		case b.urls <- string(m):
		default:
		}
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func waitURL(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case u := <-ch:
		return u
	case <-time.After(10 * time.Second):
		t.Fatal("no authorize URL")
		return ""
	}
}

// noRedirect is a browser that stops at the redirect (for headless logins).
var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// authorizeRedirect plays the browser up to the redirect and returns where X sends it.
func authorizeRedirect(t *testing.T, authURL string) string {
	t.Helper()
	resp, err := noRedirect.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("authorize: %s", resp.Status)
	}
	return resp.Header.Get("Location")
}

type loginResult struct {
	tok *oauth2.Token
	err error
}

func startLogin(ctx context.Context, cfg Config, opts LoginOptions) <-chan loginResult {
	ch := make(chan loginResult, 1)
	go func() {
		tok, err := Login(ctx, cfg, opts)
		ch <- loginResult{tok, err}
	}()
	return ch
}

func wait(t *testing.T, ch <-chan loginResult) loginResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("Login did not return")
		return loginResult{}
	}
}

func TestLoginLoopbackFullFlow(t *testing.T) {
	clk := clock.NewVirtual(t0)
	fx := newFakeX(t, clk)
	redirect := freeRedirect(t)
	cfg := fx.config("public-app", "", redirect)
	opened := make(chan string, 1)
	out := newSyncBuffer()
	res := startLogin(t.Context(), cfg, LoginOptions{Out: out, OpenBrowser: func(u string) error { opened <- u; return nil }, Timeout: 10 * time.Second})

	authURL := waitURL(t, opened)
	if !strings.Contains(out.String(), authURL) {
		t.Errorf("the authorize URL was not printed; out:\n%s", out.String())
	}
	// The browser: authorize, follow the redirect to the loopback listener.
	resp, err := http.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := wait(t, res)
	if r.err != nil {
		t.Fatalf("Login: %v", r.err)
	}
	if resp.StatusCode != 200 || !strings.Contains(string(page), "You can close this tab") {
		t.Errorf("callback page: %s %s", resp.Status, page)
	}
	if r.tok.AccessToken == "" || r.tok.RefreshToken == "" || r.tok.ExpiresIn != 7200 {
		t.Errorf("token incomplete: access %t refresh %t expires_in %d", r.tok.AccessToken != "", r.tok.RefreshToken != "", r.tok.ExpiresIn)
	}
	if ex, _, _, _ := fx.counts(); ex != 1 {
		t.Errorf("exchanges = %d, want 1", ex)
	}
	st := NewStoredToken(r.tok, cfg.ClientID, clk.Now())
	if !st.Expiry.Equal(t0.Add(2*time.Hour)) || st.Scope != strings.Join(ReadScopes, " ") || st.ClientID != "public-app" {
		t.Errorf("NewStoredToken: %+v", st)
	}

	// The listener is gone after the login.
	if _, err := http.Get(redirect); err == nil {
		t.Error("the loopback listener still answers after Login returned")
	}
}

func TestLoginStateIsRandomAndAtLeast128Bits(t *testing.T) {
	fx := newFakeX(t, clock.NewVirtual(t0))
	cfg := fx.config("public-app", "", "http://127.0.0.1:1/callback")
	seen := map[string]bool{}
	for range 3 {
		in, inw := io.Pipe()
		out := newSyncBuffer()
		res := startLogin(t.Context(), cfg, LoginOptions{Headless: true, In: in, Out: out, Timeout: 5 * time.Second})
		u, _ := url.Parse(waitURL(t, out.urls))
		state := u.Query().Get("state")
		raw, err := base64.RawURLEncoding.DecodeString(state)
		if err != nil || len(raw) < 16 {
			t.Errorf("state %q: %d bytes (%v), want ≥ 16", state, len(raw), err)
		}
		if seen[state] {
			t.Error("state repeated")
		}
		seen[state] = true
		if u.Query().Get("code_challenge_method") != "S256" || u.Query().Get("code_challenge") == "" {
			t.Errorf("PKCE parameters missing: %v", u.Query())
		}
		_ = inw.CloseWithError(errors.New("abandoned"))
		if r := wait(t, res); r.err == nil {
			t.Error("abandoned login succeeded")
		}
	}
}

func TestLoginHeadlessPastedURL(t *testing.T) {
	for _, tc := range []struct {
		name  string
		paste func(loc string) string
	}{
		{"full URL", func(loc string) string { return loc }},
		{"query only", func(loc string) string { u, _ := url.Parse(loc); return u.RawQuery }},
		{"query with ? and spaces", func(loc string) string { u, _ := url.Parse(loc); return "  ?" + u.RawQuery + "  " }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFakeX(t, clock.NewVirtual(t0))
			// Headless works even when nothing listens on the redirect URL's port.
			cfg := fx.config("public-app", "", "http://127.0.0.1:1/callback")
			in, inw := io.Pipe()
			out := newSyncBuffer()
			opened := false
			res := startLogin(t.Context(), cfg, LoginOptions{Headless: true, In: in, Out: out,
				OpenBrowser: func(string) error { opened = true; return nil }})
			loc := authorizeRedirect(t, waitURL(t, out.urls))
			go func() { _, _ = io.WriteString(inw, tc.paste(loc)+"\n") }()
			r := wait(t, res)
			if r.err != nil {
				t.Fatalf("Login: %v", r.err)
			}
			if r.tok.AccessToken == "" {
				t.Error("no access token")
			}
			if opened {
				t.Error("headless login opened a browser")
			}
			if !strings.Contains(out.String(), "30 seconds") {
				t.Errorf("the prompt does not say the code expires: %s", out.String())
			}
		})
	}
}

func TestLoginStateMismatchRejectedWithoutExchange(t *testing.T) {
	t.Run("headless", func(t *testing.T) {
		fx := newFakeX(t, clock.NewVirtual(t0))
		cfg := fx.config("public-app", "", "http://127.0.0.1:1/callback")
		in, inw := io.Pipe()
		out := newSyncBuffer()
		res := startLogin(t.Context(), cfg, LoginOptions{Headless: true, In: in, Out: out})
		loc, _ := url.Parse(authorizeRedirect(t, waitURL(t, out.urls)))
		q := loc.Query()
		q.Set("state", "forged-"+q.Get("state"))
		loc.RawQuery = q.Encode()
		go func() { _, _ = io.WriteString(inw, loc.String()+"\n") }()
		r := wait(t, res)
		if r.err == nil || !strings.Contains(r.err.Error(), "state mismatch") {
			t.Fatalf("err = %v, want state mismatch", r.err)
		}
		if _, _, _, n := fx.counts(); n != 0 {
			t.Errorf("%d token requests after a state mismatch, want 0", n)
		}
	})
	t.Run("loopback", func(t *testing.T) {
		fx := newFakeX(t, clock.NewVirtual(t0))
		redirect := freeRedirect(t)
		cfg := fx.config("public-app", "", redirect)
		opened := make(chan string, 1)
		res := startLogin(t.Context(), cfg, LoginOptions{Out: io.Discard, OpenBrowser: func(u string) error { opened <- u; return nil }})
		loc, _ := url.Parse(authorizeRedirect(t, waitURL(t, opened)))
		q := loc.Query()
		q.Set("state", "forged")
		loc.RawQuery = q.Encode()
		resp, err := http.Get(loc.String())
		if err != nil {
			t.Fatal(err)
		}
		page, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		r := wait(t, res)
		if r.err == nil || !strings.Contains(r.err.Error(), "state mismatch") {
			t.Fatalf("err = %v, want state mismatch", r.err)
		}
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(page), "Login failed") {
			t.Errorf("page: %s %s", resp.Status, page)
		}
		if _, _, _, n := fx.counts(); n != 0 {
			t.Errorf("%d token requests after a state mismatch, want 0", n)
		}
	})
}

func TestLoginAccessDeniedIsClear(t *testing.T) {
	fx := newFakeX(t, clock.NewVirtual(t0))
	fx.set(func(fx *fakeX) { fx.denyAuthorize = true })
	redirect := freeRedirect(t)
	cfg := fx.config("public-app", "", redirect)
	opened := make(chan string, 1)
	res := startLogin(t.Context(), cfg, LoginOptions{Out: io.Discard, OpenBrowser: func(u string) error { opened <- u; return nil }})
	resp, err := http.Get(waitURL(t, opened))
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	r := wait(t, res)
	if r.err == nil || !strings.Contains(r.err.Error(), "access_denied") || !strings.Contains(r.err.Error(), "declined") {
		t.Fatalf("err = %v", r.err)
	}
	if !strings.Contains(string(page), "declined") {
		t.Errorf("page does not explain: %s", page)
	}
	if _, _, _, n := fx.counts(); n != 0 {
		t.Errorf("%d token requests after access_denied, want 0", n)
	}
}

func TestLoginSendsVerifierAndRedirectURI(t *testing.T) {
	fx := newFakeX(t, clock.NewVirtual(t0))
	redirect := "http://127.0.0.1:1/callback"
	cfg := fx.config("public-app", "", redirect)
	in, inw := io.Pipe()
	out := newSyncBuffer()
	res := startLogin(t.Context(), cfg, LoginOptions{Headless: true, In: in, Out: out})
	loc := authorizeRedirect(t, waitURL(t, out.urls))
	go func() { _, _ = io.WriteString(inw, loc+"\n") }()
	if r := wait(t, res); r.err != nil {
		t.Fatal(r.err)
	}
	fx.mu.Lock()
	form, authz, authorize := fx.lastTokenForm, fx.lastTokenAuth, fx.lastAuthorizeURL
	fx.mu.Unlock()
	v := form.Get("code_verifier")
	if len(v) < 43 || s256(v) != authorize.Query().Get("code_challenge") {
		t.Errorf("code_verifier %d chars, S256 matches challenge: %t", len(v), s256(v) == authorize.Query().Get("code_challenge"))
	}
	if form.Get("redirect_uri") != redirect || form.Get("grant_type") != "authorization_code" {
		t.Errorf("exchange form: redirect_uri %q grant_type %q", form.Get("redirect_uri"), form.Get("grant_type"))
	}
	if authz != "" || form.Get("client_id") != "public-app" {
		t.Errorf("public client: Authorization %q, client_id %q", authz, form.Get("client_id"))
	}
}

func TestLoginWrongVerifierIsRejectedByServer(t *testing.T) {
	// The fake server really checks PKCE: a code exchanged with another verifier fails.
	fx := newFakeX(t, clock.NewVirtual(t0))
	cfg := fx.config("public-app", "", "http://127.0.0.1:1/callback")
	oc := cfg.OAuth2()
	loc, _ := url.Parse(authorizeRedirect(t, oc.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))))
	_, err := oc.Exchange(t.Context(), loc.Query().Get("code"), oauth2.VerifierOption(oauth2.GenerateVerifier()))
	if err == nil {
		t.Fatal("exchange with the wrong verifier succeeded")
	}
}

func TestLoginCodeExpiresAfter30Seconds(t *testing.T) {
	clk := clock.NewVirtual(t0)
	fx := newFakeX(t, clk)
	cfg := fx.config("public-app", "", "http://127.0.0.1:1/callback")
	in, inw := io.Pipe()
	out := newSyncBuffer()
	res := startLogin(t.Context(), cfg, LoginOptions{Headless: true, In: in, Out: out})
	loc := authorizeRedirect(t, waitURL(t, out.urls))
	clk.Advance(31 * time.Second)
	go func() { _, _ = io.WriteString(inw, loc+"\n") }()
	r := wait(t, res)
	var te *TokenEndpointError
	if !errors.As(r.err, &te) || te.Op != "exchange" || !strings.Contains(r.err.Error(), "30 seconds") {
		t.Fatalf("err = %v", r.err)
	}
	if strings.Contains(r.err.Error(), "CODE-") {
		t.Error("the code appears in the error")
	}
}

func TestConfigAuthStyleExplicit(t *testing.T) {
	pub := Config{ClientID: "id"}.OAuth2()
	conf := Config{ClientID: "id", ClientSecret: "s3cret"}.OAuth2()
	if pub.Endpoint.AuthStyle != oauth2.AuthStyleInParams {
		t.Errorf("public client: AuthStyle %v, want InParams", pub.Endpoint.AuthStyle)
	}
	if conf.Endpoint.AuthStyle != oauth2.AuthStyleInHeader {
		t.Errorf("confidential client: AuthStyle %v, want InHeader", conf.Endpoint.AuthStyle)
	}
	if pub.Endpoint.AuthURL != DefaultAuthURL || pub.Endpoint.TokenURL != DefaultTokenURL || pub.RedirectURL != DefaultRedirectURL ||
		strings.Join(pub.Scopes, " ") != strings.Join(ReadScopes, " ") {
		t.Errorf("defaults not applied: %+v", pub)
	}
}

func TestLoginPublicVsConfidentialClientAuth(t *testing.T) {
	for _, tc := range []struct {
		name, secret string
		basic        bool
	}{
		{"public sends client_id in body", "", false},
		{"confidential uses HTTP Basic", "the-client-secret", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFakeX(t, clock.NewVirtual(t0))
			cfg := fx.config("app", tc.secret, "http://127.0.0.1:1/callback")
			in, inw := io.Pipe()
			out := newSyncBuffer()
			res := startLogin(t.Context(), cfg, LoginOptions{Headless: true, In: in, Out: out})
			loc := authorizeRedirect(t, waitURL(t, out.urls))
			go func() { _, _ = io.WriteString(inw, loc+"\n") }()
			if r := wait(t, res); r.err != nil {
				t.Fatal(r.err)
			}
			fx.mu.Lock()
			form, authz := fx.lastTokenForm, fx.lastTokenAuth
			fx.mu.Unlock()
			if got := strings.HasPrefix(authz, "Basic "); got != tc.basic {
				t.Errorf("Basic auth = %t, want %t", got, tc.basic)
			}
			if form.Has("client_secret") {
				t.Error("client_secret sent in the body")
			}
			if !tc.basic && form.Get("client_id") != "app" {
				t.Errorf("public client_id in body = %q", form.Get("client_id"))
			}
		})
	}
	t.Run("confidential app configured without its secret fails clearly", func(t *testing.T) {
		fx := newFakeX(t, clock.NewVirtual(t0))
		fx.register("app", "the-client-secret", "http://127.0.0.1:1/callback")
		cfg := Config{ClientID: "app", AuthURL: fx.authURL(), TokenURL: fx.tokenURL(), RedirectURL: "http://127.0.0.1:1/callback"}
		in, inw := io.Pipe()
		out := newSyncBuffer()
		res := startLogin(t.Context(), cfg, LoginOptions{Headless: true, In: in, Out: out})
		loc := authorizeRedirect(t, waitURL(t, out.urls))
		go func() { _, _ = io.WriteString(inw, loc+"\n") }()
		r := wait(t, res)
		if r.err == nil || !strings.Contains(r.err.Error(), "client id and secret") || errors.Is(r.err, ErrLoginRequired) {
			t.Fatalf("err = %v", r.err)
		}
	})
}

func TestLoginRedirectURLMustBeLoopback(t *testing.T) {
	for _, redirect := range []string{"https://example.com/callback", "http://192.168.1.2:8085/callback"} {
		cfg := Config{ClientID: "id", RedirectURL: redirect}
		_, err := Login(t.Context(), cfg, LoginOptions{Out: io.Discard, OpenBrowser: func(string) error { t.Error("browser opened"); return nil }})
		if err == nil || !strings.Contains(err.Error(), "loopback") || !strings.Contains(err.Error(), "registered") {
			t.Errorf("%s: err = %v", redirect, err)
		}
	}
	_, err := Login(t.Context(), Config{ClientID: "id", RedirectURL: "http://127.0.0.1/callback"}, LoginOptions{Out: io.Discard})
	if err == nil || !strings.Contains(err.Error(), "port") {
		t.Errorf("no port: err = %v", err)
	}
}

func TestLoginBrowserFailureIsNotFatal(t *testing.T) {
	fx := newFakeX(t, clock.NewVirtual(t0))
	redirect := freeRedirect(t)
	cfg := fx.config("public-app", "", redirect)
	out := newSyncBuffer()
	res := startLogin(t.Context(), cfg, LoginOptions{Out: out, OpenBrowser: func(string) error { return errors.New("no display") }})
	resp, err := http.Get(waitURL(t, out.urls))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if r := wait(t, res); r.err != nil {
		t.Fatal(r.err)
	}
	if !strings.Contains(out.String(), "no display") {
		t.Errorf("browser failure not reported: %s", out.String())
	}
}

func TestLoginTimesOut(t *testing.T) {
	fx := newFakeX(t, clock.NewVirtual(t0))
	cfg := fx.config("public-app", "", freeRedirect(t))
	_, err := Login(t.Context(), cfg, LoginOptions{Out: io.Discard, OpenBrowser: func(string) error { return nil }, Timeout: 50 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestParsePastedRedirect(t *testing.T) {
	for in, ok := range map[string]bool{
		"http://127.0.0.1:8085/callback?state=s&code=c": true,
		"state=s&code=c":               true,
		"?code=c&state=s#_=_":          true,
		`"http://x/cb?code=c&state=s"`: true,
		"error=access_denied&state=s":  true,
		"":                             false,
		"hello":                        false,
		"http://127.0.0.1:8085/callback?code=SECRETCODE": false,
	} {
		_, err := parsePastedRedirect(in)
		if (err == nil) != ok {
			t.Errorf("%q: err = %v", in, err)
		}
		if err != nil && strings.Contains(err.Error(), "SECRETCODE") {
			t.Errorf("error echoes the input: %v", err)
		}
	}
}

func TestConfigValidateNamesTheField(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{Config{}, "ClientID"},
		{Config{ClientID: "id", TokenURL: "http://api.example.com/token"}, "TokenURL"},
		{Config{ClientID: "id", AuthURL: "not a url"}, "AuthURL"},
		{Config{ClientID: "id", RedirectURL: "/callback"}, "RedirectURL"},
		{Config{ClientID: "id", Scopes: []string{"tweet.read", "bookmark.read"}}, "offline.access"},
		{Config{ClientID: "id", Scopes: []string{"tweet.read users.read", "offline.access"}}, "Scopes"},
		{Config{ClientID: "id", ClientSecret: " hunter2-secret "}, "ClientSecret"},
		{Config{ClientID: "id", TokenURL: "https://me:hunter2@api.x.com/2/oauth2/token"}, "TokenURL https://me:xxxxx@api.x.com/2/oauth2/token must not carry a user name or password"},
		{Config{ClientID: "id", AuthURL: "http://x.com/i/oauth2/authorize"}, "AuthURL \"http://x.com/i/oauth2/authorize\" must use https"},
	} {
		err := tc.cfg.Validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err = %v, want mention of %s", tc.cfg, err, tc.want)
		}
		if err != nil && strings.Contains(err.Error(), "hunter2") {
			t.Errorf("secret in error: %v", err)
		}
	}
	if err := (Config{ClientID: "id", Scopes: Scopes(true)}).Validate(); err != nil {
		t.Errorf("valid config: %v", err)
	}
}

// The redirect's state is checked before anything else in it: an error
// carrying another state (a page that sent the browser to the local
// callback) is refused as not this login's, not taken for X's answer.
func TestCallbackChecksStateBeforeError(t *testing.T) {
	q := url.Values{"error": {"access_denied"}, "state": {"forged"}}
	if _, err := checkCallback(q, "this-login"); !errors.Is(err, errStateMismatch) {
		t.Fatalf("got %v, want the state mismatch", err)
	}
	q.Set("state", "this-login")
	if _, err := checkCallback(q, "this-login"); err == nil || !strings.Contains(err.Error(), "authorization denied") {
		t.Fatalf("X's own error: got %v", err)
	}
}
