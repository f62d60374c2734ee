package cli

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/secrets"
)

// echoingServer stands in front of a simulator: the requests its rule
// picks it answers with an error that repeats every credential it was sent
// (the bearer token and Authorization header in an API error's title and
// detail; the Basic header and the form of a token or revoke request in an
// OAuth error_description); the others it passes on. It remembers what it
// echoed.
type echoingServer struct {
	URL string

	mu     sync.Mutex
	echoed map[string]bool
}

// echoRule is the status to echo a request with, or 0 to pass it on.
type echoRule func(r *http.Request) int

// echoRefusals echoes the token endpoint's requests (under /echo/) with
// status, and users/me with 403; it passes the rest on.
func echoRefusals(status int) echoRule {
	return func(r *http.Request) int {
		switch {
		case strings.HasPrefix(r.URL.Path, "/echo/"):
			return status
		case r.URL.Path == "/2/users/me":
			return http.StatusForbidden
		}
		return 0
	}
}

func newEchoingServer(t *testing.T, upstream string, rule echoRule) *echoingServer {
	t.Helper()
	target, err := url.Parse(upstream)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	e := &echoingServer{echoed: map[string]bool{}}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		status := rule(r)
		if status == 0 {
			proxy.ServeHTTP(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(e.echo(r))
	}))
	t.Cleanup(ts.Close)
	e.URL = ts.URL
	return e
}

// echo is the error body that repeats r's credentials.
func (e *echoingServer) echo(r *http.Request) map[string]string {
	header := r.Header.Get("Authorization")
	bearer := strings.TrimPrefix(header, "Bearer ")
	e.mu.Lock()
	defer e.mu.Unlock()
	if strings.Contains(r.URL.Path, "/oauth2/") {
		_ = r.ParseForm()
		e.echoed[strings.TrimPrefix(header, "Basic ")] = true
		var form []string
		for _, k := range []string{"token", "refresh_token", "code", "code_verifier", "client_secret"} {
			if v := r.PostForm.Get(k); v != "" {
				e.echoed[v] = true
				form = append(form, k+"="+v)
			}
		}
		if _, secret, ok := r.BasicAuth(); ok {
			e.echoed[secret] = true
		}
		return map[string]string{"error": "invalid_request", "error_description": header + " " + strings.Join(form, " ")}
	}
	e.echoed[bearer] = true
	return map[string]string{"title": "Internal Error: " + header, "detail": "upstream refused " + bearer}
}

// leaks are the credentials it echoed that text holds; it fails the test
// if it echoed none.
func (e *echoingServer) leaks(t *testing.T, text string) []string {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.echoed) == 0 {
		t.Fatal("the server echoed no credential")
	}
	var out []string
	for secret := range e.echoed {
		if len(secret) >= secrets.MinLength && strings.Contains(text, secret) {
			out = append(out, secret)
		}
	}
	return out
}

