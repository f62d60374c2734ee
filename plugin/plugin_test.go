package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/message"
	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/ids"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/plan"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/spec"
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

// syncErrors are the texts of the SyncError messages of msgs.
func syncErrors(msgs message.SyncMessages) []string {
	var errs []string
	for _, m := range msgs {
		if e, ok := m.(*message.SyncError); ok {
			errs = append(errs, e.Error)
		}
	}
	return errs
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

// The same X user listed twice — once by user_id, once by a token that
// /2/users/me resolves to it — is synced once: the second account fails,
// naming both, instead of reading and billing every post again.
func TestTheSameUserListedTwiceIsSyncedOnce(t *testing.T) {
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks("1001", 100)
	// Two tokens of one user (one token twice the spec refuses itself).
	specJSON, _ := json.Marshal(map[string]any{
		"base_url": sim.URL(),
		"accounts": []map[string]any{{"user_id": "1001", "access_token": sim.IssueToken("1001")}, {"access_token": sim.IssueToken("1001")}},
	})
	p := New()
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"x_bookmarks"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := sim.TotalPostsReturned(); got != 100 {
		t.Errorf("one user with 100 bookmarks billed %d posts", got)
	}
	if n := rowsOf(msgs, "x_bookmarks"); n != 100 {
		t.Errorf("x_bookmarks rows %d, want 100", n)
	}
	errs := syncErrors(msgs)
	if !strings.Contains(strings.Join(errs, "\n"), "accounts[0] and accounts[1] are the same X user (1001)") {
		t.Errorf("sync errors %q do not name the repeated user", errs)
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

// `doc`, `package` and `cloudquery tables` initialise the plugin without a
// connection and with a null spec: the tables must still be there.
func TestTablesWithoutASpec(t *testing.T) {
	p := New()
	ctx := context.Background()
	if err := p.Init(ctx, []byte("null"), plugin.NewClientOptions{NoConnection: true}); err != nil {
		t.Fatal(err)
	}
	tables, err := p.Tables(ctx, plugin.TableOptions{Tables: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"x_bookmarks", "x_bookmark_authors", "x_bookmark_media", "x_bookmark_referenced_posts", "x_bookmark_folders", "x_bookmark_folder_posts", "x_media_files", "x_post_compliance", "x_api_usage"}
	if got := tables.FlattenTables().TableNames(); !slices.Equal(got, want) {
		t.Fatalf("tables %v, want %v", got, want)
	}
	if err := p.Init(ctx, []byte("null"), plugin.NewClientOptions{}); err == nil || !strings.Contains(err.Error(), "spec is empty") {
		t.Fatalf("a sync init with a null spec: %v", err)
	}
}

// The archive tables are incremental, so that write_mode
// overwrite-delete-stale keeps their earlier rows: x_bookmarks (removed
// bookmarks stay) and x_api_usage (every sync's costs); the folder tables
// are snapshots, replaced at every sync.
func TestHistoriesAreIncrementalTables(t *testing.T) {
	p := New()
	ctx := context.Background()
	if err := p.Init(ctx, []byte("null"), plugin.NewClientOptions{NoConnection: true}); err != nil {
		t.Fatal(err)
	}
	tables, err := p.Tables(ctx, plugin.TableOptions{Tables: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{ // incremental keys; nil: a snapshot
		"x_bookmarks":             {"first_seen_at"},
		"x_api_usage":             {"sync_started_at"},
		"x_bookmark_folders":      nil,
		"x_bookmark_folder_posts": nil,
	}
	for _, tb := range tables.FlattenTables() {
		keys, ok := want[tb.Name]
		if !ok {
			continue
		}
		if tb.IsIncremental != (keys != nil) || !slices.Equal(tb.IncrementalKeys(), keys) {
			t.Errorf("%s: incremental %v with keys %v, want keys %v", tb.Name, tb.IsIncremental, tb.IncrementalKeys(), keys)
		}
	}
}

// `cloudquery sync --shard N/T` splits the accounts: every account is
// synced by exactly one shard, all its tables there (one machine uses each
// account's token), and each shard reports only its accounts.
func TestShardsSplitAccounts(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	var accounts []map[string]any
	users := []string{"11", "12", "13", "14", "15"}
	for i, u := range users {
		sim.SeedBookmarks(u, 3+i)
		sim.CreateFolder(u, "7"+u, "reading")
		sim.AddToFolder(u, "7"+u, sim.Bookmarks(u)[0])
		accounts = append(accounts, map[string]any{"user_id": u, "access_token": sim.IssueToken(u)})
	}
	specJSON, _ := json.Marshal(map[string]any{"base_url": sim.URL(), "accounts": accounts})
	seen := map[string]int{}
	for shard := int32(1); shard <= 2; shard++ {
		p := New(WithClock(clk))
		ctx := context.Background()
		if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
			t.Fatal(err)
		}
		msgs, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"*"}, Shard: &plugin.Shard{Num: shard, Total: 2}})
		if err != nil {
			t.Fatal(err)
		}
		synced := map[string]map[string]bool{} // user → tables
		for _, m := range msgs {
			ins, ok := m.(*message.SyncInsert)
			if !ok {
				continue
			}
			col := ins.Record.Column(ins.Record.Schema().FieldIndices("user_id")[0])
			for i := 0; i < col.Len(); i++ {
				u := col.ValueStr(i)
				if synced[u] == nil {
					synced[u] = map[string]bool{}
				}
				synced[u][ins.GetTable().Name] = true
			}
		}
		for u, tables := range synced {
			seen[u]++
			for _, tb := range []string{"x_bookmarks", "x_bookmark_folders", "x_bookmark_folder_posts", "x_api_usage"} {
				if !tables[tb] {
					t.Errorf("shard %d synced user %s without %s: %v", shard, u, tb, tables)
				}
			}
		}
	}
	for _, u := range users {
		if seen[u] != 1 {
			t.Errorf("user %s synced by %d shards, want 1", u, seen[u])
		}
	}
}

// A destination's RecordRows sets the size of the records the scheduler
// sends (the exporter asks for large ones); without it they are the SDK's
// 50 rows.
func TestRecordRowsSetsTheSizeOfRecords(t *testing.T) {
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks("1001", 250)
	specJSON, _ := json.Marshal(map[string]any{
		"base_url": sim.URL(),
		"accounts": []map[string]any{{"user_id": "1001", "access_token": sim.IssueToken("1001")}},
	})
	for _, c := range []struct {
		opts []Option
		want []int
	}{
		{nil, []int{50, 50, 50, 50, 50}},
		{[]Option{WithObserver(recordRows(200))}, []int{200, 50}},
	} {
		p := New(c.opts...)
		ctx := context.Background()
		if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
			t.Fatal(err)
		}
		// A sync with no state backend reads the whole list each time.
		msgs, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"x_bookmarks"}})
		if err != nil {
			t.Fatal(err)
		}
		var sizes []int
		for _, m := range msgs {
			if ins, ok := m.(*message.SyncInsert); ok {
				if name, _ := ins.Record.Schema().Metadata().GetValue(schema.MetadataTableName); name == "x_bookmarks" {
					sizes = append(sizes, int(ins.Record.NumRows()))
				}
			}
		}
		if !slices.Equal(sizes, c.want) {
			t.Errorf("records of %v rows, want %v", sizes, c.want)
		}
	}
}

