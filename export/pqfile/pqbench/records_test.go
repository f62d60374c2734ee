package pqbench

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cloudquery/plugin-sdk/v4/message"
	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/test/xsim"
)

// synced holds the records a real sync of the plugin sent for one table.
type synced struct {
	table   *schema.Table
	records []arrow.RecordBatch
	rows    int64
}

// syncTable runs the plugin in-process against the simulator holding n
// bookmarks of one account (and a folder of 3) and returns what it sent
// for table. extra is merged into the plugin spec.
func syncTable(tb testing.TB, n int, table string, extra map[string]any) *synced {
	tb.Helper()
	return syncAll(tb, n, extra)[table]
}

// syncAll is syncTable for every table.
func syncAll(tb testing.TB, n int, extra map[string]any) map[string]*synced {
	tb.Helper()
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk, DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		tb.Fatal(err)
	}
	defer sim.Close()
	ids := sim.SeedBookmarks("1001", n)
	sim.CreateFolder("1001", "77", "reading")
	for _, id := range ids[:min(3, len(ids))] {
		sim.AddToFolder("1001", "77", id)
	}
	sp := map[string]any{
		"base_url": sim.URL(),
		"accounts": []map[string]any{{"user_id": "1001", "access_token": sim.IssueToken("1001")}},
	}
	for k, v := range extra {
		sp[k] = v
	}
	specJSON, _ := json.Marshal(sp)
	p := xplugin.New(xplugin.WithClock(clk))
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
		tb.Fatal(err)
	}
	out := map[string]*synced{}
	ch := make(chan message.SyncMessage)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for m := range ch {
			switch m := m.(type) {
			case *message.SyncMigrateTable:
				out[m.Table.Name] = &synced{table: m.Table}
			case *message.SyncInsert:
				name, _ := m.Record.Schema().Metadata().GetValue(schema.MetadataTableName)
				s := out[name]
				s.records = append(s.records, m.Record)
				s.rows += m.Record.NumRows()
			}
		}
	}()
	err := p.Sync(ctx, plugin.SyncOptions{Tables: []string{"*"}}, ch)
	close(ch)
	wg.Wait()
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