// filesUnder is the text of every file under dir.
func filesUnder(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		b.Write(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

const echoSecret = "confidential-app-secret-0123456789"

// status masks every credential it holds (the spec's access tokens, a
// token file's tokens, the one a refresh just brought, the client secret
// and the Basic header it is sent in) in what a server that echoes them
// answered, as text and as JSON.
func TestStatusMasksCredentialsAServerEchoes(t *testing.T) {
	sim := startSim(t)
	sim.RegisterClient("conf-app", echoSecret)
	dir := t.TempDir()
	alice := filepath.Join(dir, "alice.json")
	writeTokenFile(t, sim, alice, "conf-app", "1001", time.Now().Add(-time.Minute)) // refreshed on first use
	echo := newEchoingServer(t, sim.URL(), echoRefusals(http.StatusUnauthorized))
	spec := specFile(t, dir, echo.URL,
		fmt.Sprintf("oauth: {client_id: conf-app, client_secret: %q, token_url: %q}", echoSecret, echo.URL+"/2/oauth2/token"),
		"accounts:", "  - token_file: alice.json", fmt.Sprintf("  - {user_id: \"1002\", access_token: %q}", sim.IssueToken("1002")))
	code, stdout, stderr := runCLI(t, "status", "--spec", spec)
	if code != ExitAllAccountsFailed {
		t.Fatalf("exit %d, want %d:\n%s%s", code, ExitAllAccountsFailed, stdout, stderr)
	}
	mustContain(t, stdout, "PROBLEM: GET /2/users/me:", "Internal Error: Bearer "+secrets.Hidden)
	if leaks := echo.leaks(t, stdout+stderr); len(leaks) > 0 {
		t.Errorf("status printed %q:\n%s%s", leaks, stdout, stderr)
	}

	// The token endpoint echoes the refresh request, with its Basic header.
	code, stdout, stderr = runCLI(t, "status", "--token-file", alice, "--json", "--client-id", "conf-app", "--client-secret", echoSecret,
		"--api-url", echo.URL, "--token-url", echo.URL+"/echo/2/oauth2/token")
	if code != ExitAllAccountsFailed {
		t.Fatalf("exit %d, want %d:\n%s%s", code, ExitAllAccountsFailed, stdout, stderr)
	}
	mustContain(t, stdout, "refresh: auth: token endpoint refresh failed: HTTP 401 invalid_request (Basic "+secrets.Hidden)
	if leaks := echo.leaks(t, stdout+stderr); len(leaks) > 0 {
		t.Errorf("status --json printed %q:\n%s%s", leaks, stdout, stderr)
	}
}

// bookmarks remove and add mask the credentials of the spec in what a
// server that echoes them answered: in what they print, and in the journal
// of a run that stops (a post X refuses is journaled with X's reason).
func TestBookmarksMaskCredentialsAServerEchoes(t *testing.T) {
	sim := startSim(t)
	var posts int
	var mu sync.Mutex
	echo := newEchoingServer(t, sim.URL(), func(r *http.Request) int {
		if !strings.Contains(r.URL.Path, "/bookmarks") || r.Method == http.MethodGet {
			return 0
		}
		mu.Lock()
		defer mu.Unlock()
		posts++
		if r.Method == http.MethodPost && posts == 1 {
			return http.StatusBadRequest // this post is refused: the run goes on
		}
		return http.StatusForbidden // the run stops
	})
	throughEcho := func(f *archiveFixture) {
		text, err := os.ReadFile(f.spec)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(f.spec, []byte(strings.Replace(string(text), sim.URL(), echo.URL, 1)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	add := newArchive(t, sim, map[string]int{"1001": 3})
	throughEcho(add)
	code, stdout, stderr := add.bookmarks("add", "--ids", add.ids("1900000000000000002", "1900000000000000001"), "--yes")
	if code == ExitOK {
		t.Fatalf("add: exit 0:\n%s%s", stdout, stderr)
	}
	mustContain(t, stderr, "X refused post 1900000000000000001", "Bearer "+secrets.Hidden)
	mustContain(t, stdout, "FAILED accounts[0] (user 1001)", "Bearer "+secrets.Hidden)
	journal := filesUnder(t, filepath.Join(add.out, ".ops"))
	mustContain(t, journal, "fail 1900000000000000001")
	if leaks := echo.leaks(t, stdout+stderr+journal); len(leaks) > 0 {
		t.Errorf("add printed or journaled %q:\n%s%s%s", leaks, stdout, stderr, journal)
	}

	remove := newArchive(t, sim, map[string]int{"1002": 3})
	throughEcho(remove)
	code, stdout, stderr = remove.bookmarks("remove", "--archived-before", "2999-01-01", "--yes")
	if code == ExitOK {
		t.Fatalf("remove: exit 0:\n%s%s", stdout, stderr)
	}
	mustContain(t, stdout, "FAILED accounts[0] (user 1002)", "Bearer "+secrets.Hidden)
	if leaks := echo.leaks(t, stdout+stderr+filesUnder(t, remove.out)); len(leaks) > 0 {
		t.Errorf("remove printed or stored %q:\n%s%s", leaks, stdout, stderr)
	}
}

// login masks the client secret (and the Basic header it is sent in), the
// authorization code and the tokens it was granted in what an echoing
// token endpoint or API answered; logout the tokens and the Basic header.
func TestLoginAndLogoutMaskCredentialsAServerEchoes(t *testing.T) {
	sim := startSim(t)
	const redirect = "http://127.0.0.1:8085/callback"
	sim.RegisterClient("conf-app", echoSecret, redirect)
	sim.SetAuthorizingUser("conf-app", "1001")
	echo := newEchoingServer(t, sim.URL(), echoRefusals(http.StatusBadRequest))
	login := func(tokenURL string) string {
		t.Helper()
		tokenFile := filepath.Join(t.TempDir(), "alice.json")
		code, printed := runHeadlessLogin(t, []string{"login", "--client-id", "conf-app", "--client-secret", echoSecret,
			"--token-file", tokenFile, "--headless", "--redirect-url", redirect,
			"--auth-url", sim.AuthorizeURL(), "--token-url", tokenURL, "--api-url", echo.URL,
		}, func(u string) (string, error) { return browse(u, "") })
		if code == ExitOK {
			t.Fatalf("login: exit 0:\n%s", printed)
		}
		return printed
	}
	exchange := login(echo.URL + "/echo/2/oauth2/token")
	mustContain(t, exchange, "token endpoint exchange failed", "Basic "+secrets.Hidden)
	me := login(sim.TokenURL())
	mustContain(t, me, "GET /2/users/me failed", "Bearer "+secrets.Hidden)
	if leaks := echo.leaks(t, exchange+me); len(leaks) > 0 {
		t.Errorf("login printed %q:\n%s%s", leaks, exchange, me)
	}

	tokenFile := filepath.Join(t.TempDir(), "bob.json")
	writeTokenFile(t, sim, tokenFile, "conf-app", "1002", time.Now().Add(time.Hour))
	code, stdout, stderr := runCLI(t, "logout", "--token-file", tokenFile, "--client-secret", echoSecret, "--revoke-url", echo.URL+"/echo/2/oauth2/revoke")
	if code == ExitOK {
		t.Fatalf("logout: exit 0:\n%s%s", stdout, stderr)
	}
	mustContain(t, stderr, "revoking the refresh_token", "Basic "+secrets.Hidden)
	if leaks := echo.leaks(t, stdout+stderr); len(leaks) > 0 {
		t.Errorf("logout printed %q:\n%s%s", leaks, stdout, stderr)
	}
}
