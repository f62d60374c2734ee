package auth

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
)

// env is one fake X, one token file holding a freshly issued pair, and a virtual clock.
type env struct {
	t    *testing.T
	clk  *clock.Virtual
	fx   *fakeX
	cfg  Config
	file TokenFile
	orig *StoredToken
}

func newEnv(t *testing.T, secret string) *env {
	t.Helper()
	clk := clock.NewVirtual(t0)
	fx := newFakeX(t, clk)
	cfg := fx.config("app", secret, "http://127.0.0.1:1/callback")
	file := TokenFile{Path: filepath.Join(t.TempDir(), "token.json")}
	st := fx.issue("app")
	if err := file.Save(st); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, clk: clk, fx: fx, cfg: cfg, file: file, orig: st}
}

func (e *env) source(opts ...SourceOption) *FileTokenSource {
	e.t.Helper()
	opts = append([]SourceOption{WithClock(e.clk), WithHTTPClient(e.fx.srv.Client())}, opts...)
	s, err := NewFileTokenSource(e.t.Context(), e.cfg, e.file, opts...)
	if err != nil {
		e.t.Fatal(err)
	}
	return s
}

func (e *env) load() *StoredToken {
	e.t.Helper()
	st, err := e.file.Load()
	if err != nil {
		e.t.Fatal(err)
	}
	return st
}

func (e *env) refreshes() int { _, r, _, _ := e.fx.counts(); return r }

func TestRefreshBeforeExpiry(t *testing.T) {
	e := newEnv(t, "")
	s := e.source()
	tok, err := s.Token()
	if err != nil || tok.AccessToken != e.orig.AccessToken {
		t.Fatalf("fresh token: %v", err)
	}
	e.clk.Advance(2*time.Hour - 6*time.Minute) // outside the 5-minute margin
	if tok, err = s.Token(); err != nil || tok.AccessToken != e.orig.AccessToken || e.refreshes() != 0 {
		t.Fatalf("refreshed too early (err %v, refreshes %d)", err, e.refreshes())
	}
	e.clk.Advance(2 * time.Minute) // 4 minutes left: inside the margin, not yet expired
	tok, err = s.Token()
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken == e.orig.AccessToken || e.refreshes() != 1 {
		t.Fatalf("not refreshed inside the margin (refreshes %d)", e.refreshes())
	}
	disk := e.load()
	if disk.AccessToken != tok.AccessToken || disk.RefreshToken == e.orig.RefreshToken || disk.RefreshToken == "" {
		t.Error("rotated pair not saved")
	}
	if !disk.Expiry.Equal(e.clk.Now().Add(2*time.Hour)) || !tok.Expiry.Equal(disk.Expiry) {
		t.Errorf("expiry %v, want now+2h (%v)", disk.Expiry, e.clk.Now().Add(2*time.Hour))
	}
	if disk.UserID != "42" || disk.Username != "alice" || disk.ClientID != "app" || !disk.UpdatedAt.Equal(e.clk.Now()) {
		t.Errorf("fields not kept: %+v", disk)
	}
	if names := dirNames(t, filepath.Dir(e.file.Path)); strings.Join(names, ",") != "token.json,token.json.lock" {
		t.Errorf("directory holds %v", names)
	}
	// The new token is reused, not refreshed again.
	if tok2, _ := s.Token(); tok2.AccessToken != tok.AccessToken || e.refreshes() != 1 {
		t.Error("refreshed twice")
	}
}

func TestRefreshWithoutNewRefreshTokenKeepsOldOne(t *testing.T) {
	e := newEnv(t, "")
	e.fx.set(func(fx *fakeX) { fx.omitRefresh = true })
	s := e.source()
	e.clk.Advance(2 * time.Hour)
	if _, err := s.Token(); err != nil {
		t.Fatal(err)
	}
	if disk := e.load(); disk.RefreshToken != e.orig.RefreshToken || disk.AccessToken == e.orig.AccessToken {
		t.Error("old refresh token not kept")
	}
}

