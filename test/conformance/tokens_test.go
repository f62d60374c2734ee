package conformance

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// Token tests: the auth package's token file and refreshing token source
// against the simulator's OAuth endpoints, driving the client. The facts:
// "Access tokens live 2 hours"; "Refresh tokens ROTATE: every refresh returns
// a new one and invalidates the old; reusing a spent one gives 400 "Value
// passed for the token was invalid." Persist the new pair atomically before
// using it, and never let two processes refresh the same token at once."

// tokenEndpoint is the token sources' transport to the token endpoint: it
// records every grant sent and can lose the answer of the next refresh after
// the server has processed it (a crash or a dropped connection at the worst
// moment).
type tokenEndpoint struct {
	base http.RoundTripper
	mu   sync.Mutex
	sent []url.Values // the forms, in order
	lose atomic.Bool  // lose the next answer
}

var errLostResponse = errors.New("connection reset by peer (the answer was lost)")

func (te *tokenEndpoint) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := io.ReadAll(req.Body)
	_ = req.Body.Close()
	if err != nil {
		return nil, err
	}
	form, _ := url.ParseQuery(string(body))
	te.mu.Lock()
	te.sent = append(te.sent, form)
	te.mu.Unlock()
	r := req.Clone(req.Context())
	r.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := te.base.RoundTrip(r)
	if err == nil && te.lose.CompareAndSwap(true, false) {
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		return nil, errLostResponse
	}
	return resp, err
}

func (te *tokenEndpoint) forms() []url.Values {
	te.mu.Lock()
	defer te.mu.Unlock()
	return slices.Clone(te.sent)
}

// loggedIn writes a token file for user as the login command would, with a
// token pair the simulator issued to clientID (registered as confidential
// with secret, or public when secret is ""), and returns the file and the
// app configuration.
func (e *env) loggedIn(t *testing.T, clientID, secret, user string) (auth.TokenFile, auth.Config) {
	t.Helper()
	if secret != "" {
		e.sim.RegisterClient(clientID, secret)
	}
	access, refresh, ttl := e.sim.IssueTokenPair(clientID, user)
	now := e.clk.Now()
	file := auth.TokenFile{Path: filepath.Join(t.TempDir(), "x-token.json")}
	err := file.Save(&auth.StoredToken{
		Version: auth.FileFormatVersion, AccessToken: access, RefreshToken: refresh, TokenType: "bearer",
		Expiry: now.Add(ttl).UTC(), Scope: strings.Join(append(slices.Clone(xsim.DefaultScopes), "offline.access"), " "),
		UserID: user, Username: "user_" + user, ClientID: clientID, UpdatedAt: now.UTC(),
	})
	if err != nil {
		t.Fatal(err)
	}
	return file, auth.Config{ClientID: clientID, ClientSecret: secret, AuthURL: e.sim.AuthorizeURL(), TokenURL: e.sim.TokenURL()}
}

// authedClient is a client.Client whose bearer token comes from src.
func (e *env) authedClient(src *auth.FileTokenSource) *client.Client {
	return e.clientWith(&http.Client{Transport: auth.NewTransport(src, e.tr)})
}

func (e *env) source(t *testing.T, cfg auth.Config, file auth.TokenFile, te *tokenEndpoint, opts ...auth.SourceOption) *auth.FileTokenSource {
	t.Helper()
	all := append([]auth.SourceOption{auth.WithClock(e.clk), auth.WithHTTPClient(&http.Client{Transport: te, Timeout: 10 * time.Second})}, opts...)
	src, err := auth.NewFileTokenSource(context.Background(), cfg, file, all...)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

// dirState is a directory's files and their contents.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, de := range entries {
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		m[de.Name()] = string(b)
	}
	return m
}

