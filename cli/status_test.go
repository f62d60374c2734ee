package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// statusEnv is a simulator with alice (a token file, 12 bookmarks) and bob
// (a raw access token, 5 bookmarks), a spec for both and an export of them.
type statusEnv struct {
	sim              *xsim.Server
	spec, out, alice string
	aliceToken       *auth.StoredToken
}

func newStatusEnv(t *testing.T, aliceExpiry time.Time) statusEnv {
	t.Helper()
	sim := startSim(t)
	sim.SeedBookmarks("1001", 12)
	sim.SeedBookmarks("1002", 5)
	dir := t.TempDir()
	e := statusEnv{sim: sim, out: filepath.Join(dir, "archive"), alice: filepath.Join(dir, "alice.json")}
	e.aliceToken = writeTokenFile(t, sim, e.alice, "native-app", "1001", aliceExpiry)
	e.spec = specFile(t, dir, sim.URL(), fmt.Sprintf("oauth: {token_url: %q}", sim.TokenURL()), "accounts:",
		"  - token_file: alice.json", fmt.Sprintf("  - {user_id: \"1002\", access_token: %q}", sim.IssueToken("1002")))
	return e
}

// listRequests counts the post-reading requests the simulator received.
func (e statusEnv) listRequests() int {
	n := 0
	for _, u := range []string{"1001", "1002"} {
		for _, op := range []string{xsim.OpListBookmarks, xsim.OpListFolders, xsim.OpGetFolder} {
			n += e.sim.Usage(u)[op].Requests
		}
	}
	return n
}

// status shows, per account, the user behind the token, its scopes and
// expiry, that a refresh works (the rotated pair saved in the file), the
// exporter's last sync of it and the posts held, and sends one GET
// /2/users/me per account and one refresh per token file: no post read.
func TestStatusShowsEachAccountAndReadsNoPost(t *testing.T) {
	e := newStatusEnv(t, time.Now().Add(time.Hour))
	if code, _, stderr := runCLI(t, "export", "--spec", e.spec, "--out", e.out, "--quiet"); code != ExitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	before := e.listRequests()
	code, stdout, stderr := runCLI(t, "status", "--spec", e.spec, "--out", e.out)
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
	}
	mustContain(t, stdout,
		"accounts[0]: @user_1001 (User 1001), user id 1001\n",
		"  scopes:        tweet.read users.read bookmark.read offline.access\n",
		"  refresh:       works: refreshed now; the new pair is saved in the token file\n",
		"(client id native-app)",
		"12 new bookmarks, 0 new folder posts; 12 posts billed (est. USD 0.0600)",
		"list_bookmarks reached_end",
		"  held posts:    12 in the bookmarks walk's memory; 12 in x_bookmarks\n",
		"note: no bookmark.write scope",
		"accounts[1]: @user_1002 (User 1002), user id 1002\n",
		"refresh:       impossible: a raw access_token",
		"5 new bookmarks",
		"status sent 2 requests to the API (GET /2/users/me: a user read each, no post), which returned 0 posts, and 1 token refresh.",
	)
	if e.listRequests() != before {
		t.Errorf("status sent %d post-reading requests", e.listRequests()-before)
	}
	for u, want := range map[string]int{"1001": 1, "1002": 1} {
		if n := e.sim.Usage(u)[xsim.OpUsersMe].Requests; n != want {
			t.Errorf("user %s: %d GET /2/users/me, want %d", u, n, want)
		}
	}
	if n := e.sim.Usage("1001")[xsim.OpToken].Requests; n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
	now, err := auth.TokenFile{Path: e.alice}.Load()
	if err != nil || now.RefreshToken == e.aliceToken.RefreshToken || now.UserID != "1001" {
		t.Fatalf("the rotated pair is not in the file: %v %v", now, err)
	}
	if !refreshWorks(t, e.sim, "native-app", now) || refreshWorks(t, e.sim, "native-app", e.aliceToken) {
		t.Error("the file does not hold the live refresh token")
	}
}

// status --out DIR alone shows every account of the archive, its last sync
// and held posts, from the archive: no spec, no token, no request.
func TestStatusOfAnArchiveAloneSendsNothing(t *testing.T) {
	e := newStatusEnv(t, time.Now().Add(time.Hour))
	if code, _, stderr := runCLI(t, "export", "--spec", e.spec, "--out", e.out, "--quiet"); code != ExitOK {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	requests := func() (n int) {
		for _, u := range []string{"1001", "1002"} {
			for _, op := range e.sim.Usage(u) {
				n += op.Requests
			}
		}
		return n
	}
	before := requests()
	code, stdout, stderr := runCLI(t, "status", "--out", e.out)
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
	}
	mustContain(t, stdout,
		"user 1001: user id 1001\n  last sync:",
		"12 new bookmarks, 0 new folder posts; 12 posts billed (est. USD 0.0600)",
		"  held posts:    12 in the bookmarks walk's memory; 12 in x_bookmarks\n",
		"user 1002: user id 1002\n",
		"5 in the bookmarks walk's memory; 5 in x_bookmarks",
		"status read "+e.out+" alone: no token, no request.")
	if strings.Contains(stdout, "refresh") || strings.Contains(stdout, "user app") {
		t.Errorf("status of the archive alone:\n%s", stdout)
	}
	if n := requests() - before; n != 0 {
		t.Errorf("status sent %d requests", n)
	}
}

