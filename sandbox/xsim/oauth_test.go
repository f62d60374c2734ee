package xsim

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
)

const (
	redirectURI = "http://127.0.0.1:8912/callback"
	verifier    = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
)

func challenge(v string) string {
	h := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

func authParams(clientID string) url.Values {
	return url.Values{
		"response_type":         {"code"},
		"client_id":             {clientID},
		"redirect_uri":          {redirectURI},
		"scope":                 {"tweet.read users.read bookmark.read offline.access"},
		"state":                 {"st4te"},
		"code_challenge":        {challenge(verifier)},
		"code_challenge_method": {"S256"},
	}
}

// authorize runs the authorize step and returns the redirect's query.
func authorize(t *testing.T, s *Server, v url.Values) (int, url.Values) {
	t.Helper()
	r := doReq(t, "GET", s.AuthorizeURL()+"?"+v.Encode(), "", nil, nil)
	if r.status != 302 {
		return r.status, nil
	}
	loc, err := url.Parse(r.hdr.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(loc.String(), redirectURI+"?") {
		t.Fatalf("redirect to %s", loc)
	}
	return 302, loc.Query()
}

func codeFor(t *testing.T, s *Server, clientID string) string {
	t.Helper()
	st, rq := authorize(t, s, authParams(clientID))
	if st != 302 || rq.Get("code") == "" || rq.Get("state") != "st4te" {
		t.Fatalf("authorize: %d %v", st, rq)
	}
	return rq.Get("code")
}

func exchange(t *testing.T, s *Server, clientID, secret, code, v string) *resp {
	t.Helper()
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI}, "code_verifier": {v}}
	if secret == "" {
		form.Set("client_id", clientID)
		return postForm(t, s.TokenURL(), form, "", "")
	}
	return postForm(t, s.TokenURL(), form, clientID, secret)
}

type tokenResp struct {
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	AccessToken  string `json:"access_token"`
	Scope        string `json:"scope"`
	RefreshToken string `json:"refresh_token"`
}

func decodeToken(t *testing.T, r *resp) tokenResp {
	t.Helper()
	if r.status != 200 {
		t.Fatalf("token: %d %s", r.status, r.body)
	}
	var tr tokenResp
	if err := json.Unmarshal(r.body, &tr); err != nil {
		t.Fatal(err)
	}
	return tr
}

func oauthSim(t *testing.T, clk clock.Clock) *Server {
	s := newSim(t, Options{Clock: clk})
	s.AddUser("1", "alice")
	s.RegisterClient("pub", "", redirectURI)
	s.RegisterClient("conf", "s3cret/+=", redirectURI)
	s.SetAuthorizingUser("pub", "1")
	s.SetAuthorizingUser("conf", "1")
	return s
}

func refresh(t *testing.T, s *Server, clientID, rt string) *resp {
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {rt}, "client_id": {clientID}}
	return postForm(t, s.TokenURL(), form, "", "")
}

func TestAuthorizationCodeFlowWithPKCE(t *testing.T) {
	s := oauthSim(t, vclock())
	tr := decodeToken(t, exchange(t, s, "pub", "", codeFor(t, s, "pub"), verifier))
	if tr.TokenType != "bearer" || tr.ExpiresIn != 7200 || tr.AccessToken == "" || tr.RefreshToken == "" ||
		tr.Scope != "tweet.read users.read bookmark.read offline.access" {
		t.Fatalf("%+v", tr)
	}
	r := get(t, s, "/2/users/me", tr.AccessToken)
	jsonEqual(t, r.body, `{"data":{"id":"1","name":"alice","username":"alice"}}`)
	if r := get(t, s, "/2/users/1/bookmarks", tr.AccessToken); r.status != 200 {
		t.Fatalf("%d", r.status)
	}
}

func TestNoOfflineAccessMeansNoRefreshToken(t *testing.T) {
	s := oauthSim(t, vclock())
	v := authParams("pub")
	v.Set("scope", "tweet.read users.read bookmark.read")
	_, rq := authorize(t, s, v)
	tr := decodeToken(t, exchange(t, s, "pub", "", rq.Get("code"), verifier))
	if tr.RefreshToken != "" {
		t.Fatal("refresh token without offline.access")
	}
}

