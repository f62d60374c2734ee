package auth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
)

// fakeX is an OAuth 2.0 server that behaves like X's, per docs/design/x-api-facts.md:
// authorize with PKCE S256, 30-second single-use codes, 2-hour access tokens, rotating refresh
// tokens (a spent one gets 400 invalid_request "Value passed for the token was invalid."),
// public clients with client_id in the body and confidential clients with HTTP Basic only.
// It also serves GET /2/users/me and POST /2/echo to exercise the Transport.
type fakeX struct {
	t     *testing.T
	clock clock.Clock
	srv   *httptest.Server

	mu        sync.Mutex
	clients   map[string]fakeClient
	codes     map[string]*fakeCode
	access    map[string]time.Time // access token → expiry (server clock)
	refresh   map[string]bool      // refresh token → live (false: spent/revoked)
	issued    []string             // every token and code handed out
	challenge map[string]string    // code → challenge (for assertions)

	// Counters.
	exchanges     int // successful code exchanges
	tokenRequests int
	refreshes     int // successful refreshes
	spentSent     int // refresh requests carrying a spent token
	apiRequests   map[string]int

	// Knobs.
	strictSpent      bool // a spent refresh token arriving fails the test
	omitRefresh      bool // refresh answers carry no refresh_token
	fail5xx          int  // next N token requests answer 503
	echoSecrets      bool // error descriptions echo the submitted token (a badly behaved server)
	denyAuthorize    bool // the user clicks "Cancel"
	always401        bool // the API answers 401 to every request
	onRefresh        func()
	lastTokenForm    url.Values
	lastTokenAuth    string // Authorization header of the last token request
	lastAuthorizeURL *url.URL
}

type fakeClient struct {
	secret   string // "" public
	redirect string
}

type fakeCode struct {
	clientID, redirect, challenge, scope string
	expires                              time.Time
	used                                 bool
}

func newFakeX(t *testing.T, clk clock.Clock) *fakeX {
	t.Helper()
	fx := &fakeX{
		t: t, clock: clk, strictSpent: true,
		clients:     map[string]fakeClient{},
		codes:       map[string]*fakeCode{},
		access:      map[string]time.Time{},
		refresh:     map[string]bool{},
		challenge:   map[string]string{},
		apiRequests: map[string]int{},
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /i/oauth2/authorize", fx.authorize)
	mux.HandleFunc("POST /2/oauth2/token", fx.token)
	mux.HandleFunc("GET /2/users/me", fx.api)
	mux.HandleFunc("POST /2/echo", fx.api)
	fx.srv = httptest.NewServer(mux)
	t.Cleanup(fx.srv.Close)
	return fx
}

func (fx *fakeX) authURL() string  { return fx.srv.URL + "/i/oauth2/authorize" }
func (fx *fakeX) tokenURL() string { return fx.srv.URL + "/2/oauth2/token" }

func (fx *fakeX) register(id, secret, redirect string) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	fx.clients[id] = fakeClient{secret: secret, redirect: redirect}
}

func (fx *fakeX) config(id, secret, redirect string) Config {
	fx.register(id, secret, redirect)
	return Config{ClientID: id, ClientSecret: secret, AuthURL: fx.authURL(), TokenURL: fx.tokenURL(), RedirectURL: redirect}
}

func randToken(prefix string) string {
	b := make([]byte, 24)
	_, _ = rand.Read(b)
	return prefix + base64.RawURLEncoding.EncodeToString(b)
}

// mintLocked issues a new pair.
func (fx *fakeX) mintLocked(offline bool) (at, rt string) {
	at = randToken("AT-")
	fx.access[at] = fx.clock.Now().Add(2 * time.Hour)
	fx.issued = append(fx.issued, at)
	if offline {
		rt = randToken("RT-")
		fx.refresh[rt] = true
		fx.issued = append(fx.issued, rt)
	}
	return at, rt
}

