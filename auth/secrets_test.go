package auth

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"
)

const clientSecret = "the-client-secret-value"

// assertNoSecret fails when text contains one of the secrets.
func assertNoSecret(t *testing.T, what, text string, secrets []string) {
	t.Helper()
	for _, s := range secrets {
		if s != "" && strings.Contains(text, s) {
			t.Errorf("%s contains a secret (%.6s…): %s", what, s, text)
		}
	}
}

func TestSecretsNeverInErrors(t *testing.T) {
	var errs []error
	var fxs []*fakeX
	collect := func(err error) {
		if err == nil {
			t.Error("expected an error")
			return
		}
		errs = append(errs, err)
	}

	// A refresh rejected by a server that echoes the submitted token in its description.
	e := newEnv(t, clientSecret)
	fxs = append(fxs, e.fx)
	e.fx.set(func(fx *fakeX) { fx.echoSecrets, fx.strictSpent = true, false })
	e.fx.spend(e.orig.RefreshToken)
	s := e.source()
	e.clk.Advance(2 * time.Hour)
	_, err := s.Token()
	collect(err)

	// A 503, a dead server, a wrong client secret.
	e2 := newEnv(t, clientSecret)
	fxs = append(fxs, e2.fx)
	e2.fx.set(func(fx *fakeX) { fx.fail5xx = 1 })
	s2 := e2.source()
	e2.clk.Advance(2 * time.Hour)
	_, err = s2.Token()
	collect(err)
	cfg := e2.cfg
	cfg.ClientSecret = "wrong-" + clientSecret
	s3, err := NewFileTokenSource(t.Context(), cfg, e2.file, WithClock(e2.clk), WithHTTPClient(e2.fx.srv.Client()))
	if err != nil {
		t.Fatal(err)
	}
	_, err = s3.Token()
	collect(err)
	e2.fx.srv.Close()
	_, err = s3.Token()
	collect(err)

	// An exchange rejected by a server echoing the code and verifier.
	e3 := newEnv(t, clientSecret)
	fxs = append(fxs, e3.fx)
	e3.fx.set(func(fx *fakeX) { fx.echoSecrets = true })
	in, inw := io.Pipe()
	out := newSyncBuffer()
	res := startLogin(t.Context(), e3.cfg, LoginOptions{Headless: true, In: in, Out: out})
	loc := authorizeRedirect(t, waitURL(t, out.urls))
	e3.clk.Advance(time.Minute) // the code expired
	go func() { _, _ = io.WriteString(inw, loc+"\n") }()
	collect(wait(t, res).err)

	// A Transport whose refresh fails.
	e4 := newEnv(t, clientSecret)
	fxs = append(fxs, e4.fx)
	e4.fx.set(func(fx *fakeX) { fx.strictSpent = false })
	e4.fx.spend(e4.orig.RefreshToken)
	e4.fx.revokeAccess(e4.orig.AccessToken)
	_, err = e4.client(e4.source()).Get(e4.fx.srv.URL + "/2/users/me")
	collect(err)

	var secrets []string
	for _, fx := range fxs {
		secrets = append(secrets, fx.secrets()...)
	}
	secrets = append(secrets, clientSecret)
	for i, err := range errs {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
			assertNoSecret(t, fmt.Sprintf("error %d (%s)", i, verb), fmt.Sprintf(verb, err), secrets)
		}
	}
	// The echoing server did put the token into its body: it was scrubbed, not absent.
	if !strings.Contains(errs[0].Error(), redacted) {
		t.Errorf("echoed token not visibly redacted: %v", errs[0])
	}
}

func TestFormatRedactsSecrets(t *testing.T) {
	st := sampleToken()
	cfg := Config{ClientID: "app", ClientSecret: clientSecret}
	secrets := []string{st.AccessToken, st.RefreshToken, clientSecret}
	for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q", "%x", "%d"} {
		for _, v := range []any{st, *st, cfg, &cfg, []any{st, cfg}, map[string]any{"t": st}, struct{ T *StoredToken }{st}} {
			assertNoSecret(t, verb, fmt.Sprintf(verb, v), secrets)
		}
	}
	if got := fmt.Sprint(st); !strings.Contains(got, "alice") || !strings.Contains(got, redacted) {
		t.Errorf("String() = %s: want the non-secret fields and %s", got, redacted)
	}
	var nilToken *StoredToken
	_ = fmt.Sprintf("%v %+v", nilToken, nilToken) // must not panic

	var buf bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&buf, nil))
	log.Info("x", "token", st, "cfg", cfg, "tokenValue", *st)
	slog.New(slog.NewTextHandler(&buf, nil)).Info("x", "token", st, "cfg", cfg)
	assertNoSecret(t, "slog", buf.String(), secrets)
}