func TestConfidentialClientRequiresBasicAuth(t *testing.T) {
	s := oauthSim(t, vclock())
	code := codeFor(t, s, "conf")
	r := exchange(t, s, "conf", "", code, verifier) // client_id in the body
	if r.status != 401 || r.obj(t)["error"] != "unauthorized_client" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	r = exchange(t, s, "conf", "wrong", code, verifier)
	if r.status != 401 || r.obj(t)["error"] != "unauthorized_client" {
		t.Fatalf("%d %s", r.status, r.body)
	}
	tr := decodeToken(t, exchange(t, s, "conf", "s3cret/+=", code, verifier))
	// Refresh also needs Basic.
	form := url.Values{"grant_type": {"refresh_token"}, "refresh_token": {tr.RefreshToken}, "client_id": {"conf"}}
	if r := postForm(t, s.TokenURL(), form, "", ""); r.status != 401 {
		t.Fatalf("%d", r.status)
	}
	decodeToken(t, postForm(t, s.TokenURL(), form, "conf", "s3cret/+="))
}

func TestPKCEVerifierMismatchRejected(t *testing.T) {
	s := oauthSim(t, vclock())
	code := codeFor(t, s, "pub")
	for _, v := range []string{"", "short", strings.Repeat("x", 43)} {
		r := exchange(t, s, "pub", "", code, v)
		if r.status != 400 || r.obj(t)["error"] != "invalid_request" {
			t.Fatalf("%q: %d %s", v, r.status, r.body)
		}
	}
	decodeToken(t, exchange(t, s, "pub", "", code, verifier))
}

func TestAuthorizationCodeExpiresAfter30Seconds(t *testing.T) {
	clk := vclock()
	s := oauthSim(t, clk)
	c1 := codeFor(t, s, "pub")
	c2 := codeFor(t, s, "pub")
	clk.Advance(29 * time.Second)
	decodeToken(t, exchange(t, s, "pub", "", c1, verifier))
	clk.Advance(time.Second)
	r := exchange(t, s, "pub", "", c2, verifier)
	if r.status != 400 || r.obj(t)["error"] != "invalid_request" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

func TestAuthorizationCodeIsSingleUse(t *testing.T) {
	s := oauthSim(t, vclock())
	code := codeFor(t, s, "pub")
	decodeToken(t, exchange(t, s, "pub", "", code, verifier))
	if r := exchange(t, s, "pub", "", code, verifier); r.status != 400 {
		t.Fatalf("%d", r.status)
	}
}

func TestTokenRedirectURIMustMatchTheAuthorization(t *testing.T) {
	s := oauthSim(t, vclock())
	code := codeFor(t, s, "pub")
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {redirectURI + "/x"}, "code_verifier": {verifier}, "client_id": {"pub"}}
	if r := postForm(t, s.TokenURL(), form, "", ""); r.status != 400 {
		t.Fatalf("%d", r.status)
	}
	// A code is bound to its client.
	if r := exchange(t, s, "conf", "s3cret/+=", code, verifier); r.status != 400 {
		t.Fatalf("%d", r.status)
	}
}

func TestAuthorizeRejectsUnknownClientAndUnregisteredRedirectWithout302(t *testing.T) {
	s := oauthSim(t, vclock())
	v := authParams("nobody")
	if st, _ := authorize(t, s, v); st != 400 {
		t.Fatalf("%d", st)
	}
	v = authParams("pub")
	v.Set("redirect_uri", redirectURI+"/")
	if st, _ := authorize(t, s, v); st != 400 {
		t.Fatalf("redirect_uri must match exactly: %d", st)
	}
}