// Token test (a): two client instances (two FileTokenSources, two
// client.Clients) share one token file and read bookmarks, sequentially and
// concurrently, across several access-token expiries. Every request
// succeeds; each expiry costs exactly one refresh; no refresh token is ever
// sent twice, and the simulator never sees a spent one. Source 1 refreshes 10
// minutes before expiry, source 2 only 1 minute before; with a server that
// revokes the old access token on refresh, source 2's stale token gets a 401,
// which the transport answers by re-reading the file, not by refreshing again.
func TestRotationAcrossTwoTokenSourcesSharingOneFile(t *testing.T) {
	for _, tc := range []struct {
		name, secret string
		revokeOld    bool
	}{
		{"public app", "", false},
		{"confidential app, old access token revoked on refresh", "s3cret-for-tests", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, xsim.Options{RevokeAccessOnRefresh: tc.revokeOld})
			want := e.sim.SeedBookmarks(alice, 20)
			file, cfg := e.loggedIn(t, "app-1", tc.secret, alice)
			te := &tokenEndpoint{base: e.tr}
			src1 := e.source(t, cfg, file, te, auth.WithRefreshMargin(10*time.Minute))
			src2 := e.source(t, cfg, file, te, auth.WithRefreshMargin(time.Minute))
			c1, c2 := e.authedClient(src1), e.authedClient(src2)

			var requests atomic.Int64
			read := func(c *client.Client) error {
				requests.Add(1)
				p, _, err := c.ListBookmarks(context.Background(), alice, client.ListOptions{PageOptions: client.PageOptions{MaxResults: 20}})
				if err == nil && !slices.Equal(postIDs(p), want) {
					err = errors.New("wrong posts")
				}
				return err
			}
			burst := func() {
				var wg sync.WaitGroup
				errs := make(chan error, 6)
				for _, c := range []*client.Client{c1, c2, c1, c2, c1, c2} {
					wg.Go(func() {
						if err := read(c); err != nil {
							errs <- err
						}
					})
				}
				wg.Wait()
				close(errs)
				for err := range errs {
					t.Error(err)
				}
			}

			const rounds = 6
			for round := 1; round <= rounds; round++ {
				st, err := file.Load()
				if err != nil {
					t.Fatal(err)
				}
				if round%2 == 1 {
					// Past the expiry: both sources must refresh; they race.
					e.clk.Set(st.Expiry.Add(time.Second))
				} else {
					// Inside source 1's margin only: 1 refreshes early, 2 still
					// trusts the old access token.
					e.clk.Set(st.Expiry.Add(-5 * time.Minute))
					if err := read(c1); err != nil {
						t.Fatalf("round %d, client 1: %v", round, err)
					}
					if err := read(c2); err != nil {
						t.Fatalf("round %d, client 2: %v", round, err)
					}
				}
				burst()
				if got := e.usage(alice, xsim.OpToken).OK; got != round {
					t.Fatalf("after expiry %d: %d refreshes, want %d", round, got, round)
				}
			}

			forms := te.forms()
			seen := map[string]bool{}
			for _, f := range forms {
				rt := f.Get("refresh_token")
				if f.Get("grant_type") != "refresh_token" || rt == "" || seen[rt] {
					t.Errorf("token request %v: not a refresh with a fresh refresh token", f.Get("grant_type"))
				}
				seen[rt] = true
			}
			if len(forms) != rounds {
				t.Errorf("%d token requests, want %d", len(forms), rounds)
			}
			tok := e.usage(alice, xsim.OpToken)
			if tok.Requests != rounds || tok.ByStatus[200] != rounds {
				t.Errorf("simulator token endpoint (alice): %+v", tok)
			}
			if rejected := e.sim.Usage("")[xsim.OpToken]; rejected.Requests != 0 {
				t.Errorf("simulator saw %d token requests it could not match (spent or unknown refresh tokens)", rejected.Requests)
			}
			list := e.usage(alice, xsim.OpListBookmarks)
			want401 := 0
			if tc.revokeOld {
				want401 = rounds / 2 // client 2's stale token in each early round
			}
			if list.ByStatus[401] != want401 || list.OK != int(requests.Load()) {
				t.Errorf("bookmark requests: %d OK of %d, %d 401s (want %d)", list.OK, requests.Load(), list.ByStatus[401], want401)
			}
			disk, err := file.Load()
			if err != nil {
				t.Fatal(err)
			}
			// Source 1 refreshed last; source 2 uses that pair too, or (when the
			// server let it live) the previous access token until its own margin.
			s1, s2 := src1.Stored(), src2.Stored()
			if s1.AccessToken != disk.AccessToken {
				t.Error("source 1 does not use the token on disk")
			}
			if s2.AccessToken != disk.AccessToken && (tc.revokeOld || !e.clk.Now().Before(s2.Expiry.Add(-time.Minute))) {
				t.Error("source 2 uses a token that is neither on disk nor still valid")
			}
			if disk.UserID != alice || disk.ClientID != "app-1" || disk.RefreshToken == "" {
				t.Errorf("file after rotation: %v", disk)
			}
		})
	}
}