func TestRefreshConfidentialClientUsesBasicAuth(t *testing.T) {
	e := newEnv(t, "the-client-secret")
	s := e.source()
	e.clk.Advance(2 * time.Hour)
	if _, err := s.Token(); err != nil {
		t.Fatal(err)
	}
	e.fx.mu.Lock()
	authz, form := e.fx.lastTokenAuth, e.fx.lastTokenForm
	e.fx.mu.Unlock()
	if !strings.HasPrefix(authz, "Basic ") || form.Has("client_secret") || form.Get("grant_type") != "refresh_token" {
		t.Errorf("Authorization %q, form %v", authz, form)
	}
}

func TestRotationAcrossTwoSourcesSharingOneFile(t *testing.T) {
	e := newEnv(t, "") // strictSpent: a spent refresh token arriving fails the test
	a, b := e.source(), e.source()
	const rounds, perSource = 40, 4
	for round := 1; round <= rounds; round++ {
		e.clk.Advance(2 * time.Hour)
		var wg sync.WaitGroup
		toks := make(chan string, 2*perSource)
		for _, s := range []*FileTokenSource{a, b} {
			for range perSource {
				wg.Go(func() {
					tok, err := s.Token()
					if err != nil {
						t.Error(err)
						return
					}
					toks <- tok.AccessToken
				})
			}
		}
		wg.Wait()
		close(toks)
		seen := map[string]bool{}
		for at := range toks {
			seen[at] = true
		}
		if len(seen) != 1 {
			t.Fatalf("round %d: %d different access tokens handed out, want 1", round, len(seen))
		}
		if got := e.refreshes(); got != round {
			t.Fatalf("round %d: %d refreshes in total, want exactly one per expiry", round, got)
		}
	}
	if _, _, spent, _ := e.fx.counts(); spent != 0 {
		t.Errorf("%d spent refresh tokens sent", spent)
	}
}

func TestRotationAcrossSourcesAfterInvalidate(t *testing.T) {
	// Both sources see a 401 for the same token at once: exactly one refresh.
	e := newEnv(t, "")
	a, b := e.source(), e.source()
	for round := 1; round <= 20; round++ {
		cur, _ := a.Token()
		_, _ = b.Token()
		var wg sync.WaitGroup
		for _, s := range []*FileTokenSource{a, b} {
			wg.Go(func() {
				s.Invalidate(cur.AccessToken)
				if tok, err := s.Token(); err != nil || tok.AccessToken == cur.AccessToken {
					t.Errorf("after Invalidate: %v", err)
				}
			})
		}
		wg.Wait()
		if got := e.refreshes(); got != round {
			t.Fatalf("round %d: %d refreshes, want %d", round, got, round)
		}
	}
}

func TestInvalidateUsesNewerTokenFromFile(t *testing.T) {
	e := newEnv(t, "")
	a, b := e.source(), e.source()
	b.Invalidate(e.orig.AccessToken)
	nb, err := b.Token()
	if err != nil {
		t.Fatal(err)
	}
	a.Invalidate(e.orig.AccessToken)
	na, err := a.Token()
	if err != nil {
		t.Fatal(err)
	}
	if na.AccessToken != nb.AccessToken || e.refreshes() != 1 {
		t.Errorf("a refreshed again instead of using b's token (refreshes %d)", e.refreshes())
	}
	// Invalidating a token that is no longer current does nothing.
	a.Invalidate(e.orig.AccessToken)
	if na2, _ := a.Token(); na2.AccessToken != na.AccessToken || e.refreshes() != 1 {
		t.Error("stale Invalidate forced a refresh")
	}
}