// issue mints a pair directly (as if a login happened) and returns it as a StoredToken.
func (fx *fakeX) issue(clientID string) *StoredToken {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	at, rt := fx.mintLocked(true)
	now := fx.clock.Now()
	return &StoredToken{
		AccessToken: at, RefreshToken: rt, TokenType: "bearer", Expiry: now.Add(2 * time.Hour).UTC(),
		Scope: strings.Join(ReadScopes, " "), UserID: "42", Username: "alice", ClientID: clientID, UpdatedAt: now.UTC(),
	}
}

func (fx *fakeX) spend(rt string) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	fx.refresh[rt] = false
}

func (fx *fakeX) revokeAccess(at string) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	delete(fx.access, at)
}

func (fx *fakeX) secrets() []string {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return append([]string(nil), fx.issued...)
}

func (fx *fakeX) counts() (exchanges, refreshes, spentSent, tokenRequests int) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return fx.exchanges, fx.refreshes, fx.spentSent, fx.tokenRequests
}

func (fx *fakeX) set(fn func(fx *fakeX)) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	fn(fx)
}

func (fx *fakeX) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	fx.mu.Lock()
	defer fx.mu.Unlock()
	fx.lastAuthorizeURL = r.URL
	c, ok := fx.clients[q.Get("client_id")]
	switch {
	case !ok:
		http.Error(w, "unknown client_id", http.StatusBadRequest)
		return
	case q.Get("redirect_uri") != c.redirect:
		// X shows an error page and does not redirect when redirect_uri is not registered.
		http.Error(w, "Something went wrong: redirect_uri does not match the callback URL", http.StatusBadRequest)
		return
	case q.Get("response_type") != "code", q.Get("state") == "", q.Get("scope") == "",
		q.Get("code_challenge") == "", q.Get("code_challenge_method") != "S256":
		http.Error(w, "invalid authorize request", http.StatusBadRequest)
		return
	}
	to, _ := url.Parse(c.redirect)
	rq := url.Values{"state": {q.Get("state")}}
	if fx.denyAuthorize {
		rq.Set("error", "access_denied")
	} else {
		code := randToken("CODE-")
		fx.issued = append(fx.issued, code)
		fx.codes[code] = &fakeCode{clientID: q.Get("client_id"), redirect: c.redirect, challenge: q.Get("code_challenge"),
			scope: q.Get("scope"), expires: fx.clock.Now().Add(30 * time.Second)}
		fx.challenge[code] = q.Get("code_challenge")
		rq.Set("code", code)
	}
	to.RawQuery = rq.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}

func (fx *fakeX) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, 400, "invalid_request", "bad form")
		return
	}
	fx.mu.Lock()
	fx.tokenRequests++
	fx.lastTokenForm = r.PostForm
	fx.lastTokenAuth = r.Header.Get("Authorization")
	if fx.fail5xx > 0 {
		fx.fail5xx--
		fx.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusServiceUnavailable)
		_, _ = io.WriteString(w, "<html>Service Unavailable</html>")
		return
	}
	onRefresh := fx.onRefresh
	fx.mu.Unlock()

	// Client authentication, as X does it: explicit, no fallback.
	id, secret, basic := r.BasicAuth()
	if basic {
		id, _ = url.QueryUnescape(id)
		secret, _ = url.QueryUnescape(secret)
	} else {
		id = r.PostForm.Get("client_id")
	}
	fx.mu.Lock()
	c, known := fx.clients[id]
	fx.mu.Unlock()
	switch {
	case !known:
		oauthError(w, 401, "invalid_client", "Unknown client")
		return
	case c.secret != "" && !basic:
		oauthError(w, 401, "unauthorized_client", "Missing valid authorization header")
		return
	case c.secret != "" && secret != c.secret:
		oauthError(w, 401, "invalid_client", "Client authentication failed")
		return
	case c.secret == "" && basic:
		oauthError(w, 401, "invalid_client", "Public clients must not use HTTP Basic authentication")
		return
	case r.PostForm.Has("client_secret"):
		oauthError(w, 400, "invalid_request", "client_secret must not be sent in the body")
		return
	}

	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		fx.exchangeCode(w, r.PostForm, id)
	case "refresh_token":
		if onRefresh != nil {
			onRefresh()
		}
		fx.refreshToken(w, r.PostForm)
	default:
		oauthError(w, 400, "unsupported_grant_type", "grant_type")
	}
}