// Token test (b), per the auth package's crash guarantee: "A crash, kill,
// power loss or lost response in that window [between the token endpoint's
// response and the rename] leaves the old, now-spent refresh token on disk;
// the next run fails fast (one request to the token endpoint, no retry) with
// an error wrapping ErrLoginRequired that says to run `cq-source-x login`
// again". Two ways to land in the window: the refresh answer is lost on the
// way (the auth package's own refresh, so its in-flight marker is left), and
// a run that refreshed and died before saving (a direct token-endpoint call
// whose answer is thrown away). In both, the token file is never changed.
func TestCrashAfterTokenResponseBeforeSaveRequiresLogin(t *testing.T) {
	nextRun := func(t *testing.T, e *env, cfg auth.Config, file auth.TokenFile, te *tokenEndpoint) error {
		t.Helper()
		c := e.authedClient(e.source(t, cfg, file, te))
		_, resp, err := c.ListBookmarks(context.Background(), alice, client.ListOptions{})
		if !errors.Is(err, auth.ErrLoginRequired) || !strings.Contains(err.Error(), "run `cq-source-x login` again") {
			t.Fatalf("next run: err = %v, want ErrLoginRequired saying to run `cq-source-x login` again", err)
		}
		var tee *auth.TokenEndpointError
		if !errors.As(err, &tee) || tee.StatusCode != 400 || tee.Temporary() {
			t.Errorf("next run: %+v, want a permanent 400 from the token endpoint", tee)
		}
		if resp == nil || resp.Attempts != 1 {
			t.Errorf("next run: the client retried: %+v", resp)
		}
		// The same run calling again does not send the dead token again.
		sent := len(te.forms())
		if _, _, err := c.ListBookmarks(context.Background(), alice, client.ListOptions{}); !errors.Is(err, auth.ErrLoginRequired) {
			t.Errorf("second call: %v", err)
		}
		if len(te.forms()) != sent {
			t.Error("the dead refresh token was sent again")
		}
		return err
	}

	t.Run("answer lost", func(t *testing.T) {
		e := newEnv(t, xsim.Options{})
		e.sim.SeedBookmarks(alice, 5)
		file, cfg := e.loggedIn(t, "app-1", "", alice)
		dir := filepath.Dir(file.Path)
		onDisk, _ := os.ReadFile(file.Path)
		te := &tokenEndpoint{base: e.tr}
		e.clk.Advance(2*time.Hour + time.Minute) // the access token has expired

		// Run 1: the refresh reaches X, which rotates the token; the answer never arrives.
		te.lose.Store(true)
		_, _, err := e.authedClient(e.source(t, cfg, file, te)).ListBookmarks(context.Background(), alice, client.ListOptions{})
		var tee *auth.TokenEndpointError
		if err == nil || errors.Is(err, auth.ErrLoginRequired) || !errors.As(err, &tee) || !tee.Temporary() {
			t.Fatalf("run 1: err = %v, want a transient token endpoint error", err)
		}
		if e.usage(alice, xsim.OpToken).OK != 1 {
			t.Fatal("run 1: the refresh did not reach the simulator")
		}
		if _, err := os.Stat(file.Path + ".refreshing"); err != nil {
			t.Errorf("run 1: no in-flight marker left: %v", err)
		}
		after1 := dirState(t, dir)

		// Run 2.
		err = nextRun(t, e, cfg, file, te)
		if !strings.Contains(err.Error(), "interrupted") {
			t.Errorf("run 2: the error does not say an earlier refresh was interrupted: %v", err)
		}
		if got := dirState(t, dir); !mapsEqual(got, after1) || got[filepath.Base(file.Path)] != string(onDisk) {
			t.Errorf("run 2 changed the directory: %v", keys(got))
		}
		if rejected := e.sim.Usage("")[xsim.OpToken]; rejected.ByStatus[400] != 1 {
			t.Errorf("simulator: %d rejected refreshes, want exactly 1", rejected.ByStatus[400])
		}
	})

	t.Run("answer thrown away", func(t *testing.T) {
		e := newEnv(t, xsim.Options{})
		e.sim.SeedBookmarks(alice, 5)
		file, cfg := e.loggedIn(t, "app-1", "", alice)
		dir := filepath.Dir(file.Path)
		e.clk.Advance(2*time.Hour + time.Minute)
		stored, err := file.Load()
		if err != nil {
			t.Fatal(err)
		}
		// Run 1 refreshed with the stored refresh token and died before saving.
		resp, err := http.PostForm(e.sim.TokenURL(), url.Values{
			"grant_type": {"refresh_token"}, "refresh_token": {stored.RefreshToken}, "client_id": {cfg.ClientID},
		})
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("direct refresh: %s", resp.Status)
		}
		before := dirState(t, dir)

		te := &tokenEndpoint{base: e.tr}
		nextRun(t, e, cfg, file, te)
		after := dirState(t, dir)
		name := filepath.Base(file.Path)
		if after[name] != before[name] {
			t.Error("the token file changed")
		}
		for n := range after {
			if _, ok := before[n]; !ok && n != name+".lock" {
				t.Errorf("run 2 left %s behind", n)
			}
		}
		if rejected := e.sim.Usage("")[xsim.OpToken]; rejected.ByStatus[400] != 1 {
			t.Errorf("simulator: %d rejected refreshes, want exactly 1", rejected.ByStatus[400])
		}
		// Run 3 says the same, and does not claim that run 2's refresh was
		// interrupted: it was answered (rejected).
		err = nextRun(t, e, cfg, file, te)
		if strings.Contains(err.Error(), "interrupted") {
			t.Errorf("run 3 blames an interrupted refresh: %v", err)
		}

		// A new login (a new pair in the file) works again.
		access, refresh, ttl := e.sim.IssueTokenPair(cfg.ClientID, alice)
		fresh := *stored
		fresh.AccessToken, fresh.RefreshToken, fresh.Expiry = access, refresh, e.clk.Now().Add(ttl).UTC()
		if err := file.Save(&fresh); err != nil {
			t.Fatal(err)
		}
		c := e.authedClient(e.source(t, cfg, file, te))
		if _, _, err := c.ListBookmarks(context.Background(), alice, client.ListOptions{}); err != nil {
			t.Errorf("after a new login: %v", err)
		}
		e.clk.Advance(2 * time.Hour)
		if _, _, err := c.ListBookmarks(context.Background(), alice, client.ListOptions{}); err != nil {
			t.Errorf("after a new login, past the expiry: %v", err)
		}
	})
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
