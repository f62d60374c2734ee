package cli

import (
	"bufio"
	"context"
	"fmt"
	"html"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/cq-source-x/cq-source-x/auth"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// loginHeadless runs the login command headless against the simulator's
// OAuth endpoints (with the README's client and redirect URL, and extra
// flags), approving as the simulator's authorizing user.
func loginHeadless(t *testing.T, sim *xsim.Server, redirect, tokenFile string, extra ...string) (int, string) {
	t.Helper()
	args := append([]string{"login",
		"--client-id", "readme-app", "--token-file", tokenFile, "--headless",
		"--redirect-url", redirect, "--auth-url", sim.AuthorizeURL(), "--token-url", sim.TokenURL(), "--api-url", sim.URL(),
	}, extra...)
	return runHeadlessLogin(t, args, func(u string) (string, error) { return browse(u, "") })
}

// runHeadlessLogin runs a login command with --headless: it reads the
// authorize URL the command prints, has browser approve it, and pastes
// the address the browser was sent to. It returns the exit code and what
// the command printed.
func runHeadlessLogin(t *testing.T, args []string, browser func(authorizeURL string) (string, error)) (int, string) {
	t.Helper()
	stdinR, stdinW := io.Pipe()
	stderrR, stderrW := io.Pipe()
	browserDone := make(chan error, 1)
	lines := make(chan string, 100)
	var printed strings.Builder
	go func() { // the terminal: read everything the command prints
		sc := bufio.NewScanner(stderrR)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	go func() { // the user: open the printed URL, paste where the browser lands
		defer stdinW.Close()
		authorize := regexp.MustCompile(`http://\S+/2/oauth2/authorize\?\S+`)
		for line := range lines {
			printed.WriteString(line + "\n")
			u := authorize.FindString(line)
			if u == "" {
				continue
			}
			loc, err := browser(u)
			if err == nil {
				_, err = io.WriteString(stdinW, loc+"\n")
			}
			for line := range lines {
				printed.WriteString(line + "\n")
			}
			browserDone <- err
			return
		}
		browserDone <- io.ErrUnexpectedEOF
	}()
	code := Run(context.Background(), args, stdinR, io.Discard, stderrW)
	stderrW.Close()
	if err := <-browserDone; err != nil {
		t.Fatalf("browser: %v; the login printed:\n%s", err, printed.String())
	}
	return code, printed.String()
}

// browse opens an authorize URL as a browser would and returns where it
// is redirected; on a consent page it picks the account userID.
func browse(authorizeURL, userID string) (string, error) {
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authorizeURL)
	if err != nil {
		return "", err
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK { // the consent page: submit its form
		form := url.Values{}
		for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]*)" value="([^"]*)">`).FindAllStringSubmatch(string(body), -1) {
			form.Set(html.UnescapeString(m[1]), html.UnescapeString(m[2]))
		}
		form.Set("user_id", userID)
		u, _ := url.Parse(authorizeURL)
		u.RawQuery = ""
		if resp, err = c.PostForm(u.String(), form); err != nil {
			return "", err
		}
		resp.Body.Close()
	}
	if resp.StatusCode != http.StatusFound {
		return "", fmt.Errorf("the authorize page answered %d: %s", resp.StatusCode, body)
	}
	return resp.Header.Get("Location"), nil
}

// The README's login command, with its flags, against the simulator.
func TestLoginCommandWritesATokenFile(t *testing.T) {
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	const redirect = "http://127.0.0.1:8085/callback"
	sim.RegisterClient("readme-app", "", redirect)
	sim.SetAuthorizingUser("readme-app", "1001")
	tokenFile := filepath.Join(t.TempDir(), "alice.json")
	if code, out := loginHeadless(t, sim, redirect, tokenFile); code != 0 {
		t.Fatalf("login exited %d: %s", code, out)
	}
	info, err := os.Stat(tokenFile)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("token file %v, mode %v", err, info)
	}
	stored, err := auth.TokenFile{Path: tokenFile}.Load()
	if err != nil {
		t.Fatal(err)
	}
	if stored.UserID != "1001" || stored.ClientID != "readme-app" || stored.RefreshToken == "" || !strings.Contains(stored.Scope, "bookmark.read") {
		t.Fatalf("token file: %v", stored)
	}
}

// Every request to the X API, login's GET /2/users/me as export's and
// status's, says the program and its version in its User-Agent (as
// docs/cli.md says); OAuth's requests are not the API's.
func TestEveryAPIRequestCarriesTheVersionInItsUserAgent(t *testing.T) {
	sim := startSim(t)
	sim.SeedBookmarks("1001", 3)
	const redirect = "http://127.0.0.1:8085/callback"
	sim.RegisterClient("readme-app", "", redirect)
	sim.SetAuthorizingUser("readme-app", "1001")
	var mu sync.Mutex
	agents := map[string]map[string]bool{} // operation: User-Agents
	sim.OnRequest(func(r xsim.RequestInfo) {
		if strings.HasPrefix(r.Operation, "oauth_") {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if agents[r.Operation] == nil {
			agents[r.Operation] = map[string]bool{}
		}
		agents[r.Operation][r.UserAgent] = true
	})
	dir := t.TempDir()
	if code, out := loginHeadless(t, sim, redirect, filepath.Join(dir, "alice.json")); code != 0 {
		t.Fatalf("login exited %d: %s", code, out)
	}
	spec := specFile(t, dir, sim.URL(), fmt.Sprintf("oauth: {token_url: %q}", sim.TokenURL()), "accounts:", "  - token_file: alice.json")
	out := filepath.Join(dir, "archive")
	for _, args := range [][]string{{"export", "--spec", spec, "--out", out, "--quiet"}, {"status", "--spec", spec, "--out", out}} {
		if code, stdout, stderr := runCLI(t, args...); code != ExitOK {
			t.Fatalf("%s: exit %d: %s%s", args[0], code, stdout, stderr)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for _, op := range []string{xsim.OpUsersMe, xsim.OpListBookmarks} {
		if agents[op] == nil {
			t.Errorf("no %s request", op)
		}
	}
	want := "cq-source-x/" + xplugin.Version
	for op, uas := range agents {
		if len(uas) != 1 || !uas[want] {
			t.Errorf("%s requests said User-Agent %v, want %q", op, slices.Collect(maps.Keys(uas)), want)
		}
	}
}

// Logging in a second account with the same --token-file (the default is
// x-token.json) does not destroy the first account's token: the command
// refuses, naming both users, unless --replace is given.
func TestLoginDoesNotOverwriteAnotherUsersTokenFile(t *testing.T) {
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	const redirect = "http://127.0.0.1:8085/callback"
	sim.RegisterClient("readme-app", "", redirect)
	tokenFile := filepath.Join(t.TempDir(), "x-token.json")
	sim.SetAuthorizingUser("readme-app", "1001")
	if code, out := loginHeadless(t, sim, redirect, tokenFile); code != 0 {
		t.Fatalf("first login exited %d: %s", code, out)
	}
	first, err := auth.TokenFile{Path: tokenFile}.Load()
	if err != nil {
		t.Fatal(err)
	}
	sim.SetAuthorizingUser("readme-app", "1002")
	code, out := loginHeadless(t, sim, redirect, tokenFile)
	if code != ExitError || !strings.Contains(out, "holds the token of another user (id 1001") || !strings.Contains(out, "--replace") {
		t.Fatalf("second user's login exited %d: %s", code, out)
	}
	if now, err := (auth.TokenFile{Path: tokenFile}).Load(); err != nil || now.RefreshToken != first.RefreshToken {
		t.Fatalf("the first user's token was changed: %v", err)
	}
	if code, out := loginHeadless(t, sim, redirect, tokenFile, "--replace"); code != 0 {
		t.Fatalf("login --replace exited %d: %s", code, out)
	}
	if now, err := (auth.TokenFile{Path: tokenFile}).Load(); err != nil || now.UserID != "1002" {
		t.Fatalf("after --replace: %v, %v", now, err)
	}
}

// A login without a client id says which flag is missing.
func TestLoginCommandNeedsAClientID(t *testing.T) {
	var stderr strings.Builder
	t.Setenv("X_CLIENT_ID", "")
	if code := Run(context.Background(), []string{"login", "--token-file", filepath.Join(t.TempDir(), "t.json")}, strings.NewReader(""), io.Discard, &stderr); code != ExitUsage || !strings.Contains(stderr.String(), "--client-id is required") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}

// The spec snippet the login prints names the token file by its absolute
// path: a relative one would mean the spec file's directory to `export` and
// the working directory to a CloudQuery sync.
func TestLoginPrintsTheTokenFilesAbsolutePath(t *testing.T) {
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	const redirect = "http://127.0.0.1:8085/callback"
	sim.RegisterClient("readme-app", "", redirect)
	sim.SetAuthorizingUser("readme-app", "1001")
	dir := t.TempDir()
	t.Chdir(dir)
	code, out := loginHeadless(t, sim, redirect, "alice.json")
	if code != 0 {
		t.Fatalf("login exited %d: %s", code, out)
	}
	if want := "- token_file: " + strconv.Quote(filepath.Join(dir, "alice.json")); !strings.Contains(out, want) {
		t.Fatalf("output lacks %q:\n%s", want, out)
	}
}

// --scopes asks for more than the read scopes and offline.access, and the
// token file records what X granted; --write is --scopes bookmark.write.
func TestLoginScopesAsksForMoreScopes(t *testing.T) {
	sim := startSim(t)
	const redirect = "http://127.0.0.1:8085/callback"
	sim.RegisterClient("readme-app", "", redirect)
	sim.SetAuthorizingUser("readme-app", "1001")
	for _, extra := range [][]string{{"--scopes", "bookmark.write"}, {"--write"}} {
		tokenFile := filepath.Join(t.TempDir(), "alice.json")
		code, out := loginHeadless(t, sim, redirect, tokenFile, extra...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d: %s", extra, code, out)
		}
		if !strings.Contains(out, "scope=tweet.read+users.read+bookmark.read+offline.access+bookmark.write") {
			t.Errorf("%v: the authorize URL does not ask for bookmark.write:\n%s", extra, out)
		}
		stored, err := auth.TokenFile{Path: tokenFile}.Load()
		if err != nil || stored.Scope != "tweet.read users.read bookmark.read offline.access bookmark.write" {
			t.Errorf("%v: token file scope %q, %v", extra, stored.Scope, err)
		}
	}
	code, _, stderr := runCLI(t, "login", "--client-id", "app", "--scopes", "bookmark.write,no such scope")
	if code != ExitUsage || !strings.Contains(stderr, `--scopes: "no" is not a scope name such as bookmark.write`) {
		t.Errorf("a bad scope: exit %d, %s", code, stderr)
	}
}

// The login prints what docs/cli.md says: the spec lines that use the token
// file (with oauth.token_url and base_url when they are not X's), and the
// status and logout commands for it, which work as printed.
func TestLoginPrintsTheSpecLinesAndTheStatusAndLogoutCommands(t *testing.T) {
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	const redirect = "http://127.0.0.1:8085/callback"
	sim.RegisterClient("readme-app", "", redirect)
	sim.SetAuthorizingUser("readme-app", "1001")
	tokenFile := filepath.Join(t.TempDir(), "alice.json")
	code, out := loginHeadless(t, sim, redirect, tokenFile)
	if code != 0 {
		t.Fatalf("login exited %d: %s", code, out)
	}
	mustContain(t, out, "  oauth:\n    token_url: \""+sim.TokenURL()+"\"\n", "  base_url: \""+sim.URL()+"\"\n", "    - token_file: \""+tokenFile+"\"\n")
	for _, command := range []string{"status", "logout"} {
		line := regexp.MustCompile(`(?m)^  cq-source-x ` + command + ` .*$`).FindString(out)
		if line == "" {
			t.Fatalf("no %s command in:\n%s", command, out)
		}
		if code, stdout, stderr := runCLI(t, strings.Fields(line)[1:]...); code != 0 {
			t.Errorf("%s: exit %d\n%s%s", line, code, stdout, stderr)
		}
	}
	if _, err := os.Stat(tokenFile); err == nil {
		t.Error("the printed logout did not remove the token file")
	}
}
