package cli

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/test/xsim"
)

// The README's login command, with its flags, against the simulator's OAuth
// endpoints, headless: the test reads the authorize URL the command prints,
// approves it as the user's browser would, and pastes the redirect back.
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

	stdinR, stdinW := io.Pipe()
	stderrR, stderrW := io.Pipe()
	browserDone := make(chan error, 1)
	lines := make(chan string, 100)
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
			u := authorize.FindString(line)
			if u == "" {
				continue
			}
			c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			resp, err := c.Get(u)
			if err != nil {
				browserDone <- err
				return
			}
			resp.Body.Close()
			_, err = io.WriteString(stdinW, resp.Header.Get("Location")+"\n")
			browserDone <- err
			for range lines {
			}
			return
		}
		browserDone <- io.ErrUnexpectedEOF
	}()
	code := Run(context.Background(), []string{"login",
		"--client-id", "readme-app", "--token-file", tokenFile, "--headless",
		"--redirect-url", redirect, "--auth-url", sim.AuthorizeURL(), "--token-url", sim.TokenURL(), "--api-url", sim.URL(),
	}, stdinR, io.Discard, stderrW)
	stderrW.Close()
	if err := <-browserDone; err != nil {
		t.Fatal(err)
	}
	if code != 0 {
		t.Fatalf("login exited %d", code)
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

// A login without a client id says which flag is missing.
func TestLoginCommandNeedsAClientID(t *testing.T) {
	var stderr strings.Builder
	t.Setenv("X_CLIENT_ID", "")
	if code := Run(context.Background(), []string{"login", "--token-file", filepath.Join(t.TempDir(), "t.json")}, strings.NewReader(""), io.Discard, &stderr); code == 0 || !strings.Contains(stderr.String(), "--client-id is required") {
		t.Fatalf("exit %d, stderr %q", code, stderr.String())
	}
}
