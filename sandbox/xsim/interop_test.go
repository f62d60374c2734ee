package xsim_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// TestGolangOAuth2LibraryCompletesTheFlow checks that golang.org/x/oauth2
// (which auth/ uses) works against the simulator for public clients
// (AuthStyleInParams) and confidential ones (AuthStyleInHeader), including
// refresh-token rotation through a TokenSource.
func TestGolangOAuth2LibraryCompletesTheFlow(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC))
	s := xsim.New(xsim.Options{Clock: clk})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.AddUser("1", "alice")
	const cb = "http://127.0.0.1:9/callback"
	s.RegisterClient("pub", "", cb)
	s.RegisterClient("conf", "secret", cb)
	s.SetAuthorizingUser("pub", "1")
	s.SetAuthorizingUser("conf", "1")
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

	for _, c := range []struct {
		id, secret string
		style      oauth2.AuthStyle
	}{{"pub", "", oauth2.AuthStyleInParams}, {"conf", "secret", oauth2.AuthStyleInHeader}} {
		cfg := &oauth2.Config{
			ClientID: c.id, ClientSecret: c.secret, RedirectURL: cb,
			Scopes:   []string{"tweet.read", "users.read", "bookmark.read", "offline.access"},
			Endpoint: oauth2.Endpoint{AuthURL: s.AuthorizeURL(), TokenURL: s.TokenURL(), AuthStyle: c.style},
		}
		verifier := oauth2.GenerateVerifier()
		res, err := noRedirect.Get(cfg.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier)))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		loc, _ := url.Parse(res.Header.Get("Location"))
		if loc.Query().Get("state") != "state-1" || loc.Query().Get("code") == "" {
			t.Fatalf("%s: redirect %s", c.id, loc)
		}
		ctx := context.Background()
		tok, err := cfg.Exchange(ctx, loc.Query().Get("code"), oauth2.VerifierOption(verifier))
		if err != nil {
			t.Fatalf("%s: exchange: %v", c.id, err)
		}
		if tok.RefreshToken == "" || tok.ExpiresIn != 7200 {
			t.Fatalf("%+v", tok)
		}
		// Force a refresh: the TokenSource must receive a rotated refresh token.
		old := *tok
		tok.Expiry = time.Now().Add(-time.Minute)
		nt, err := cfg.TokenSource(ctx, tok).Token()
		if err != nil {
			t.Fatalf("%s: refresh: %v", c.id, err)
		}
		if nt.RefreshToken == old.RefreshToken || nt.AccessToken == old.AccessToken {
			t.Fatal("refresh did not rotate")
		}
		// The spent refresh token is refused with the real error.
		_, err = cfg.TokenSource(ctx, &oauth2.Token{RefreshToken: old.RefreshToken}).Token()
		re, ok := err.(*oauth2.RetrieveError)
		if !ok || re.ErrorCode != "invalid_request" || re.ErrorDescription != "Value passed for the token was invalid." {
			t.Fatalf("%s: spent refresh: %v", c.id, err)
		}
		hc := cfg.Client(ctx, nt)
		r, err := hc.Get(s.URL() + "/2/users/1/bookmarks")
		if err != nil || r.StatusCode != 200 {
			t.Fatalf("%v %v", err, r)
		}
		r.Body.Close()
	}
}