// oneAccountSpec is the spec of one account of sim with a few bookmarks.
func oneAccountSpec(t *testing.T, sim *xsim.Server) []byte {
	t.Helper()
	sim.SeedBookmarks("1001", 3)
	specJSON, err := json.Marshal(map[string]any{
		"base_url": sim.URL(),
		"accounts": []map[string]any{{"user_id": "1001", "access_token": sim.IssueToken("1001")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return specJSON
}

// `--shard N/T` wants 1 <= N <= T: anything else fails the sync, naming the
// shard, before any row is synced.
func TestAnInvalidShardIsRefused(t *testing.T) {
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	specJSON := oneAccountSpec(t, sim)
	for _, sh := range []plugin.Shard{{Num: 0, Total: 2}, {Num: 3, Total: 2}, {Num: 1, Total: 0}} {
		p := New(WithState(memstate.New()))
		ctx := context.Background()
		if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
			t.Fatal(err)
		}
		msgs, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"*"}, Shard: &sh})
		want := fmt.Sprintf("shard %d/%d: want N/T with 1 <= N <= T", sh.Num, sh.Total)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("shard %d/%d: err = %v, want %q", sh.Num, sh.Total, err, want)
		}
		if n := rowsOf(msgs, "x_bookmarks"); n != 0 {
			t.Errorf("shard %d/%d: %d rows synced", sh.Num, sh.Total, n)
		}
	}
}

// A plugin initialised without a connection (`doc`, `package`) has no spec
// and cannot sync: it says so instead of failing on a nil spec.
func TestASyncWithoutASpecIsRefused(t *testing.T) {
	p := New()
	ctx := context.Background()
	if err := p.Init(ctx, []byte("null"), plugin.NewClientOptions{NoConnection: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"*"}}); err == nil || !strings.Contains(err.Error(), "without a spec") {
		t.Fatalf("err = %v", err)
	}
}

