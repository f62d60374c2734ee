// Package synctest gives tests and benchmarks the records a real sync of the
// plugin sends: the plugin runs in process against the simulator, and what
// it would send a destination is collected per table.
package synctest

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cloudquery/plugin-sdk/v4/message"
	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/types"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/google/uuid"
)

// Synced holds the records a sync sent for one table.
type Synced struct {
	Table   *schema.Table
	Records []arrow.RecordBatch
	Rows    int64
}

// Table syncs one account holding n bookmarks (and a folder of 3) and
// returns what the sync sent for table. extra is merged into the plugin spec.
func Table(tb testing.TB, n int, table string, extra map[string]any) *Synced {
	tb.Helper()
	return All(tb, n, extra)[table]
}

// All is Table for every table: what the sync sent, per table. Two calls
// with the same n see the same posts.
func All(tb testing.TB, n int, extra map[string]any) map[string]*Synced {
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
	out := map[string]*Synced{}
	var mu sync.Mutex
	add := func(name string, rec arrow.RecordBatch) {
		mu.Lock()
		defer mu.Unlock()
		s := out[name]
		if s == nil {
			s = &Synced{}
			out[name] = s
		}
		s.Records = append(s.Records, rec)
		s.Rows += rec.NumRows()
	}
	p := xplugin.New(xplugin.WithClock(clk))
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
		tb.Fatal(err)
	}
	ch := make(chan message.SyncMessage)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for m := range ch {
			switch m := m.(type) {
			case *message.SyncMigrateTable:
				mu.Lock()
				if out[m.Table.Name] == nil {
					out[m.Table.Name] = &Synced{}
				}
				out[m.Table.Name].Table = m.Table
				mu.Unlock()
			case *message.SyncInsert:
				name, _ := m.Record.Schema().Metadata().GetValue(schema.MetadataTableName)
				add(name, m.Record)
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

// Cell normalises one cell for comparison: nil for null, string for text
// (JSON bytes and UUIDs included, UUIDs in canonical form), []string for
// lists (empty and null lists differ), int64 for timestamps (microseconds)
// and integers.
func Cell(tb testing.TB, a arrow.Array, i int) any {
	if a.IsNull(i) {
		return nil
	}
	switch a := a.(type) {
	case *array.String:
		return a.Value(i)
	case *array.Binary:
		return string(a.Value(i))
	case *array.Timestamp:
		if u := a.DataType().(*arrow.TimestampType); u.Unit != arrow.Microsecond || u.TimeZone != "UTC" {
			tb.Fatalf("timestamp type %s", u)
		}
		return int64(a.Value(i))
	case *array.Int64:
		return a.Value(i)
	case *array.Float64:
		return a.Value(i)
	case *array.Boolean:
		return a.Value(i)
	case *array.List:
		start, end := a.ValueOffsets(i)
		out := []string{}
		for j := start; j < end; j++ {
			v := Cell(tb, a.ListValues(), int(j))
			if v == nil {
				out = append(out, "<null>")
				continue
			}
			out = append(out, v.(string))
		}
		return out
	case array.ExtensionArray:
		switch a.ExtensionType().ExtensionName() {
		case types.ExtensionTypes.UUID.ExtensionName():
			u, err := uuid.FromBytes(a.Storage().(*array.FixedSizeBinary).Value(i))
			if err != nil {
				tb.Fatal(err)
			}
			return u.String()
		default: // JSON: the SDK's (binary storage) or arrow.json (string storage)
			return Cell(tb, a.Storage(), i)
		}
	}
	tb.Fatalf("unexpected array type %s", a.DataType())
	return nil
}
