package cli

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// readScopes are the scopes login asks for by default.
var readScopes = []string{"tweet.read", "users.read", "bookmark.read", "offline.access"}

// writeTokenFile writes a token file for user as login would, for the
// simulator's client clientID (a public client), with the access token
// expiring at expiry.
func writeTokenFile(t *testing.T, sim *xsim.Server, path, clientID, user string, expiry time.Time) *auth.StoredToken {
	t.Helper()
	access, refresh, _ := sim.IssueTokenPair(clientID, user, readScopes...)
	tok := &auth.StoredToken{AccessToken: access, RefreshToken: refresh, TokenType: "bearer", Expiry: expiry,
		Scope: strings.Join(readScopes, " "), UserID: user, Username: "user_" + user, ClientID: clientID, UpdatedAt: time.Now()}
	if err := (auth.TokenFile{Path: path}).Save(tok); err != nil {
		t.Fatal(err)
	}
	return tok
}

// apiStatus is the status of GET /2/users/me with an access token.
func apiStatus(t *testing.T, sim *xsim.Server, access string) int {
	t.Helper()
	req, _ := http.NewRequest(http.MethodGet, sim.URL()+"/2/users/me", nil)
	req.Header.Set("Authorization", "Bearer "+access)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// refreshWorks tells whether the token endpoint takes the refresh token.
func refreshWorks(t *testing.T, sim *xsim.Server, clientID string, tok *auth.StoredToken) bool {
	t.Helper()
	path := filepath.Join(t.TempDir(), "copy.json")
	copied := *tok
	copied.Expiry = time.Now().Add(-time.Hour)
	if err := (auth.TokenFile{Path: path}).Save(&copied); err != nil {
		t.Fatal(err)
	}
	src, err := auth.NewFileTokenSource(context.Background(), auth.Config{ClientID: clientID, TokenURL: sim.TokenURL()}, auth.TokenFile{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	_, err = src.Token()
	return err == nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return !errors.Is(err, fs.ErrNotExist)
}

// logout revokes the refresh and the access token at X, then removes the
// token file, its lock and its refresh marker.
func TestLogoutRevokesTheTokensAndRemovesTheFile(t *testing.T) {
	sim := startSim(t)
	path := filepath.Join(t.TempDir(), "alice.json")
	tok := writeTokenFile(t, sim, path, "native-app", "1001", time.Now().Add(time.Hour))
	unlock, err := auth.TokenFile{Path: path}.Lock(context.Background()) // a sync ran: the lock file exists
	if err != nil {
		t.Fatal(err)
	}
	unlock()
	if err := os.WriteFile(path+".refreshing", []byte("{}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "logout", "--token-file", path, "--revoke-url", sim.RevokeURL())
	if code != ExitOK || stdout != "" {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	mustContain(t, stderr, "Revoked the tokens of @user_1001 (user id 1001) at X and removed "+path)
	if got := apiStatus(t, sim, tok.AccessToken); got != http.StatusUnauthorized {
		t.Errorf("the access token still works (%d)", got)
	}
	if refreshWorks(t, sim, "native-app", tok) {
		t.Error("the refresh token still works")
	}
	for _, p := range []string{path, path + ".lock", path + ".refreshing"} {
		if exists(p) {
			t.Errorf("%s is left", p)
		}
	}
	if n := sim.Usage("1001")[xsim.OpRevoke].Requests; n != 2 {
		t.Errorf("%d revoke requests, want 2", n)
	}
}

// When X cannot be reached (or refuses), nothing is removed; --no-revoke
// removes the file and says that its tokens stay valid.
func TestLogoutKeepsTheFileWhenTheRevocationFails(t *testing.T) {
	sim := startSim(t)
	path := filepath.Join(t.TempDir(), "alice.json")
	tok := writeTokenFile(t, sim, path, "native-app", "1001", time.Now().Add(time.Hour))
	code, _, stderr := runCLI(t, "logout", "--token-file", path, "--revoke-url", "http://127.0.0.1:1/2/oauth2/revoke")
	if code != ExitError || !exists(path) {
		t.Fatalf("exit %d, file kept %v: %s", code, exists(path), stderr)
	}
	mustContain(t, stderr, "revoking the refresh_token", "was not removed", "--no-revoke", "check the revocation endpoint's URL (--revoke-url)")
	if strings.Contains(stderr, "--token-url") {
		t.Errorf("logout, which has no --token-url, names it: %s", stderr)
	}
	code, _, stderr = runCLI(t, "logout", "--token-file", path, "--revoke-url", sim.URL()+"/no/revocation/here")
	if code != ExitError || !strings.Contains(stderr, "there is no revocation endpoint at that URL: check it (--revoke-url)") {
		t.Errorf("a revocation URL with no endpoint: exit %d: %s", code, stderr)
	}

	sim.RegisterClient("web-app", "s3cret")
	confidential := filepath.Join(t.TempDir(), "bob.json")
	writeTokenFile(t, sim, confidential, "web-app", "1002", time.Now().Add(time.Hour))
	t.Setenv("X_CLIENT_SECRET", "")
	code, _, stderr = runCLI(t, "logout", "--token-file", confidential, "--revoke-url", sim.RevokeURL())
	if code != ExitError || !exists(confidential) || !strings.Contains(stderr, "check the client id and secret") {
		t.Errorf("a confidential app without its secret: exit %d, file kept %v: %s", code, exists(confidential), stderr)
	}
	if code, _, stderr := runCLI(t, "logout", "--token-file", confidential, "--revoke-url", sim.RevokeURL(), "--client-secret", "s3cret"); code != ExitOK || exists(confidential) {
		t.Errorf("with the secret: exit %d: %s", code, stderr)
	}

	code, _, stderr = runCLI(t, "logout", "--token-file", path, "--no-revoke")
	if code != ExitOK || exists(path) {
		t.Fatalf("--no-revoke: exit %d: %s", code, stderr)
	}
	mustContain(t, stderr, "without revoking its tokens", "stays valid at X")
	if got := apiStatus(t, sim, tok.AccessToken); got != http.StatusOK {
		t.Errorf("--no-revoke revoked the access token (%d)", got)
	}

	code, _, stderr = runCLI(t, "logout", "--token-file", path)
	if code != ExitError || !strings.Contains(stderr, "there is no token file") {
		t.Errorf("a second logout: exit %d: %s", code, stderr)
	}
}
