package resources_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/message"
	sdkplugin "github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// usageOf syncs every table of the accounts on sim and returns the rows of
// x_api_usage, column → value, in the order they were emitted.
func usageOf(t *testing.T, sim *xsim.Server, clk clock.Clock, accounts []map[string]any) []map[string]string {
	t.Helper()
	specJSON, err := json.Marshal(map[string]any{"base_url": sim.URL(), "accounts": accounts, "max_attempts": 1})
	if err != nil {
		t.Fatal(err)
	}
	p := plugin.New(plugin.WithClock(clk), plugin.WithState(memstate.New()))
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, sdkplugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs, err := p.SyncAll(ctx, sdkplugin.SyncOptions{Tables: []string{"x_bookmarks", "x_bookmark_folders", "x_bookmark_folder_posts", "x_api_usage"}})
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]string
	for _, m := range msgs {
		if ins, ok := m.(*message.SyncInsert); ok && ins.GetTable().Name == "x_api_usage" {
			rec := ins.Record
			for i := 0; i < int(rec.NumRows()); i++ {
				row := map[string]string{}
				for c := 0; c < int(rec.NumCols()); c++ {
					row[rec.ColumnName(c)] = rec.Column(c).ValueStr(i)
				}
				out = append(out, row)
			}
		}
	}
	return out
}

func newUsageSim(t *testing.T) (*xsim.Server, clock.Clock) {
	t.Helper()
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	return sim, clk
}

// An account's usage is one row per operation it used, in the order of
// client.Operations, each counting its walks and how they ended.
func TestUsageIsOneRowPerOperationInTheOperationsOrder(t *testing.T) {
	sim, clk := newUsageSim(t)
	sim.SeedBookmarks("1001", 5)
	for _, f := range []string{"71", "72"} {
		sim.CreateFolder("1001", f, "folder "+f)
		sim.AddToFolder("1001", f, sim.Bookmarks("1001")[0])
	}
	rows := usageOf(t, sim, clk, []map[string]any{{"user_id": "1001", "access_token": sim.IssueToken("1001")}})
	var got []string
	for _, r := range rows {
		if r["user_id"] != "1001" || r["account"] != "accounts[0]" || r["failure"] != "(null)" {
			t.Errorf("row %v", r)
		}
		got = append(got, r["operation"]+" walks="+r["walks"]+" "+r["walk_outcomes"])
	}
	want := []string{"list_bookmarks walks=1 reached_end", "list_folders walks=1 reached_end", "get_folder walks=2 reached_end=2"}
	if strings.Join(got, "; ") != strings.Join(want, "; ") {
		t.Fatalf("rows\n got %q\nwant %q", got, want)
	}
}

// An account that could not be set up has one row, operation setup, named
// by its place in the spec, with the error and the requests the setup sent.
func TestASetupFailureIsOneRowWithTheRequestsItSent(t *testing.T) {
	sim, clk := newUsageSim(t)
	const token = "not-a-token-the-api-knows"
	rows := usageOf(t, sim, clk, []map[string]any{{"access_token": token}})
	if len(rows) != 1 {
		t.Fatalf("%d rows: %v", len(rows), rows)
	}
	r := rows[0]
	if r["operation"] != "setup" || r["user_id"] != "accounts[0]" || r["account"] != "accounts[0]" ||
		r["requests"] != "1" || r["errors"] != "1" || r["walks"] != "0" {
		t.Errorf("row %v", r)
	}
	if !strings.Contains(r["failure"], "resolving the user id with GET /2/users/me") || strings.Contains(r["failure"], token) {
		t.Errorf("failure %q: want the setup's error, the token masked", r["failure"])
	}
}