// With --no-refresh status sends no token request and leaves the file as it
// was; with an expired access token it does not even ask who the user is.
func TestStatusNoRefreshChangesNothing(t *testing.T) {
	e := newStatusEnv(t, time.Now().Add(time.Hour))
	code, stdout, stderr := runCLI(t, "status", "--spec", e.spec, "--no-refresh")
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
	}
	mustContain(t, stdout, "accounts[0]: @user_1001", "refresh:       not tried: --no-refresh",
		"The last sync and the posts held are in an exporter's directory (--out DIR)", "x_api_usage")
	if n := e.sim.Usage("1001")[xsim.OpToken].Requests; n != 0 {
		t.Errorf("%d token requests", n)
	}
	if now, _ := (auth.TokenFile{Path: e.alice}).Load(); now.RefreshToken != e.aliceToken.RefreshToken {
		t.Error("the token file changed")
	}

	expired := newStatusEnv(t, time.Now().Add(-time.Minute))
	_, stdout, _ = runCLI(t, "status", "--token-file", expired.alice, "--api-url", expired.sim.URL(), "--token-url", expired.sim.TokenURL(), "--no-refresh")
	mustContain(t, stdout, "the access token has expired: the user was not checked", "status sent 0 requests to the API")
}

// An access token that has expired is refreshed by the first request, and
// that refresh is the one status reports (no second one).
func TestStatusRefreshesAnExpiredTokenOnce(t *testing.T) {
	e := newStatusEnv(t, time.Now().Add(-time.Minute))
	code, stdout, stderr := runCLI(t, "status", "--token-file", e.alice, "--api-url", e.sim.URL(), "--token-url", e.sim.TokenURL())
	if code != ExitOK {
		t.Fatalf("exit %d:\n%s%s", code, stdout, stderr)
	}
	mustContain(t, stdout, "refresh:       works: refreshed when the expired access token was used", "valid until")
	if n := e.sim.Usage("1001")[xsim.OpToken].Requests; n != 1 {
		t.Errorf("%d token requests, want 1", n)
	}
}

// An account whose refresh token X refuses has a problem, named; the exit
// code says whether some or all accounts have one.
func TestStatusExitCodeCountsAccountsWithProblems(t *testing.T) {
	e := newStatusEnv(t, time.Now().Add(time.Hour))
	e.sim.RevokeToken(e.aliceToken.RefreshToken)
	code, stdout, stderr := runCLI(t, "status", "--spec", e.spec)
	if code != ExitSomeAccountsFailed {
		t.Fatalf("exit %d, want %d:\n%s%s", code, ExitSomeAccountsFailed, stdout, stderr)
	}
	mustContain(t, stdout, "refresh:       failed", "PROBLEM: refresh: auth: token endpoint refresh failed: HTTP 400", "run `cq-source-x login` again")
	mustContain(t, stderr, "Error: status: 1 of 2 accounts has a problem (see PROBLEM above)")

	code, stdout, _ = runCLI(t, "status", "--token-file", e.alice+","+filepath.Join(t.TempDir(), "missing.json"),
		"--api-url", e.sim.URL(), "--token-url", e.sim.TokenURL())
	if code != ExitAllAccountsFailed {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitAllAccountsFailed, stdout)
	}
	mustContain(t, stdout, "missing.json does not exist")
}

// --json prints the report; the posts billed are none.
func TestStatusJSON(t *testing.T) {
	e := newStatusEnv(t, time.Now().Add(time.Hour))
	code, stdout, stderr := runCLI(t, "status", "--spec", e.spec, "--json", "--no-refresh")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep StatusReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	a := rep.Accounts[0]
	if len(rep.Accounts) != 2 || a.UserID != "1001" || a.Username != "user_1001" || a.Refresh != "not_tried" || a.AccessTokenExpiry == nil ||
		strings.Join(a.Scopes, " ") != strings.Join(readScopes, " ") || rep.APIRequests != 2 || rep.PostsBilled != 0 {
		t.Errorf("%+v", rep)
	}
	if rep.Accounts[1].Refresh != "impossible" || rep.Accounts[1].Scopes != nil {
		t.Errorf("raw access token: %+v", rep.Accounts[1])
	}
}

func TestStatusUsageErrors(t *testing.T) {
	e := newStatusEnv(t, time.Now().Add(time.Hour))
	notDir := filepath.Join(t.TempDir(), "file")
	os.WriteFile(notDir, nil, 0o644)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"status"}, "give --spec FILE, --token-file FILE or --out DIR"},
		{[]string{"status", "--out", notDir}, "is not a directory an export wrote"},
		{[]string{"status", "--spec", e.spec, "--token-file", e.alice}, "none of the others can be"},
		{[]string{"status", "--spec", "/nonexistent.yml"}, "reading the spec file"},
		{[]string{"status", "--spec", e.spec, "--out", notDir}, "is not a directory an export wrote"},
	} {
		if code, _, stderr := runCLI(t, c.args...); code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, stderr)
		}
	}
}

// A wrong token URL is told as a URL to check, not as a transient failure
// to wait out.
func TestStatusTellsAWrongTokenURLToCheck(t *testing.T) {
	sim := startSim(t)
	sim.RegisterClient("native-app", "", "http://127.0.0.1:8085/callback")
	file := filepath.Join(t.TempDir(), "alice.json")
	writeTokenFile(t, sim, file, "native-app", "1001", time.Now().Add(time.Hour))
	for _, tokenURL := range []string{sim.URL() + "/2/oauth/token", "http://127.0.0.1:1/2/oauth2/token"} {
		code, stdout, _ := runCLI(t, "status", "--token-file", file, "--api-url", sim.URL(), "--token-url", tokenURL)
		if code == ExitOK || !strings.Contains(stdout, "--token-url") || strings.Contains(stdout, "try again later") {
			t.Errorf("%s: exit %d\n%s", tokenURL, code, stdout)
		}
	}
}
