package resources_test

import (
	"context"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/message"
	sdkplugin "github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/walk"
)

// A walk cut off by a stop of its sync (the clients stopped with
// walk.ErrInterrupted) keeps the rows it emitted, does not advance, and is
// recorded as a capped walk is, under the list's cap record; the next
// sync's walk is not refused, reads the list from the top and clears it.
func TestAnInterruptedWalkIsRecordedAndTheNextReadsTheListAgain(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks("1001", 1000)
	stop, interrupt := context.WithCancelCause(context.Background())
	sim.OnRequest(func(r xsim.RequestInfo) {
		if r.Operation == xsim.OpListBookmarks && r.Seq == 3 {
			interrupt(walk.ErrInterrupted)
		}
	})
	st := memstate.New()
	specJSON, _ := json.Marshal(map[string]any{
		"base_url": sim.URL(),
		"accounts": []map[string]any{{"user_id": "1001", "access_token": sim.IssueToken("1001")}},
	})
	syncOnce := func() (rows int, usage map[string]string) {
		p := plugin.New(plugin.WithClock(clk), plugin.WithState(st), plugin.WithClientOptions(client.WithStop(stop, 0)))
		if err := p.Init(context.Background(), specJSON, sdkplugin.NewClientOptions{}); err != nil {
			t.Fatal(err)
		}
		msgs, err := p.SyncAll(context.Background(), sdkplugin.SyncOptions{Tables: []string{"x_bookmarks", "x_api_usage"}})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			if ins, ok := m.(*message.SyncInsert); ok {
				switch ins.GetTable().Name {
				case "x_bookmarks":
					rows += int(ins.Record.NumRows())
				case "x_api_usage":
					for i := range int(ins.Record.NumRows()) {
						row := map[string]string{}
						for c := range int(ins.Record.NumCols()) {
							row[ins.Record.ColumnName(c)] = ins.Record.Column(c).ValueStr(i)
						}
						if row["operation"] == "list_bookmarks" {
							usage = row
						}
					}
				}
			}
		}
		return rows, usage
	}

	rows, usage := syncOnce()
	record := st.Committed()[memoryKey+"/capped"]
	last, err := walk.UnmarshalCapStop(record)
	if err != nil || last == nil || !last.Interrupted || last.New != rows || strconv.Itoa(last.Billed) != usage["posts_returned"] {
		t.Fatalf("record %q (%v); %d rows, usage %v", record, err, rows, usage)
	}
	if rows == 0 || rows >= 1000 || usage["walk_outcomes"] != "interrupted" {
		t.Fatalf("interrupted sync: %d rows, usage %v", rows, usage)
	}
	if _, ok := st.Committed()[memoryKey]; ok {
		t.Error("an interrupted walk stored a memory")
	}

	stop = context.Background()
	rows, usage = syncOnce()
	if rows != 1000 || usage["walk_outcomes"] != "reached_end" {
		t.Fatalf("next sync: %d rows, usage %v; want the whole list read again", rows, usage)
	}
	if v := st.Committed()[memoryKey+"/capped"]; v != "" {
		t.Errorf("a clean walk left the record %q", v)
	}
}
