package xsim

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// OAuth 2.0 authorization code flow with PKCE (S256), refresh-token rotation,
// revocation, and app-only bearer tokens.

// AccessTokenTTL is the lifetime of access tokens issued by the token
// endpoint and IssueTokenPair (expires_in 7200).
const AccessTokenTTL = 2 * time.Hour

// CodeTTL is the lifetime of an authorization code.
const CodeTTL = 30 * time.Second

// DefaultScopes are the scopes of IssueToken when none are given.
var DefaultScopes = []string{"tweet.read", "users.read", "bookmark.read", "bookmark.write"}

var knownScopes = []string{
	"block.read", "block.write", "bookmark.read", "bookmark.write", "dm.read", "dm.write",
	"follows.read", "follows.write", "like.read", "like.write", "list.read", "list.write",
	"media.write", "mute.read", "mute.write", "offline.access", "space.read", "timeline.read",
	"tweet.moderate.write", "tweet.read", "tweet.write", "users.email", "users.read",
}

type client struct {
	id, secret  string
	redirects   []string
	authUser    string
	authUserSet bool
	consent     bool // the authorize endpoint shows a consent page (ShowConsentPage)
}

type authCode struct {
	client, user, redirect, challenge string
	scopes                            []string
	expires                           time.Time
	used                              bool
}

const (
	kindAccess = iota + 1
	kindRefresh
	kindApp
)

type tokenRec struct {
	kind    int
	user    string
	client  string
	scopes  []string
	expires time.Time // zero = never
	revoked bool      // revoked, or (refresh tokens) spent
	pair    string    // refresh token: the access token issued with it
}

func (t *tokenRec) live(now time.Time) bool {
	return !t.revoked && (t.expires.IsZero() || now.Before(t.expires))
}

func randomToken(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return base64.RawURLEncoding.EncodeToString(b)
}

// RegisterClient registers an OAuth client. An empty secret makes a public
// client (client_id in the form body); otherwise HTTP Basic is required.
func (s *Server) RegisterClient(clientID, clientSecret string, redirectURIs ...string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[clientID]
	if c == nil {
		c = &client{id: clientID}
		s.clients[clientID] = c
	}
	c.secret = clientSecret
	c.redirects = slices.Clone(redirectURIs)
}

// SetAuthorizingUser sets who "clicks Allow" on the authorize page for this
// client. userID "" means the user clicks Cancel (error=access_denied); so
// does a client for which no user was set.
func (s *Server) SetAuthorizingUser(clientID, userID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[clientID]
	if c == nil {
		c = &client{id: clientID}
		s.clients[clientID] = c
	}
	c.authUser, c.authUserSet = userID, true
	if userID != "" {
		s.ensureUser(userID)
	}
}

func (s *Server) newTokenLocked(kind int, userID, clientID string, scopes []string, ttl time.Duration) string {
	tok := randomToken(36)
	if kind == kindApp {
		tok = "AAAAAAAAAAAAAAAAAAAAA" + tok
	}
	t := &tokenRec{kind: kind, user: userID, client: clientID, scopes: slices.Clone(scopes)}
	if ttl > 0 {
		t.expires = s.clk.Now().Add(ttl)
	}
	s.tokens[tok] = t
	return tok
}

// IssueToken returns a user access token directly (no OAuth dance), for a
// user created if needed. Default scopes: tweet.read users.read bookmark.read
// bookmark.write. It never expires (so long virtual-time runs keep working);
// use IssueTokenWithExpiry or IssueTokenPair for expiring tokens.
func (s *Server) IssueToken(userID string, scopes ...string) string {
	return s.IssueTokenWithExpiry(userID, 0, scopes...)
}