func TestSpentRefreshTokenEndsWithLoginRequired(t *testing.T) {
	e := newEnv(t, "")
	e.fx.set(func(fx *fakeX) { fx.strictSpent = false })
	e.fx.spend(e.orig.RefreshToken) // e.g. refreshed by a copy of the file elsewhere
	s := e.source()
	e.clk.Advance(2 * time.Hour)
	_, err := s.Token()
	if !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "run `cq-source-x login` again") {
		t.Fatalf("err = %v", err)
	}
	var te *TokenEndpointError
	if !errors.As(err, &te) || te.StatusCode != 400 || te.Code != "invalid_request" || te.Temporary() {
		t.Errorf("TokenEndpointError = %+v", te)
	}
	// Never a retry loop: later calls fail at once, without sending the dead token again.
	for range 5 {
		if _, err := s.Token(); !errors.Is(err, ErrLoginRequired) {
			t.Fatalf("err = %v", err)
		}
	}
	if _, _, spent, n := e.fx.counts(); spent != 1 || n != 1 {
		t.Errorf("token requests %d, spent tokens sent %d; want 1 and 1", n, spent)
	}
}

func TestTransientTokenEndpointFailureIsNotLoginRequired(t *testing.T) {
	e := newEnv(t, "")
	e.fx.set(func(fx *fakeX) { fx.fail5xx = 1 })
	s := e.source()
	e.clk.Advance(2 * time.Hour)
	_, err := s.Token()
	var te *TokenEndpointError
	if err == nil || errors.Is(err, ErrLoginRequired) || !errors.As(err, &te) || !te.Temporary() || te.StatusCode != 503 {
		t.Fatalf("err = %v", err)
	}
	if strings.Contains(err.Error(), "<html>") {
		t.Errorf("response body in error: %v", err)
	}
	tok, err := s.Token() // the caller retries: the refresh token was not spent
	if err != nil || tok.AccessToken == e.orig.AccessToken {
		t.Fatalf("retry: %v", err)
	}
}

func TestNetworkFailureIsTransient(t *testing.T) {
	e := newEnv(t, "")
	s := e.source()
	e.fx.srv.Close()
	e.clk.Advance(2 * time.Hour)
	_, err := s.Token()
	var te *TokenEndpointError
	if err == nil || errors.Is(err, ErrLoginRequired) || !errors.As(err, &te) || !te.Temporary() {
		t.Fatalf("err = %v", err)
	}
}

func TestEarlyRefreshFailureKeepsUsingCurrentToken(t *testing.T) {
	e := newEnv(t, "")
	e.fx.set(func(fx *fakeX) { fx.fail5xx = 100 })
	s := e.source()
	e.clk.Advance(2*time.Hour - 3*time.Minute) // inside the margin, still valid
	tok, err := s.Token()
	if err != nil || tok.AccessToken != e.orig.AccessToken {
		t.Fatalf("Token = %v", err)
	}
	_, _, _, n := e.fx.counts()
	if tok, err = s.Token(); err != nil || tok.AccessToken != e.orig.AccessToken {
		t.Fatal(err)
	}
	if _, _, _, n2 := e.fx.counts(); n2 != n {
		t.Error("retried the refresh at once instead of backing off")
	}
	e.fx.set(func(fx *fakeX) { fx.fail5xx = 0 })
	e.clk.Advance(time.Minute)
	if tok, err = s.Token(); err != nil || tok.AccessToken == e.orig.AccessToken {
		t.Fatalf("refresh after back-off: %v", err)
	}
}

var errSimulatedCrash = errors.New("simulated crash")

