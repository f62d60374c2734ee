package e2e

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/rs/zerolog"
)

// Issue 14, one logger: in a real sync the API client and the token source
// log through the plugin's logger. A token refresh, a retry after a 5xx and
// a 429 wait each reach it, named by the account, and no token appears in
// any line.
func TestClientAndAuthLogThroughThePluginLogger(t *testing.T) {
	h := newHarness(t, 30)
	var buf bytes.Buffer
	logger := zerolog.New(zerolog.SyncWriter(&buf))
	h.logger = &logger

	access, refresh, _ := h.sim.IssueTokenPair("app", user)
	file := auth.TokenFile{Path: filepath.Join(t.TempDir(), "token.json")}
	// Expired by the time the sync runs (a day later): the first request refreshes it.
	if err := file.Save(&auth.StoredToken{AccessToken: access, RefreshToken: refresh, TokenType: "bearer",
		ClientID: "app", UserID: user, Expiry: h.clk.Now(), UpdatedAt: h.clk.Now()}); err != nil {
		t.Fatal(err)
	}
	h.spec["accounts"] = []map[string]any{{"token_file": file.Path}}
	h.spec["oauth"] = map[string]any{"client_id": "app", "token_url": h.sim.TokenURL()}
	// The first list request is answered 5xx, the second 429.
	faults := xsim.Faults{ServerErrorRate: 0.3, RateLimitRate: 0.3, Operations: []string{xsim.OpListBookmarks}}
	for faults.Seed = 1; faults.Decide(1).Kind != xsim.FaultServerError || faults.Decide(2).Kind != xsim.FaultRateLimit; faults.Seed++ {
	}
	h.sim.SetFaults(faults)

	r := h.sync()
	h.mustLoseNothing()
	if len(r.errors) > 0 {
		t.Fatalf("sync: %v", r)
	}

	stored, err := file.Load()
	if err != nil || stored.AccessToken == access {
		t.Fatalf("the token was not refreshed: %v", err)
	}
	secrets := []string{access, refresh, stored.AccessToken, stored.RefreshToken}
	want := map[string]bool{
		"auth: access token refreshed":                                  false,
		"x api: transient fault; retrying":                              false,
		"x api: 429 Too Many Requests; waiting for the window to reset": false,
	}
	for line := range strings.Lines(buf.String()) {
		for _, s := range secrets {
			if s != "" && strings.Contains(line, s) {
				t.Errorf("a token is in the log line %s", line)
			}
		}
		var entry struct{ Message, Account string }
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		if _, ok := want[entry.Message]; ok {
			want[entry.Message] = true
			if entry.Account != "user:"+user {
				t.Errorf("line %s does not name the account", line)
			}
		}
	}
	for msg, seen := range want {
		if !seen {
			t.Errorf("no %q in the plugin's log:\n%s", msg, buf.String())
		}
	}
}