// IssueTokenWithExpiry is IssueToken with a lifetime (0 = never expires).
func (s *Server) IssueTokenWithExpiry(userID string, ttl time.Duration, scopes ...string) string {
	if len(scopes) == 0 {
		scopes = DefaultScopes
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureUser(userID)
	return s.newTokenLocked(kindAccess, userID, "", scopes, ttl)
}

// IssueTokenPair returns an access token (living AccessTokenTTL) and a
// refresh token for clientID, as if the user had completed the OAuth flow.
// Default scopes: DefaultScopes plus offline.access. An unknown clientID is
// registered as a public client (no redirect URIs), so the refresh token can
// be used at the token endpoint with client_id in the form body.
func (s *Server) IssueTokenPair(clientID, userID string, scopes ...string) (access, refresh string, expiresIn time.Duration) {
	if len(scopes) == 0 {
		scopes = append(slices.Clone(DefaultScopes), "offline.access")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ensureUser(userID)
	if s.clients[clientID] == nil {
		s.clients[clientID] = &client{id: clientID}
	}
	access, refresh = s.issuePairLocked(clientID, userID, scopes, true)
	return access, refresh, AccessTokenTTL
}

func (s *Server) issuePairLocked(clientID, userID string, scopes []string, withRefresh bool) (access, refresh string) {
	access = s.newTokenLocked(kindAccess, userID, clientID, scopes, AccessTokenTTL)
	if withRefresh {
		refresh = s.newTokenLocked(kindRefresh, userID, clientID, scopes, 0)
		s.tokens[refresh].pair = access
	}
	return access, refresh
}

// IssueAppOnlyToken returns an app-only bearer token (refused with 403 by
// every bookmark operation and users/me).
func (s *Server) IssueAppOnlyToken() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.newTokenLocked(kindApp, "", "", nil, 0)
}

// RevokeToken invalidates an access, refresh or app-only token.
func (s *Server) RevokeToken(token string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tokens[token]; t != nil {
		t.revoked = true
	}
}

// ---- authorize -------------------------------------------------------------------

func oauthError(code, desc string) map[string]string {
	return map[string]string{"error": code, "error_description": desc}
}

func (s *Server) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	s.authorize(w, r, r.URL.Query(), nil)
}

// handleConsent receives the consent page's form: the authorize request's
// parameters and the user's choice (user_id, or deny).
func (s *Server) handleConsent(w http.ResponseWriter, r *http.Request) {
	_ = r.ParseForm()
	choice := r.PostForm.Get("user_id")
	if r.PostForm.Get("deny") != "" {
		choice = ""
	}
	s.authorize(w, r, r.PostForm, &choice)
}

// authorize checks an authorize request and redirects back with a code or an
// error. choice is nil for the request itself (GET), and the user the
// consent page's form names ("" for Cancel) when it is answered.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, q url.Values, choice *string) {
	s.callHook(OpAuthorize, "", r)
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[q.Get("client_id")]
	if c == nil {
		writeJSONValue(w, 400, oauthError("invalid_request", "Value passed for the client_id was invalid."))
		return
	}
	redirect := q.Get("redirect_uri")
	ru, err := url.Parse(redirect)
	if redirect == "" || err != nil || !slices.Contains(c.redirects, redirect) {
		writeJSONValue(w, 400, oauthError("invalid_request", "Value passed for the redirect_uri does not match a callback URL registered for this client."))
		return
	}
	state := q.Get("state")
	back := func(v url.Values) {
		if state != "" {
			v.Set("state", state)
		}
		u := *ru
		rq := u.Query()
		for k, vals := range v {
			rq[k] = vals
		}
		u.RawQuery = rq.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	}
	fail := func(code, desc string) { back(url.Values{"error": {code}, "error_description": {desc}}) }
	if q.Get("response_type") != "code" {
		fail("unsupported_response_type", "response_type must be code")
		return
	}
	if state == "" {
		fail("invalid_request", "state is required")
		return
	}
	if q.Get("code_challenge") == "" {
		fail("invalid_request", "code_challenge is required")
		return
	}
	if q.Get("code_challenge_method") != "S256" {
		fail("invalid_request", "code_challenge_method must be S256")
		return
	}
	scopes := strings.Fields(q.Get("scope"))
	if len(scopes) == 0 {
		fail("invalid_scope", "scope is required")
		return
	}
	for _, sc := range scopes {
		if !slices.Contains(knownScopes, sc) {
			fail("invalid_scope", "unknown scope "+sc)
			return
		}
	}
	approver := c.authUser
	switch {
	case c.consent && choice == nil:
		s.writeConsentPageLocked(w, c, q, scopes)
		return
	case c.consent:
		approver = *choice
		if u := s.users[approver]; approver != "" && u == nil {
			writeJSONValue(w, 400, oauthError("invalid_request", "Value passed for the user_id was invalid."))
			return
		}
	case choice != nil: // a form answered for a client that shows no consent page
		writeJSONValue(w, 400, oauthError("invalid_request", "This client has no consent page."))
		return
	case !c.authUserSet:
		approver = ""
	}
	if approver == "" {
		fail("access_denied", "The user denied the request.")
		return
	}
	code := randomToken(32)
	s.codes[code] = &authCode{
		client: c.id, user: approver, redirect: redirect, challenge: q.Get("code_challenge"),
		scopes: scopes, expires: s.clk.Now().Add(CodeTTL),
	}
	back(url.Values{"code": {code}})
}