func TestCrashBetweenTokenResponseAndSaveRequiresLogin(t *testing.T) {
	e := newEnv(t, "")
	e.fx.set(func(fx *fakeX) { fx.strictSpent = false })
	a := e.source(e.answerLost())
	e.clk.Advance(2 * time.Hour)
	if _, err := a.Token(); !strings.Contains(fmt.Sprint(err), errSimulatedCrash.Error()) {
		t.Fatalf("err = %v", err)
	}
	if e.refreshes() != 1 {
		t.Fatal("the refresh did not reach the server")
	}
	// The file still holds the old complete pair, whose refresh token X has spent.
	if disk := e.load(); disk.RefreshToken != e.orig.RefreshToken || disk.AccessToken != e.orig.AccessToken {
		t.Fatal("file changed")
	}
	if _, err := os.Stat(e.file.Path + ".refreshing"); err != nil {
		t.Errorf("refresh marker missing: %v", err)
	}

	// The next run.
	b := e.source()
	_, err := b.Token()
	if !errors.Is(err, ErrLoginRequired) {
		t.Fatalf("next run: err = %v", err)
	}
	for _, want := range []string{"run `cq-source-x login` again", "interrupted"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if _, _, spent, _ := e.fx.counts(); spent != 1 {
		t.Errorf("spent tokens sent = %d, want 1 (fail fast, no retry)", spent)
	}
}

func TestRefreshMarkerRemovedAfterSuccess(t *testing.T) {
	e := newEnv(t, "")
	var sawMarker bool
	e.fx.set(func(fx *fakeX) {
		fx.onRefresh = func() {
			data, err := os.ReadFile(e.file.Path + ".refreshing")
			sawMarker = err == nil && strings.Contains(string(data), `"refresh_token_sha256_prefix"`)
			if strings.Contains(string(data), e.orig.RefreshToken) || strings.Contains(string(data), e.orig.AccessToken) {
				t.Error("the refresh marker holds a token")
			}
		}
	})
	s := e.source()
	e.clk.Advance(2 * time.Hour)
	if _, err := s.Token(); err != nil {
		t.Fatal(err)
	}
	if !sawMarker {
		t.Error("no refresh marker while the request was in flight")
	}
	if _, err := os.Stat(e.file.Path + ".refreshing"); !os.IsNotExist(err) {
		t.Errorf("marker left behind: %v", err)
	}
}

// A refresh X answered with a rejection was not interrupted: the marker it wrote is removed,
// so the next run does not blame an interrupted refresh (the package documentation: the marker
// exists "only while a refresh is in flight or after one was interrupted"). A marker left by a
// really interrupted refresh is kept, run after run.
func TestRefreshMarkerRemovedAfterRejectionButKeptAfterInterruption(t *testing.T) {
	t.Run("rejected", func(t *testing.T) {
		e := newEnv(t, "")
		e.fx.set(func(fx *fakeX) { fx.strictSpent = false })
		e.fx.spend(e.orig.RefreshToken) // e.g. the app's access was revoked
		e.clk.Advance(2 * time.Hour)
		for run := 1; run <= 2; run++ {
			_, err := e.source().Token()
			if !errors.Is(err, ErrLoginRequired) || strings.Contains(err.Error(), "interrupted") {
				t.Fatalf("run %d: err = %v, want ErrLoginRequired without blaming an interruption", run, err)
			}
			if _, err := os.Stat(e.file.Path + ".refreshing"); !os.IsNotExist(err) {
				t.Fatalf("run %d: marker left after a rejection: %v", run, err)
			}
		}
	})
	t.Run("interrupted", func(t *testing.T) {
		e := newEnv(t, "")
		e.fx.set(func(fx *fakeX) { fx.strictSpent = false })
		e.clk.Advance(2 * time.Hour)
		if _, err := e.source(e.answerLost()).Token(); !strings.Contains(fmt.Sprint(err), errSimulatedCrash.Error()) {
			t.Fatalf("err = %v", err)
		}
		for run := 2; run <= 3; run++ {
			_, err := e.source().Token()
			if !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "interrupted") {
				t.Fatalf("run %d: err = %v, want ErrLoginRequired saying a refresh was interrupted", run, err)
			}
		}
	})
	t.Run("not sent", func(t *testing.T) {
		e := newEnv(t, "")
		e.clk.Advance(2 * time.Hour)
		// Cancelled just after the marker was written, before the request is sent.
		ctx := cancelOnMarker{Context: context.Background(), marker: e.file.Path + ".refreshing"}
		if _, err := e.source().TokenContext(ctx); err == nil || !strings.Contains(err.Error(), "refresh not started") {
			t.Fatalf("err = %v, want the refresh not started", err)
		}
		if _, _, _, n := e.fx.counts(); n != 0 {
			t.Fatalf("%d token requests sent", n)
		}
		if _, err := os.Stat(ctx.marker); !os.IsNotExist(err) {
			t.Errorf("marker left although nothing was sent: %v", err)
		}
	})
}

