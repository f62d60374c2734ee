package plugin

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cloudquery/plugin-sdk/v4/message"
	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/internal/secrets"
	"github.com/cq-source-x/cq-source-x/spec"
	"github.com/rs/zerolog"
)

// The credentials of echoTest, long enough to be redacted.
const (
	echoAccessToken = "static-access-token-0001-abcdefghij"
	echoFileAccess  = "file-access-token-0002-abcdefghij"
	echoRefresh     = "file-refresh-token-0003-abcdefghij"
	echoClientID    = "echo-client-id"
	echoSecret      = "client-secret-0004-abcdefghij"
	echoBearer      = "app-bearer-token-0005-abcdefghij"
	echoHealthy     = "healthy-token-0006-abcdefghij" // an account whose post the compliance job checks
)

// echoServer is an X API, token endpoint and compliance API that put every
// credential they are sent into their error titles, details and messages.
func echoServer(t *testing.T) *httptest.Server {
	writeJSON := func(w http.ResponseWriter, status int, v any) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_ = json.NewEncoder(w).Encode(v)
	}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header := r.Header.Get("Authorization")
		token := strings.TrimPrefix(header, "Bearer ")
		switch {
		case r.URL.Path == "/2/oauth2/token":
			_ = r.ParseForm()
			user, pass, _ := r.BasicAuth()
			writeJSON(w, 400, map[string]string{"error": "invalid_grant",
				"error_description": fmt.Sprintf("refresh_token=%s, Authorization: %s, that is %s:%s", r.PostForm.Get("refresh_token"), header, user, pass)})
		case strings.HasPrefix(r.URL.Path, "/2/compliance/"):
			writeJSON(w, 403, map[string]any{"title": "Forbidden for " + header, "detail": "the token " + token + " is not allowed"})
		case token == echoHealthy && strings.HasSuffix(r.URL.Path, "/bookmarks"):
			writeJSON(w, 200, map[string]any{"data": []map[string]any{{"id": "1880000000000000001", "text": "hi"}}, "meta": map[string]any{"result_count": 1}})
		case token == echoHealthy:
			writeJSON(w, 200, map[string]any{"meta": map[string]any{"result_count": 0}})
		case token == echoFileAccess:
			writeJSON(w, 401, map[string]any{"title": "Unauthorized", "detail": "token " + token + " expired"})
		case strings.HasSuffix(r.URL.Path, "/folders"):
			writeJSON(w, 400, map[string]any{"title": "Invalid Request", "errors": []map[string]any{{"message": "bad token " + token, "parameters": map[string][]string{"auth": {header}}}}})
		default:
			writeJSON(w, 500, map[string]any{"title": "Internal Error: " + header, "detail": "upstream refused " + token})
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

// leaks returns the forms of the credentials found in text.
func leaks(text string) []string {
	basic := func(id, secret string) string { return base64.StdEncoding.EncodeToString([]byte(id + ":" + secret)) }
	var out []string
	for _, secret := range []string{echoAccessToken, echoFileAccess, echoRefresh, echoSecret, echoBearer,
		basic(echoClientID, echoSecret), basic(url.QueryEscape(echoClientID), url.QueryEscape(echoSecret))} {
		if strings.Contains(text, secret) {
			out = append(out, secret)
		}
	}
	return out
}

// A server that echoes a credential (the bearer token of a spec or of a
// token file, a refresh token, the Basic client_id:secret of a token
// request, the compliance bearer token) in an error gets it masked in
// every line the plugin logs, every sync error, x_api_usage.failure and
// what the exporter prints (plugin.AccountFailure).
func TestEchoedCredentialsAreMaskedEverywhere(t *testing.T) {
	ts := echoServer(t)
	file := auth.TokenFile{Path: filepath.Join(t.TempDir(), "tokens.json")}
	if err := file.Save(&auth.StoredToken{Version: auth.FileFormatVersion, AccessToken: echoFileAccess, RefreshToken: echoRefresh,
		TokenType: "bearer", Expiry: time.Now().Add(time.Hour), ClientID: echoClientID}); err != nil {
		t.Fatal(err)
	}
	specJSON, _ := json.Marshal(map[string]any{
		"base_url":     ts.URL,
		"oauth":        map[string]any{"client_id": echoClientID, "client_secret": echoSecret, "token_url": ts.URL + "/2/oauth2/token"},
		"max_attempts": 1, "retry_budget": "0s",
		"accounts": []map[string]any{
			{"user_id": "1001", "access_token": echoAccessToken},
			{"user_id": "1002", "token_file": file.Path},
			{"user_id": "1003", "access_token": echoHealthy},
		},
		"compliance": map[string]any{"bearer_token": echoBearer, "every": "0s"},
	})
	var log bytes.Buffer
	var set *account.Set
	p := New(WithState(memstate.New()), WithObserver(ObserverFunc(func(s *account.Set, _ *compliance.Check) { set = s })))
	p.SetLogger(zerolog.New(&log))
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	var failures, syncErrors []string
	for _, m := range msgs {
		switch m := m.(type) {
		case *message.SyncInsert:
			if m.GetTable().Name == "x_api_usage" {
				col := m.Record.Column(m.Record.Schema().FieldIndices("failure")[0]).(*array.String)
				for i := range col.Len() {
					if col.IsValid(i) {
						failures = append(failures, col.Value(i))
					}
				}
			}
		case *message.SyncError:
			syncErrors = append(syncErrors, m.Error)
		}
	}
	var printed []string
	s, err := spec.Parse(specJSON)
	if err != nil {
		t.Fatal(err)
	}
	for _, sess := range set.Sessions {
		printed = append(printed, AccountFailure(s, sess)...)
	}
	for name, text := range map[string]string{
		"log": log.String(), "x_api_usage.failure": strings.Join(failures, "\n"),
		"sync errors": strings.Join(syncErrors, "\n"), "account failures": strings.Join(printed, "\n"),
	} {
		if !strings.Contains(text, secrets.Hidden) {
			t.Errorf("%s: nothing was masked, so the test tests nothing:\n%s", name, text)
		}
		if l := leaks(text); len(l) > 0 {
			t.Errorf("%s leaks %q:\n%s", name, l, text)
		}
	}
	// Each kind was echoed, and is masked where it lands.
	all := strings.Join(failures, "\n")
	for _, want := range []string{
		"Internal Error: Bearer " + secrets.Hidden + ": upstream refused " + secrets.Hidden, // the spec's access token
		"bad token " + secrets.Hidden,                    // in an element of "errors"
		"refresh_token=" + secrets.Hidden,                // a refresh token
		"Authorization: Basic " + secrets.Hidden,         // client_id:secret, as sent
		"that is " + echoClientID + ":" + secrets.Hidden, // and decoded
		"Forbidden for Bearer " + secrets.Hidden,         // the compliance bearer token
	} {
		if !strings.Contains(all, want) {
			t.Errorf("x_api_usage.failure lacks %q:\n%s", want, all)
		}
	}
}

// cloudquery test-connection masks them too.
func TestConnectionTestMasksEchoedCredentials(t *testing.T) {
	ts := echoServer(t)
	specJSON, _ := json.Marshal(map[string]any{"base_url": ts.URL, "max_attempts": 1,
		"accounts": []map[string]any{{"access_token": echoAccessToken}}})
	err := New().TestConnection(context.Background(), zerolog.Nop(), specJSON)
	if err == nil || !strings.Contains(err.Error(), "Internal Error: Bearer "+secrets.Hidden) || len(leaks(err.Error())) > 0 {
		t.Errorf("error %v", err)
	}
}