// ShowConsentPage makes the authorize endpoint of clientID answer as X's
// does, with a page on which the user approves the app, as one of the users
// added with AddUser (or any user when none was added), or cancels: for a
// person rehearsing a login in a browser (the sandbox). The page's form posts
// to the authorize endpoint, which then redirects as it does for
// SetAuthorizingUser.
func (s *Server) ShowConsentPage(clientID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[clientID]
	if c == nil {
		c = &client{id: clientID}
		s.clients[clientID] = c
	}
	c.consent = true
}

// writeConsentPageLocked writes the consent page: the request's parameters as
// hidden fields, a button per user, and Cancel. s.mu held.
func (s *Server) writeConsentPageLocked(w http.ResponseWriter, c *client, q url.Values, scopes []string) {
	var ids []string
	for id, u := range s.users {
		if u.explicit {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		for id := range s.users {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	var b strings.Builder
	esc := html.EscapeString
	fmt.Fprintf(&b, "<!doctype html><html><head><meta charset=\"utf-8\"><title>Authorize %s</title></head><body>\n", esc(c.id))
	fmt.Fprintf(&b, "<h1>%s wants to access your account</h1>\n<p>Scopes: %s</p>\n", esc(c.id), esc(strings.Join(scopes, " ")))
	fmt.Fprintf(&b, "<p>This is the X API simulator: choose the demo account that approves the app.</p>\n<form method=\"post\" action=\"/2/oauth2/authorize\">\n")
	keys := slices.Sorted(maps.Keys(q))
	for _, k := range keys {
		if k == "user_id" || k == "deny" {
			continue
		}
		fmt.Fprintf(&b, "<input type=\"hidden\" name=\"%s\" value=\"%s\">\n", esc(k), esc(q.Get(k)))
	}
	for _, id := range ids {
		fmt.Fprintf(&b, "<button type=\"submit\" name=\"user_id\" value=\"%s\">Authorize app as @%s</button>\n", esc(id), esc(s.users[id].info.username))
	}
	b.WriteString("<button type=\"submit\" name=\"deny\" value=\"1\">Cancel</button>\n</form></body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, b.String())
}

// ---- token and revoke ------------------------------------------------------------------

type tokenResponse struct {
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in,omitempty"`
	AccessToken  string `json:"access_token"`
	Scope        string `json:"scope,omitempty"`
	RefreshToken string `json:"refresh_token,omitempty"`
}

// authClient authenticates the client of a token or revoke request. s.mu held.
func (s *Server) authClient(r *http.Request) (*client, int, map[string]string) {
	if id, secret, ok := r.BasicAuth(); ok {
		if u, err := url.QueryUnescape(id); err == nil {
			id = u
		}
		if u, err := url.QueryUnescape(secret); err == nil {
			secret = u
		}
		c := s.clients[id]
		if c == nil || c.secret != secret {
			return nil, 401, oauthError("unauthorized_client", "Missing valid authorization header")
		}
		if b := r.PostForm.Get("client_id"); b != "" && b != id {
			return nil, 400, oauthError("invalid_request", "Value passed for the client_id was invalid.")
		}
		return c, 0, nil
	}
	c := s.clients[r.PostForm.Get("client_id")]
	if c == nil {
		return nil, 401, oauthError("unauthorized_client", "Missing valid authorization header")
	}
	if c.secret != "" { // confidential clients must use HTTP Basic
		return nil, 401, oauthError("unauthorized_client", "Missing valid authorization header")
	}
	return c, 0, nil
}

func s256(verifier string) string {
	h := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func validVerifier(v string) bool {
	if len(v) < 43 || len(v) > 128 {
		return false
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// oauthEndpoint runs the common part of the token and revoke endpoints:
// hook, faults, form parsing, then fn under the lock.
func (s *Server) oauthEndpoint(w http.ResponseWriter, r *http.Request, op string, fn func(now time.Time) (status int, v any, user string)) {
	s.callHook(op, "", r)
	fault, latency := s.nextFault(op)
	if latency > 0 {
		time.Sleep(latency)
	}
	_ = r.ParseForm()
	s.mu.Lock()
	now := s.clk.Now()
	switch fault.Kind {
	case FaultServerError:
		s.record("", op, fault.Status, 0, 0)
		s.mu.Unlock()
		writeJSON(w, fault.Status, serverErrorBody(fault.Status))
		return
	case FaultRateLimit:
		s.record("", op, 429, 0, 0)
		s.mu.Unlock()
		setRL(w.Header(), rlInfo{true, 1, 0, ceilUnix(now.Add(fault.ResetIn))})
		writeJSON(w, 429, s.tooMany())
		return
	case FaultConnReset:
		s.record("", op, 0, 0, 0)
		s.mu.Unlock()
		resetConn(w)
		return
	}
	status, v, user := fn(now)
	s.record(user, op, status, 0, 0)
	s.mu.Unlock()
	if fault.Kind == FaultTruncate && status == 200 {
		b, _ := jsonMarshal(v)
		writeTruncated(w, &result{status: 200}, b)
		return
	}
	writeJSONValue(w, status, v)
}

func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	s.oauthEndpoint(w, r, OpToken, func(now time.Time) (int, any, string) {
		c, st, e := s.authClient(r)
		if c == nil {
			return st, e, ""
		}
		f := r.PostForm
		switch f.Get("grant_type") {
		case "authorization_code":
			ac := s.codes[f.Get("code")]
			if ac == nil || ac.used || !now.Before(ac.expires) || ac.client != c.id {
				return 400, oauthError("invalid_request", "Value passed for the authorization code was invalid."), ""
			}
			if f.Get("redirect_uri") != ac.redirect {
				return 400, oauthError("invalid_request", "Value passed for the redirect uri did not match the uri of the authorization code."), ac.user
			}
			v := f.Get("code_verifier")
			if !validVerifier(v) || s256(v) != ac.challenge {
				return 400, oauthError("invalid_request", "Value passed for the code verifier did not match the code challenge."), ac.user
			}
			ac.used = true
			access, refresh := s.issuePairLocked(c.id, ac.user, ac.scopes, slices.Contains(ac.scopes, "offline.access"))
			return 200, tokenResponse{"bearer", int(AccessTokenTTL / time.Second), access, strings.Join(ac.scopes, " "), refresh}, ac.user
		case "refresh_token":
			old := s.tokens[f.Get("refresh_token")]
			if old == nil || old.kind != kindRefresh || old.revoked || old.client != c.id {
				return 400, oauthError("invalid_request", "Value passed for the token was invalid."), ""
			}
			old.revoked = true // refresh tokens rotate: this one is now spent
			if s.opts.RevokeAccessOnRefresh {
				if a := s.tokens[old.pair]; a != nil {
					a.revoked = true
				}
			}
			access, refresh := s.issuePairLocked(c.id, old.user, old.scopes, true)
			return 200, tokenResponse{"bearer", int(AccessTokenTTL / time.Second), access, strings.Join(old.scopes, " "), refresh}, old.user
		case "client_credentials":
			if c.secret == "" {
				return 401, oauthError("unauthorized_client", "Missing valid authorization header"), ""
			}
			return 200, tokenResponse{TokenType: "bearer", AccessToken: s.newTokenLocked(kindApp, "", c.id, nil, 0)}, ""
		default:
			return 400, oauthError("unsupported_grant_type", "grant_type must be authorization_code, refresh_token or client_credentials"), ""
		}
	})
}

func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) {
	s.oauthEndpoint(w, r, OpRevoke, func(now time.Time) (int, any, string) {
		c, st, e := s.authClient(r)
		if c == nil {
			return st, e, ""
		}
		t := s.tokens[r.PostForm.Get("token")]
		user := ""
		if t != nil && (t.client == c.id || t.client == "") {
			t.revoked = true
			user = t.user
		}
		return 200, map[string]bool{"revoked": true}, user
	})
}
