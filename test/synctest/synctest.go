// Package synctest gives tests and benchmarks the records a real sync of the
// plugin sends: the plugin runs in process against the simulator, and what
// it would send a destination is collected per table.
package synctest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cloudquery/plugin-sdk/v4/message"
	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/types"
	"github.com/cq-source-x/cq-source-x/export/pqfile"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/xsim"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/google/uuid"
)

// Synced holds the records a sync sent for one table, or for a table the
// sync writes directly (Options.Direct), the Columns it sent.
type Synced struct {
	Table   *schema.Table
	Records []arrow.RecordBatch
	Columns []*pqfile.Columns
	Rows    int64
}

// Table syncs one account holding n bookmarks (and a folder of 3) and
// returns what the sync sent for table. extra is merged into the plugin spec.
func Table(tb testing.TB, n int, table string, extra map[string]any) *Synced {
	tb.Helper()
	return All(tb, n, extra)[table]
}

// All is Table for every table.
func All(tb testing.TB, n int, extra map[string]any) map[string]*Synced {
	tb.Helper()
	return Sync(tb, n, Options{Spec: extra})
}

// Options of a Sync.
type Options struct {
	// Spec is merged into the plugin spec.
	Spec map[string]any
	// Direct sends the rows of the tables that write their columns
	// directly (x_bookmarks) to a column sink, as the exporter does, instead
	// of through the SDK scheduler.
	Direct bool
	// DeterministicCQID is the sync option.
	DeterministicCQID bool
}

// Sync syncs one account holding n bookmarks (and a folder of 3) and returns
// what the sync sent, per table. Two calls with the same n see the same
// posts.
func Sync(tb testing.TB, n int, o Options) map[string]*Synced {
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
	for k, v := range o.Spec {
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
	opts := []xplugin.Option{xplugin.WithClock(clk)}
	if o.Direct {
		opts = append(opts, xplugin.WithColumnSink(collect{mu: &mu, out: out}))
	}
	p := xplugin.New(opts...)
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
	err := p.Sync(ctx, plugin.SyncOptions{Tables: []string{"*"}, DeterministicCQID: o.DeterministicCQID}, ch)
	close(ch)
	wg.Wait()
	if err != nil {
		tb.Fatal(err)
	}
	return out
}

// collect is a ColumnSink that keeps the Columns.
type collect struct {
	mu  *sync.Mutex
	out map[string]*Synced
}

func (collect) NewColumns(_ context.Context, t *schema.Table) (*pqfile.Columns, error) {
	return pqfile.NewColumns(t)
}

func (c collect) WriteColumns(_ context.Context, t *schema.Table, cols *pqfile.Columns) error {
	if err := cols.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.out[t.Name]
	if s == nil {
		s = &Synced{}
		c.out[t.Name] = s
	}
	s.Columns = append(s.Columns, cols)
	s.Rows += int64(cols.Len())
	return nil
}

// ColumnRecords writes s.Columns to a Parquet file as the exporter does
// and reads them back: records of the file's schema (the table's, after
// _cq_sync_time and _cq_source_name, UUIDs and JSON as text).
func (s *Synced) ColumnRecords(tb testing.TB) []arrow.RecordBatch {
	tb.Helper()
	conv, err := pqfile.NewConverter(s.Table, time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC), "x", nil)
	if err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), s.Table.Name+".parquet")
	w, err := pqfile.CreateColumns(path, conv, pqfile.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	for _, c := range s.Columns {
		if err := w.WriteColumns(c); err != nil {
			tb.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		tb.Fatal(err)
	}
	_, recs, _ := ReadParquet(tb, path)
	return recs
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