// cancelOnMarker is a context that reports itself cancelled while the refresh marker exists.
type cancelOnMarker struct {
	context.Context
	marker string
}

func (c cancelOnMarker) Err() error {
	if _, err := os.Stat(c.marker); err == nil {
		return context.Canceled
	}
	return nil
}

func TestCancelledContextDoesNotAbandonSentRefresh(t *testing.T) {
	e := newEnv(t, "")
	ctx, cancel := context.WithCancel(t.Context())
	e.fx.set(func(fx *fakeX) { fx.onRefresh = cancel }) // the caller gives up mid-request
	s := e.source()
	e.clk.Advance(2 * time.Hour)
	tok, err := s.TokenContext(ctx)
	if err != nil {
		t.Fatalf("TokenContext: %v", err)
	}
	if disk := e.load(); disk.AccessToken != tok.AccessToken || disk.RefreshToken == e.orig.RefreshToken {
		t.Error("the answer of a sent refresh was not saved")
	}
}

func TestSaveFailureKeepsRefreshedPairAndRetries(t *testing.T) {
	e := newEnv(t, "")
	fail := true
	var mu sync.Mutex
	e.file.renameHook = func(o, n string) error {
		mu.Lock()
		defer mu.Unlock()
		if fail && filepath.Base(n) == "token.json" {
			return errors.New("disk full")
		}
		return os.Rename(o, n)
	}
	s := e.source()
	e.clk.Advance(2 * time.Hour)
	_, err := s.Token()
	if err == nil || !strings.Contains(err.Error(), "disk full") || errors.Is(err, ErrLoginRequired) {
		t.Fatalf("err = %v", err)
	}
	if disk := e.load(); disk.AccessToken != e.orig.AccessToken {
		t.Fatal("file changed")
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	tok, err := s.Token()
	if err != nil {
		t.Fatal(err)
	}
	if e.refreshes() != 1 {
		t.Errorf("refreshes = %d, want 1 (the kept pair is saved, not refreshed again)", e.refreshes())
	}
	if disk := e.load(); disk.AccessToken != tok.AccessToken || disk.RefreshToken == e.orig.RefreshToken {
		t.Error("kept pair not saved")
	}
}

func TestClientIDMismatchRequiresLogin(t *testing.T) {
	e := newEnv(t, "")
	cfg := e.cfg
	cfg.ClientID = "other-app"
	_, err := NewFileTokenSource(t.Context(), cfg, e.file)
	if !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "other-app") {
		t.Fatalf("err = %v", err)
	}
}

func TestNoRefreshTokenRequiresLoginAtExpiry(t *testing.T) {
	e := newEnv(t, "")
	st := e.load()
	st.RefreshToken = ""
	if err := e.file.Save(st); err != nil {
		t.Fatal(err)
	}
	s := e.source()
	if _, err := s.Token(); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(2 * time.Hour)
	if _, err := s.Token(); !errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "offline.access") {
		t.Fatalf("err = %v", err)
	}
}

func TestRefreshMarginValidated(t *testing.T) {
	e := newEnv(t, "")
	if _, err := NewFileTokenSource(t.Context(), e.cfg, e.file, WithRefreshMargin(3*time.Hour)); err == nil {
		t.Error("3h margin accepted")
	}
}

func TestLockWaitIsBounded(t *testing.T) {
	e := newEnv(t, "")
	unlock, err := e.file.Lock(t.Context()) // another process holds the lock forever
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unlock() }()
	s := e.source(withLockTimeout(100 * time.Millisecond))
	e.clk.Advance(2 * time.Hour)
	_, err = s.Token()
	if err == nil || errors.Is(err, ErrLoginRequired) || !strings.Contains(err.Error(), "lock") {
		t.Fatalf("err = %v", err)
	}
}

