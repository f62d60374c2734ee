package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/auth"
)

// startSandboxCommand runs `cq-source-x sandbox` until the test ends and
// returns what it printed once it is ready: the spec, and the rehearsal.
func startSandboxCommand(t *testing.T) (spec, told string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- Run(ctx, []string{"sandbox"}, strings.NewReader(""), &stdout, &stderr) }()
	t.Cleanup(func() {
		cancel()
		if code := <-done; code != ExitOK {
			t.Errorf("sandbox exit %d: %s", code, stderr.String())
		}
	})
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "Ctrl-C") {
		if time.Now().After(deadline) {
			t.Fatalf("the sandbox printed no spec: %q %q", stdout.String(), stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	return stdout.String(), stderr.String()
}

// commandLine finds the printed `cq-source-x VERB ...` command (continued
// over lines ending in a backslash) and returns its arguments.
func commandLine(t *testing.T, told, verb string) []string {
	t.Helper()
	m := regexp.MustCompile(`(?m)^\s*cq-source-x ` + verb + ` ((?:.*\\\n)*.*)$`).FindStringSubmatch(told)
	if m == nil {
		t.Fatalf("no `cq-source-x %s` command in:\n%s", verb, told)
	}
	return append([]string{verb}, strings.Fields(strings.ReplaceAll(m[1], "\\\n", " "))...)
}

// The sandbox lets a user rehearse the whole of a real setup: it registers
// a demo app and prints the login command line; the login (here headless)
// shows the sandbox's consent page, where the user picks carol; the token
// file it writes exports carol's bookmarks with the spec lines the sandbox
// printed; status and logout work with the commands it printed.
func TestSandboxRehearsesALogin(t *testing.T) {
	_, told := startSandboxCommand(t)
	mustContain(t, told, `client id "`+SandboxClientID+`"`, "pick alice, bob or carol")
	t.Chdir(t.TempDir())

	login := commandLine(t, told, "login")
	code, printed := runHeadlessLogin(t, append(login, "--headless"), func(u string) (string, error) { return browse(u, "1003") })
	if code != ExitOK {
		t.Fatalf("login %v: exit %d:\n%s", login, code, printed)
	}
	mustContain(t, printed, "Logged in as @carol (user id 1003)")
	tokenFile, _ := filepath.Abs("alice.json") // the name the sandbox suggests; carol is in it
	if stored, err := (auth.TokenFile{Path: tokenFile}).Load(); err != nil || stored.UserID != "1003" || stored.ClientID != SandboxClientID || stored.RefreshToken == "" {
		t.Fatalf("token file: %v %v", stored, err)
	}

	base := regexp.MustCompile(`--api-url (\S+)`).FindStringSubmatch(told)[1]
	tokenURL := regexp.MustCompile(`token_url: "(\S+)"`).FindStringSubmatch(told)[1]
	spec := fmt.Sprintf("kind: source\nspec:\n  name: x\n  path: ./cq-source-x\n  registry: local\n  version: v0.0.0\n  tables: [\"*\"]\n  destinations: [\"file\"]\n"+
		"  spec:\n    base_url: %q\n    oauth:\n      token_url: %q\n    accounts:\n      - token_file: %q\n", base, tokenURL, "alice.json")
	if err := os.WriteFile("x.yml", []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "export", "--spec", "x.yml", "--out", "archive", "--quiet"); code != ExitOK {
		t.Fatalf("export with the token file: exit %d: %s", code, stderr)
	}
	st, err := archive.ReadState("archive")
	if err != nil || len(st.Archived["1003"]) != 25 {
		t.Fatalf("carol's archive: %v %v", st, err)
	}

	status := commandLine(t, told, "status")
	code, stdout, stderr := runCLI(t, status...)
	if code != ExitOK {
		t.Fatalf("%v: exit %d: %s%s", status, code, stdout, stderr)
	}
	mustContain(t, stdout, "@carol", "refresh:       works")

	logout := commandLine(t, told, "logout")
	if code, _, stderr := runCLI(t, logout...); code != ExitOK {
		t.Fatalf("%v: exit %d: %s", logout, code, stderr)
	}
	if exists(tokenFile) {
		t.Error("logout left the token file")
	}
	if code, _, stderr := runCLI(t, "export", "--spec", "x.yml", "--out", "archive", "--quiet"); code != ExitAllAccountsFailed || !strings.Contains(stderr, "login") {
		t.Errorf("export after logout: exit %d: %s", code, stderr)
	}
}
