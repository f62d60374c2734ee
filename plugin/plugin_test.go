package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/message"
	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/test/xsim"
	"github.com/rs/zerolog"
)

func rowsOf(msgs message.SyncMessages, table string) int {
	n := 0
	for _, m := range msgs {
		if ins, ok := m.(*message.SyncInsert); ok && ins.GetTable().Name == table {
			n += int(ins.Record.NumRows())
		}
	}
	return n
}

func TestSyncInProcessAgainstSimulator(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks("1001", 250)
	sim.CreateFolder("1001", "77", "reading")
	for _, id := range sim.Bookmarks("1001")[:5] {
		sim.AddToFolder("1001", "77", id)
	}
	tok := sim.IssueToken("1001")
	specJSON, _ := json.Marshal(map[string]any{
		"base_url": sim.URL(),
		"accounts": []map[string]any{{"user_id": "1001", "access_token": tok}},
	})
	p := New(WithClock(clk))
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	if n := rowsOf(msgs, "x_bookmarks"); n != 250 {
		t.Errorf("x_bookmarks rows %d, want 250", n)
	}
	if n := rowsOf(msgs, "x_bookmark_folder_posts"); n != 5 {
		t.Errorf("folder posts rows %d, want 5", n)
	}
	for _, m := range msgs {
		if ins, ok := m.(*message.SyncInsert); ok && ins.GetTable().Name == "x_api_usage" {
			rec := ins.Record
			for i := 0; i < int(rec.NumRows()); i++ {
				var cells []string
				for c := 0; c < int(rec.NumCols()); c++ {
					cells = append(cells, rec.ColumnName(c)+"="+rec.Column(c).(interface{ ValueStr(int) string }).ValueStr(i))
				}
				t.Log(cells)
			}
		}
	}
}

// `cloudquery test-connection` checks every account's token with
// GET /2/users/me, and that it belongs to the configured user.
func TestConnectionTestChecksEachAccountsToken(t *testing.T) {
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	good := sim.IssueToken("1001")
	p := New()
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		account map[string]any
		code    string
	}{
		{"valid token", map[string]any{"user_id": "1001", "access_token": good}, ""},
		{"another user's token", map[string]any{"user_id": "1002", "access_token": good}, codeUnauthorized},
		{"revoked token", map[string]any{"access_token": "nope"}, codeUnauthorized},
		{"app-only token", map[string]any{"access_token": sim.IssueAppOnlyToken()}, codeUnauthorized},
	} {
		t.Run(tc.name, func(t *testing.T) {
			specJSON, _ := json.Marshal(map[string]any{"base_url": sim.URL(), "accounts": []map[string]any{tc.account}})
			err := p.TestConnection(ctx, zerolog.Nop(), specJSON)
			var tce *plugin.TestConnError
			switch {
			case tc.code == "" && err != nil:
				t.Fatalf("unexpected error %v", err)
			case tc.code != "" && (!errors.As(err, &tce) || tce.Code != tc.code):
				t.Fatalf("error %v, want code %s", err, tc.code)
			}
		})
	}
	if err := p.TestConnection(ctx, zerolog.Nop(), []byte(`{"accounts":[]}`)); err == nil || !strings.Contains(err.Error(), "accounts") {
		t.Fatalf("invalid spec: %v", err)
	}
}