// X rotates the refresh token it is sent. When the token file's directory
// cannot be written (disk full: even the small refresh marker fails), the
// refresh is not sent: the rotated token X would return could not be saved,
// and the one on disk would be spent.
func TestNoRefreshIsSentWhenTheDirectoryCannotBeWritten(t *testing.T) {
	e := newEnv(t, "")
	e.file.renameHook = func(o, n string) error { return errors.New("disk full") }
	s := e.source()
	e.clk.Advance(2 * time.Hour)
	_, err := s.Token()
	if err == nil || !strings.Contains(err.Error(), "not refreshing") || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v", err)
	}
	if e.refreshes() != 0 {
		t.Fatalf("%d refreshes sent", e.refreshes())
	}
	if disk := e.load(); disk.RefreshToken != e.orig.RefreshToken {
		t.Fatal("file changed")
	}
}

// An early refresh (the access token still good) whose answer cannot be
// saved is an error, not a silent fallback to the old access token: the
// refresh token on disk is spent, and the new one lives only in this
// process. Once saving works, the kept pair is saved, not refreshed again.
func TestAnEarlyRefreshThatCannotBeSavedIsReported(t *testing.T) {
	e := newEnv(t, "")
	var mu sync.Mutex
	fail := true
	e.file.renameHook = func(o, n string) error {
		mu.Lock()
		defer mu.Unlock()
		if fail && filepath.Base(n) == "token.json" {
			return errors.New("disk full")
		}
		return os.Rename(o, n)
	}
	s := e.source()
	e.clk.Advance(2*time.Hour - 3*time.Minute) // inside the refresh margin, not expired
	if _, err := s.Token(); err == nil || !strings.Contains(err.Error(), "could not save it") {
		t.Fatalf("err = %v, want the unsaved refresh reported", err)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	tok, err := s.Token()
	if err != nil {
		t.Fatal(err)
	}
	if disk := e.load(); e.refreshes() != 1 || disk.AccessToken != tok.AccessToken || disk.RefreshToken == e.orig.RefreshToken {
		t.Fatalf("%d refreshes; the kept pair was not saved", e.refreshes())
	}
}

// A source given a Mask adds every credential it holds as soon as it
// has it: the client secret (and its Basic header), the pair it read, and
// the pair a refresh gave it, so that a server echoing any of them later
// gets it masked.
func TestTheMaskLearnsEveryTokenTheSourceHolds(t *testing.T) {
	e := newEnv(t, "app-client-secret-123")
	r := secrets.New()
	s := e.source(WithSecrets(r))
	basic := base64.StdEncoding.EncodeToString([]byte("app:app-client-secret-123"))
	for _, secret := range []string{e.orig.AccessToken, e.orig.RefreshToken, "app-client-secret-123", basic} {
		if got := r.String("x " + secret); got != "x "+secrets.Hidden {
			t.Errorf("not masked before any refresh: %q", got)
		}
	}
	e.clk.Advance(2 * time.Hour)
	tok, err := s.Token()
	if err != nil || tok.AccessToken == e.orig.AccessToken {
		t.Fatalf("no refresh: %v", err)
	}
	for _, secret := range []string{tok.AccessToken, e.load().RefreshToken} {
		if got := r.String("x " + secret); got != "x "+secrets.Hidden {
			t.Errorf("the refreshed pair is not masked: %q", got)
		}
	}
}

// failingRename makes Saves of the token file fail ("disk full") while *fail is true.
func failingRename(mu *sync.Mutex, fail *bool) func(o, n string) error {
	return func(o, n string) error {
		mu.Lock()
		defer mu.Unlock()
		if *fail && filepath.Base(n) == "token.json" {
			return errors.New("disk full")
		}
		return os.Rename(o, n)
	}
}

// A refreshed pair kept in memory because its Save failed is obsolete once
// the file holds another pair (the user logged in again): the new login's
// pair is used, and the kept pair is never written over it.
func TestAnUnsavedPairIsDroppedAfterANewLogin(t *testing.T) {
	e := newEnv(t, "")
	var mu sync.Mutex
	fail := true
	e.file.renameHook = failingRename(&mu, &fail)
	s := e.source()
	e.clk.Advance(2 * time.Hour)
	if _, err := s.Token(); err == nil || !strings.Contains(err.Error(), "could not save it") {
		t.Fatalf("err = %v, want the unsaved refresh reported", err)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	login := e.fx.issue("app")
	if err := e.file.Save(login); err != nil {
		t.Fatal(err)
	}
	tok, err := s.Token()
	if err != nil || tok.AccessToken != login.AccessToken {
		t.Fatalf("Token = %v, want the new login's access token", err)
	}
	if disk := e.load(); e.refreshes() != 1 || disk.AccessToken != login.AccessToken || disk.RefreshToken != login.RefreshToken {
		t.Errorf("%d refreshes; the file no longer holds the new login's pair", e.refreshes())
	}
}

// Saving a kept pair again can fail again: that is reported as the retry's
// failure, and the pair is still kept, never refreshed a second time.
func TestAFailedRetryToSaveTheKeptPairIsReported(t *testing.T) {
	e := newEnv(t, "")
	var mu sync.Mutex
	fail := true
	e.file.renameHook = failingRename(&mu, &fail)
	s := e.source()
	e.clk.Advance(2 * time.Hour)
	if _, err := s.Token(); err == nil || !strings.Contains(err.Error(), "could not save it") {
		t.Fatalf("err = %v, want the unsaved refresh reported", err)
	}
	if _, err := s.Token(); err == nil || !strings.Contains(err.Error(), "saving the refreshed token (retry) failed") || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("err = %v, want the failed retry reported", err)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	tok, err := s.Token()
	if err != nil {
		t.Fatal(err)
	}
	if disk := e.load(); e.refreshes() != 1 || disk.AccessToken != tok.AccessToken {
		t.Errorf("%d refreshes; the kept pair was not saved", e.refreshes())
	}
}

// Each refresh is logged, and so is a token another process refreshed; the
// lines name the token file, never a token.
func TestRefreshesAreLoggedWithoutTokens(t *testing.T) {
	e := newEnv(t, "")
	var buf bytes.Buffer
	log := zerolog.New(&buf)
	a, b := e.source(WithLogger(log)), e.source(WithLogger(log))
	e.clk.Advance(2 * time.Hour)
	tok, err := a.Token()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Token(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	want := []string{"auth: access token refreshed", "auth: using the access token another process refreshed"}
	if len(lines) != len(want) {
		t.Fatalf("log lines:\n%s", buf.String())
	}
	for i, line := range lines {
		if !strings.Contains(line, want[i]) || !strings.Contains(line, e.file.Path) {
			t.Errorf("line %d = %s, want %q naming the token file", i, line, want[i])
		}
		for _, secret := range []string{e.orig.AccessToken, e.orig.RefreshToken, tok.AccessToken, e.load().RefreshToken} {
			if strings.Contains(line, secret) {
				t.Errorf("line %d holds a token: %s", i, line)
			}
		}
	}
}

// answerLost makes the source's token requests reach X and their answers never arrive, as when
// the process ends after X answered a refresh and before its pair was saved.
func (e *env) answerLost() SourceOption {
	base := e.fx.srv.Client().Transport
	return WithHTTPClient(&http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := base.RoundTrip(r)
		if err == nil {
			resp.Body.Close()
			err = errSimulatedCrash
		}
		return nil, err
	})})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// withLockTimeout bounds the wait for the token file lock (default DefaultLockTimeout).
func withLockTimeout(d time.Duration) SourceOption {
	return func(s *FileTokenSource) { s.lockTimeout = d }
}