func s256(verifier string) string {
	h := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func (fx *fakeX) exchangeCode(w http.ResponseWriter, f url.Values, clientID string) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	code := fx.codes[f.Get("code")]
	invalid := func(why string) {
		desc := "Value passed for the authorization code was invalid."
		if fx.echoSecrets {
			desc += " " + why + " code=" + f.Get("code") + " verifier=" + f.Get("code_verifier")
		}
		oauthError(w, 400, "invalid_request", desc)
	}
	switch {
	case code == nil:
		invalid("unknown")
		return
	case code.used:
		invalid("used")
		return
	case !fx.clock.Now().Before(code.expires):
		invalid("expired")
		return
	case code.clientID != clientID:
		invalid("client")
		return
	case f.Get("redirect_uri") != code.redirect:
		invalid("redirect_uri")
		return
	case f.Get("code_verifier") == "" || s256(f.Get("code_verifier")) != code.challenge:
		invalid("pkce")
		return
	}
	code.used = true
	fx.exchanges++
	at, rt := fx.mintLocked(strings.Contains(code.scope, "offline.access"))
	fx.writeToken(w, at, rt, code.scope)
}

func (fx *fakeX) refreshToken(w http.ResponseWriter, f url.Values) {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	rt := f.Get("refresh_token")
	live, known := fx.refresh[rt]
	if !live {
		if known {
			fx.spentSent++
			if fx.strictSpent {
				fx.t.Errorf("fakeX: a spent refresh token was sent")
			}
		}
		desc := "Value passed for the token was invalid."
		if fx.echoSecrets {
			desc += " token=" + rt
		}
		oauthError(w, 400, "invalid_request", desc)
		return
	}
	fx.refresh[rt] = false // rotation: the old one is spent now
	fx.refreshes++
	at, nrt := fx.mintLocked(true)
	if fx.omitRefresh {
		fx.refresh[nrt] = false
		fx.refresh[rt] = true // not rotated after all
		nrt = ""
	}
	fx.writeToken(w, at, nrt, strings.Join(ReadScopes, " "))
}

func (fx *fakeX) writeToken(w http.ResponseWriter, at, rt, scope string) {
	body := map[string]any{"token_type": "bearer", "expires_in": 7200, "access_token": at, "scope": scope}
	if rt != "" {
		body["refresh_token"] = rt
	}
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	_ = json.NewEncoder(w).Encode(body)
}

// api answers like X's API: 401 problem details unless the Bearer token is live.
func (fx *fakeX) api(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	at, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	fx.mu.Lock()
	fx.apiRequests[r.URL.Path]++
	exp, ok := fx.access[at]
	ok = ok && fx.clock.Now().Before(exp) && !fx.always401
	fx.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if !ok {
		w.WriteHeader(http.StatusUnauthorized)
		_, _ = io.WriteString(w, `{"title":"Unauthorized","type":"about:blank","status":401,"detail":"Unauthorized"}`)
		return
	}
	if r.Method == http.MethodPost {
		_, _ = fmt.Fprintf(w, `{"data":{"echo":%q}}`, body)
		return
	}
	_, _ = io.WriteString(w, `{"data":{"id":"42","name":"Alice","username":"alice"}}`)
}

func (fx *fakeX) apiCount(path string) int {
	fx.mu.Lock()
	defer fx.mu.Unlock()
	return fx.apiRequests[path]
}