// Without backend_options no incremental state is kept: the sync works, and
// warns that every sync bills every bookmark again.
func TestASyncWithoutAStateBackendWarnsThatItBillsEverythingAgain(t *testing.T) {
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	specJSON := oneAccountSpec(t, sim)
	for _, c := range []struct {
		name string
		opts []Option
		warn bool
	}{
		{"no backend", nil, true},
		{"a state client", []Option{WithState(memstate.New())}, false},
	} {
		var log bytes.Buffer
		p := New(c.opts...)
		p.SetLogger(zerolog.New(&log))
		ctx := context.Background()
		if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
			t.Fatal(err)
		}
		msgs, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"x_bookmarks"}})
		if err != nil || rowsOf(msgs, "x_bookmarks") != 3 {
			t.Fatalf("%s: %d rows, err %v", c.name, rowsOf(msgs, "x_bookmarks"), err)
		}
		if got := strings.Contains(log.String(), "no backend_options: incremental state is not kept, so every sync is a first sync and bills every bookmark again"); got != c.warn {
			t.Errorf("%s: warned %v, want %v:\n%s", c.name, got, c.warn, log.String())
		}
	}
}

// A content table whose kind is off is announced to the destination (it
// has the table, empty) but not resolved: the scheduler would resolve it
// once per bookmark for no row. The plugin's tables are not changed.
func TestContentTablesThatAreOffAreAnnouncedNotResolved(t *testing.T) {
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	p := New()
	ctx := context.Background()
	if err := p.Init(ctx, oneAccountSpec(t, sim), plugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	migrated := map[string]string{}
	for _, m := range msgs {
		if mt, ok := m.(*message.SyncMigrateTable); ok {
			parent := ""
			if mt.Table.Parent != nil {
				parent = mt.Table.Parent.Name
			}
			migrated[mt.Table.Name] = parent
		}
	}
	for _, name := range []string{"x_bookmark_authors", "x_bookmark_referenced_posts", "x_bookmark_media"} {
		if parent, ok := migrated[name]; !ok || parent != "x_bookmarks" {
			t.Errorf("%s announced %v with parent %q, want x_bookmarks", name, ok, parent)
		}
		if n := rowsOf(msgs, name); n != 0 && name != "x_bookmark_media" {
			t.Errorf("%s has %d rows with its content off", name, n)
		}
	}

	tables := resources.Tables()
	kept, off := withoutContentOff(tables, (&spec.Spec{}).Kinds())
	var offNames, childNames []string
	for _, t := range off {
		offNames = append(offNames, t.Name)
	}
	for _, t := range kept {
		if t.Name == "x_bookmarks" {
			for _, c := range t.Relations {
				childNames = append(childNames, c.Name)
			}
		}
	}
	if !slices.Equal(offNames, []string{"x_bookmark_authors", "x_bookmark_referenced_posts"}) || !slices.Equal(childNames, []string{"x_bookmark_media"}) {
		t.Errorf("taken out %v, resolved children %v", offNames, childNames)
	}
	if got := len(tables.Get("x_bookmarks").Relations); got != 3 {
		t.Errorf("the plugin's x_bookmarks has %d child tables after it, want its 3", got)
	}
}

// Once the data tables are synced and each account's ledger of the day is
// saved, the sessions keep none: it lists every post read that day, and the
// rest of the sync (compliance, usage) bills nothing.
func TestTheDaysLedgerIsLetGoOnceSaved(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks("1001", 120)
	specJSON, _ := json.Marshal(map[string]any{
		"base_url": sim.URL(),
		"accounts": []map[string]any{{"user_id": "1001", "access_token": sim.IssueToken("1001")}},
	})
	st := memstate.New()
	var sessions *account.Set
	p := New(WithClock(clk), WithState(st), WithObserver(ObserverFunc(func(s *account.Set, _ *compliance.Check) { sessions = s })))
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"*"}}); err != nil {
		t.Fatal(err)
	}
	if ledger, _ := st.GetKey(ctx, "x_api_usage/billed/1001"); ledger == "" {
		t.Error("the ledger was not saved")
	}
	if day, posts, _ := sessions.Sessions[0].Meter.BilledToday("1001"); day != "" || posts.Len() != 0 {
		t.Errorf("the session still holds a ledger of %s: %d posts", day, posts.Len())
	}
}

// recordRows is a destination that asks for records of its size, and keeps
// no record of the posts written.
type recordRows int

func (recordRows) SyncStarted(*account.Set, *compliance.Check)          {}
func (recordRows) Archived(context.Context, string) (ids.Sorted, error) { return nil, nil }
func (n recordRows) RecordRows() int                                    { return int(n) }
func (recordRows) Edit([]plan.Edit)                                     {}