func TestAuthorizeErrorsRedirectWithState(t *testing.T) {
	s := oauthSim(t, vclock())
	s.RegisterClient("nouser", "", redirectURI)
	s.RegisterClient("denied", "", redirectURI)
	s.SetAuthorizingUser("denied", "")
	cases := []struct {
		client, key, val, wantErr string
	}{
		{"pub", "response_type", "token", "unsupported_response_type"},
		{"pub", "code_challenge_method", "plain", "invalid_request"},
		{"pub", "code_challenge", "", "invalid_request"},
		{"pub", "scope", "tweet.read bogus.scope", "invalid_scope"},
		{"pub", "scope", "", "invalid_scope"},
		{"nouser", "", "", "access_denied"},
		{"denied", "", "", "access_denied"},
	}
	for _, c := range cases {
		v := authParams(c.client)
		if c.key != "" {
			v.Set(c.key, c.val)
		}
		st, rq := authorize(t, s, v)
		if st != 302 || rq.Get("error") != c.wantErr || rq.Get("state") != "st4te" || rq.Get("code") != "" {
			t.Fatalf("%+v: %d %v", c, st, rq)
		}
	}
	v := authParams("pub")
	v.Del("state")
	if st, rq := authorize(t, s, v); st != 302 || rq.Get("error") != "invalid_request" {
		t.Fatalf("no state: %d %v", st, rq)
	}
}

func TestRefreshTokenRotates(t *testing.T) {
	s := oauthSim(t, vclock())
	access, rt, _ := s.IssueTokenPair("pub", "1")
	tr := decodeToken(t, refresh(t, s, "pub", rt))
	if tr.AccessToken == access || tr.RefreshToken == rt || tr.RefreshToken == "" || tr.ExpiresIn != 7200 {
		t.Fatalf("%+v", tr)
	}
	// By default the old access token stays valid until it expires.
	for _, a := range []string{access, tr.AccessToken} {
		if r := get(t, s, "/2/users/1/bookmarks", a); r.status != 200 {
			t.Fatalf("%d", r.status)
		}
	}
	decodeToken(t, refresh(t, s, "pub", tr.RefreshToken))
}

func TestSpentRefreshTokenIsRefused(t *testing.T) {
	s := oauthSim(t, vclock())
	_, rt, _ := s.IssueTokenPair("pub", "1")
	decodeToken(t, refresh(t, s, "pub", rt))
	r := refresh(t, s, "pub", rt)
	if r.status != 400 {
		t.Fatalf("%d", r.status)
	}
	jsonEqual(t, r.body, `{"error":"invalid_request","error_description":"Value passed for the token was invalid."}`)
	// A refresh token is bound to its client.
	_, rt2, _ := s.IssueTokenPair("pub", "1")
	if r := refresh(t, s, "unregistered", rt2); r.status != 401 {
		t.Fatalf("%d", r.status)
	}
	s.RegisterClient("pub2", "", redirectURI)
	if r := refresh(t, s, "pub2", rt2); r.status != 400 {
		t.Fatalf("%d", r.status)
	}
	// IssueTokenPair registers an unknown client as public.
	_, rt3, _ := s.IssueTokenPair("new-client", "1")
	decodeToken(t, refresh(t, s, "new-client", rt3))
}

func TestRevokeAccessOnRefreshOption(t *testing.T) {
	s := newSim(t, Options{Clock: vclock(), RevokeAccessOnRefresh: true})
	s.RegisterClient("pub", "", redirectURI)
	access, rt, _ := s.IssueTokenPair("pub", "1")
	decodeToken(t, refresh(t, s, "pub", rt))
	if r := get(t, s, "/2/users/1/bookmarks", access); r.status != 401 {
		t.Fatalf("%d", r.status)
	}
}

func TestRevokeEndpointInvalidatesToken(t *testing.T) {
	s := oauthSim(t, vclock())
	access, rt, _ := s.IssueTokenPair("pub", "1")
	r := postForm(t, s.URL()+"/2/oauth2/revoke", url.Values{"token": {access}, "client_id": {"pub"}}, "", "")
	jsonEqual(t, r.body, `{"revoked":true}`)
	if r := get(t, s, "/2/users/1/bookmarks", access); r.status != 401 {
		t.Fatalf("%d", r.status)
	}
	postForm(t, s.RevokeURL(), url.Values{"token": {rt}, "client_id": {"pub"}}, "", "")
	if r := refresh(t, s, "pub", rt); r.status != 400 {
		t.Fatalf("%d", r.status)
	}
}

