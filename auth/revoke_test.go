package auth

import (
	"context"
	"errors"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

func startXsim(t *testing.T) *xsim.Server {
	t.Helper()
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	return sim
}

// meStatus is the status of GET /2/users/me with token.
func meStatus(t *testing.T, sim *xsim.Server, token string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, sim.URL()+"/2/users/me", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A revoked access token is refused by the API, a revoked refresh token by
// the token endpoint; a public client names itself in the form body.
func TestRevokeEndsBothTokensOfAPublicClient(t *testing.T) {
	sim := startXsim(t)
	access, refresh, _ := sim.IssueTokenPair("native-app", "1001")
	cfg := Config{ClientID: "native-app", TokenURL: sim.TokenURL()}
	ctx := context.Background()
	if err := Revoke(ctx, cfg, sim.RevokeURL(), refresh, HintRefreshToken, nil); err != nil {
		t.Fatal(err)
	}
	if err := Revoke(ctx, cfg, sim.RevokeURL(), access, HintAccessToken, nil); err != nil {
		t.Fatal(err)
	}
	if got := meStatus(t, sim, access); got != http.StatusUnauthorized {
		t.Errorf("the API answers %d to the revoked access token", got)
	}
	file := TokenFile{Path: filepath.Join(t.TempDir(), "t.json")}
	if err := file.Save(&StoredToken{AccessToken: access, RefreshToken: refresh, ClientID: "native-app", Expiry: time.Now().Add(-time.Minute)}); err != nil {
		t.Fatal(err)
	}
	src, err := NewFileTokenSource(ctx, cfg, file)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := src.Token(); !errors.Is(err, ErrLoginRequired) {
		t.Errorf("refresh with the revoked refresh token: %v, want ErrLoginRequired", err)
	}
	// Revoking again is no error (RFC 7009: an unknown token is a 200).
	if err := Revoke(ctx, cfg, sim.RevokeURL(), refresh, HintRefreshToken, nil); err != nil {
		t.Errorf("second revoke: %v", err)
	}
}

// A confidential client authenticates with HTTP Basic; without its secret
// the revocation is refused, and the error says to check the client's
// credentials without showing the token.
func TestRevokeAuthenticatesAConfidentialClient(t *testing.T) {
	sim := startXsim(t)
	sim.RegisterClient("web-app", "s3cret-value")
	access, _, _ := sim.IssueTokenPair("web-app", "1001")
	ctx := context.Background()
	err := Revoke(ctx, Config{ClientID: "web-app"}, sim.RevokeURL(), access, HintAccessToken, nil)
	var te *TokenEndpointError
	if !errors.As(err, &te) || te.StatusCode != http.StatusUnauthorized || !strings.Contains(err.Error(), "check the client id and secret") {
		t.Fatalf("without the secret: %v", err)
	}
	if strings.Contains(err.Error(), access) {
		t.Errorf("the error shows the token: %v", err)
	}
	if got := meStatus(t, sim, access); got != http.StatusOK {
		t.Fatalf("a refused revocation ended the token (%d)", got)
	}
	if err := Revoke(ctx, Config{ClientID: "web-app", ClientSecret: "s3cret-value"}, sim.RevokeURL(), access, HintAccessToken, nil); err != nil {
		t.Fatal(err)
	}
	if got := meStatus(t, sim, access); got != http.StatusUnauthorized {
		t.Errorf("the API answers %d to the revoked token", got)
	}
}

// A revocation endpoint that cannot be reached is a temporary error.
func TestRevokeUnreachableIsTemporary(t *testing.T) {
	err := Revoke(context.Background(), Config{ClientID: "app"}, "http://127.0.0.1:1/2/oauth2/revoke", "tok", HintAccessToken, nil)
	var te *TokenEndpointError
	if !errors.As(err, &te) || !te.Temporary() || te.Op != "revoke" {
		t.Fatalf("%v", err)
	}
}

// Refresh refreshes a token that is still good, saves the rotated pair and
// returns it; the old refresh token is spent.
func TestRefreshRotatesAndSavesAValidToken(t *testing.T) {
	sim := startXsim(t)
	access, refresh, _ := sim.IssueTokenPair("native-app", "1001")
	file := TokenFile{Path: filepath.Join(t.TempDir(), "t.json")}
	if err := file.Save(&StoredToken{AccessToken: access, RefreshToken: refresh, ClientID: "native-app", UserID: "1001",
		Expiry: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	src, err := NewFileTokenSource(context.Background(), Config{ClientID: "native-app", TokenURL: sim.TokenURL()}, file)
	if err != nil {
		t.Fatal(err)
	}
	got, err := src.Refresh(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got.RefreshToken == refresh || got.AccessToken == access || got.UserID != "1001" {
		t.Fatalf("not rotated: %v", got)
	}
	disk, err := file.Load()
	if err != nil || disk.RefreshToken != got.RefreshToken {
		t.Fatalf("the rotated pair is not on disk: %v, %v", disk, err)
	}
	if n := sim.Usage("1001")[xsim.OpToken].Requests; n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
}
