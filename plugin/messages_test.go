package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/rs/zerolog"
)

// A spec the CloudQuery CLI hands to Init names the field of each problem,
// down to the list element, with the name a misspelt field was meant to be.
func TestInitSpecErrorsSayWhere(t *testing.T) {
	err := New().Init(context.Background(), []byte(`{"accounts":[{"acess_token":"a"}],"planner":{"max_page_size":"big"}}`), plugin.NewClientOptions{})
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{`accounts[0]: unknown field "acess_token" (did you mean "access_token"?)`, "planner.max_page_size: must be a whole number, not a string"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

// syncLog runs one sync of spec (its accounts and base_url) and returns the
// plugin's log.
func syncLog(t *testing.T, spec map[string]any) string {
	t.Helper()
	spec["max_attempts"] = 1
	specJSON, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	p := New(WithState(memstate.New()))
	p.SetLogger(zerolog.New(&log))
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"*"}}); err != nil {
		t.Fatal(err)
	}
	return log.String()
}

// The plugin's own line per failed account (after the scheduler's line per
// table) tells what went wrong once, and what to do: check base_url when
// nothing answered, use a token file when a raw access token expired, and
// where a relative token_file was looked for.
func TestSyncTellsEachAccountFailureOnceWithWhatToDo(t *testing.T) {
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	expired := sim.IssueTokenWithExpiry("1001", time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	dir := t.TempDir()
	t.Chdir(dir)

	for _, tc := range []struct {
		name    string
		baseURL string
		account map[string]any
		want    string
	}{
		{"nothing answers", "http://127.0.0.1:1", map[string]any{"user_id": "1001", "access_token": "t"},
			"none of 2 requests to http://127.0.0.1:1 got an answer from the X API (dial tcp 127.0.0.1:1: connect: connection refused): check base_url"},
		{"expired access token", sim.URL(), map[string]any{"user_id": "1001", "access_token": expired},
			"the API refused accounts[0].access_token (401 Unauthorized). It has expired (X access tokens live two hours) or was revoked, and a raw access_token cannot be refreshed: run `cq-source-x login` and set accounts[0].token_file instead of access_token"},
		{"relative token file", sim.URL(), map[string]any{"user_id": "1001", "token_file": "tokens/alice.json"},
			"no token file at " + filepath.Join(dir, "tokens/alice.json") + ": token_file \"tokens/alice.json\" is relative, so it is looked for in the working directory (" + dir + "), where `cloudquery sync` runs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log := syncLog(t, map[string]any{"base_url": tc.baseURL, "accounts": []map[string]any{tc.account}})
			var line string
			for _, l := range strings.Split(log, "\n") {
				if strings.Contains(l, "account did not sync completely") {
					if line != "" {
						t.Fatalf("two lines for one account:\n%s", log)
					}
					line = l
				}
			}
			var entry struct {
				Problems []string `json:"problems"`
			}
			if err := json.Unmarshal([]byte(line), &entry); err != nil {
				t.Fatalf("%v: %q", err, line)
			}
			if len(entry.Problems) != 1 || !strings.Contains(entry.Problems[0], tc.want) {
				t.Fatalf("problems %q, want one containing %q", entry.Problems, tc.want)
			}
		})
	}
}

// A table that failed is told as that table's, beside the tables that were
// done: folders down, bookmarks fine.
func TestSyncTellsWhichTableOfAnAccountFailed(t *testing.T) {
	sim := xsim.New(xsim.Options{Faults: xsim.Faults{ServerErrorRate: 1, Operations: []string{xsim.OpListFolders}}})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks("1001", 12)
	log := syncLog(t, map[string]any{"base_url": sim.URL(), "retry_budget": "0",
		"accounts": []map[string]any{{"user_id": "1001", "access_token": sim.IssueToken("1001")}}})
	var entry struct {
		Problems []string `json:"problems"`
		Failed   []string `json:"failed_tables"`
		Done     []string `json:"done_tables"`
	}
	for _, l := range strings.Split(log, "\n") {
		if strings.Contains(l, "account did not sync completely") {
			if err := json.Unmarshal([]byte(l), &entry); err != nil {
				t.Fatalf("%v: %q", err, l)
			}
		}
	}
	if !slices.Equal(entry.Failed, []string{"x_bookmark_folders"}) || !slices.Equal(entry.Done, []string{"x_bookmarks"}) ||
		len(entry.Problems) != 1 || !strings.HasPrefix(entry.Problems[0], "x_bookmark_folders: listing bookmark folders: x api: list_folders: 5") {
		t.Fatalf("failed %v, done %v, problems %q:\n%s", entry.Failed, entry.Done, entry.Problems, log)
	}
}

// `cloudquery test-connection` says the same.
func TestConnectionTestSaysWhatToDo(t *testing.T) {
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	expired := sim.IssueTokenWithExpiry("1001", time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	for _, tc := range []struct{ baseURL, token, want string }{
		{"http://127.0.0.1:1", "t", "accounts[0]: GET /2/users/me to http://127.0.0.1:1 got no answer from the X API (dial tcp 127.0.0.1:1: connect: connection refused): check base_url"},
		{sim.URL(), expired, "accounts[0]: the API refused accounts[0].access_token (401 Unauthorized). It has expired"},
	} {
		specJSON, _ := json.Marshal(map[string]any{"base_url": tc.baseURL, "max_attempts": 1, "accounts": []map[string]any{{"access_token": tc.token}}})
		err := New().TestConnection(context.Background(), zerolog.Nop(), specJSON)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("error %v, want %q", err, tc.want)
		}
	}
}