func TestAccessTokenFromTheTokenEndpointLivesTwoHours(t *testing.T) {
	clk := vclock()
	s := oauthSim(t, clk)
	tr := decodeToken(t, exchange(t, s, "pub", "", codeFor(t, s, "pub"), verifier))
	clk.Advance(2*time.Hour - time.Millisecond)
	if r := get(t, s, "/2/users/me", tr.AccessToken); r.status != 200 {
		t.Fatalf("%d", r.status)
	}
	clk.Advance(time.Millisecond)
	if r := get(t, s, "/2/users/me", tr.AccessToken); r.status != 401 {
		t.Fatalf("%d", r.status)
	}
	// The refresh token outlives it.
	tr2 := decodeToken(t, refresh(t, s, "pub", tr.RefreshToken))
	if r := get(t, s, "/2/users/me", tr2.AccessToken); r.status != 200 {
		t.Fatalf("%d", r.status)
	}
}

func TestClientCredentialsGiveAnAppOnlyToken(t *testing.T) {
	s := oauthSim(t, vclock())
	tr := decodeToken(t, postForm(t, s.TokenURL(), url.Values{"grant_type": {"client_credentials"}}, "conf", "s3cret/+="))
	r := get(t, s, "/2/users/1/bookmarks", tr.AccessToken)
	jsonEqual(t, r.body, appOnlyWant)
	if r := postForm(t, s.TokenURL(), url.Values{"grant_type": {"password"}, "client_id": {"pub"}}, "", ""); r.status != 400 || r.obj(t)["error"] != "unsupported_grant_type" {
		t.Fatalf("%d %s", r.status, r.body)
	}
}

// With ShowConsentPage the authorize endpoint answers with a page naming the
// demo users; its form, posted back, approves as the chosen user (the code
// is that user's) or, with Cancel, redirects with access_denied.
func TestConsentPageApprovesAsTheChosenUser(t *testing.T) {
	s := oauthSim(t, vclock())
	s.AddUser("2", "bob")
	s.RegisterClient("demo", "", redirectURI)
	s.ShowConsentPage("demo")
	page := doReq(t, "GET", s.AuthorizeURL()+"?"+authParams("demo").Encode(), "", nil, nil)
	if page.status != 200 || !strings.Contains(string(page.body), "Authorize app as @alice") || !strings.Contains(string(page.body), "Authorize app as @bob") {
		t.Fatalf("consent page: %d %s", page.status, page.body)
	}
	answer := func(choice url.Values) url.Values {
		form := authParams("demo")
		for k, v := range choice {
			form[k] = v
		}
		r := postForm(t, s.AuthorizeURL(), form, "", "")
		loc, err := url.Parse(r.hdr.Get("Location"))
		if r.status != 302 || err != nil || !strings.HasPrefix(loc.String(), redirectURI+"?") {
			t.Fatalf("answer %v: %d %s", choice, r.status, r.body)
		}
		return loc.Query()
	}
	q := answer(url.Values{"user_id": {"2"}})
	if q.Get("state") != "st4te" || q.Get("code") == "" {
		t.Fatalf("redirect %v", q)
	}
	tr := decodeToken(t, exchange(t, s, "demo", "", q.Get("code"), verifier))
	r := get(t, s, "/2/users/me", tr.AccessToken)
	jsonEqual(t, r.body, `{"data":{"id":"2","name":"bob","username":"bob"}}`)

	if q := answer(url.Values{"deny": {"1"}}); q.Get("error") != "access_denied" || q.Get("code") != "" {
		t.Errorf("cancel: %v", q)
	}
	// A client without a consent page takes no answers.
	form := authParams("pub")
	form.Set("user_id", "2")
	if r := postForm(t, s.AuthorizeURL(), form, "", ""); r.status != 400 {
		t.Errorf("a form for a client without a consent page: %d", r.status)
	}
}
