package resources_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/message"
	sdkplugin "github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/rs/zerolog"
)

const memoryKey = "x_bookmarks/1001"

// failingState is a state backend whose reads (or writes) of one key fail.
type failingState struct {
	*memstate.Store
	key              string
	failGet, failSet bool
}

var errBackend = errors.New("backend unavailable")

func (f *failingState) GetKey(ctx context.Context, key string) (string, error) {
	if f.failGet && key == f.key {
		return "", errBackend
	}
	return f.Store.GetKey(ctx, key)
}

func (f *failingState) SetKey(ctx context.Context, key, value string) error {
	if f.failSet && key == f.key {
		return errBackend
	}
	return f.Store.SetKey(ctx, key, value)
}

// bookmarksSync is one sync of x_bookmarks and x_api_usage of user 1001, who
// has 30 bookmarks, with st as the state backend.
type bookmarksSync struct {
	rows     int               // x_bookmarks rows
	usage    map[string]string // the list_bookmarks row of x_api_usage, column → value
	requests int               // list requests the simulator answered
	log      string
}

func syncBookmarks(t *testing.T, st *failingState) bookmarksSync {
	t.Helper()
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	sim.SeedBookmarks("1001", 30)
	specJSON, err := json.Marshal(map[string]any{
		"base_url": sim.URL(),
		"accounts": []map[string]any{{"user_id": "1001", "access_token": sim.IssueToken("1001")}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	p := plugin.New(plugin.WithClock(clk), plugin.WithState(st))
	p.SetLogger(zerolog.New(&log))
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, sdkplugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs, err := p.SyncAll(ctx, sdkplugin.SyncOptions{Tables: []string{"x_bookmarks", "x_api_usage"}})
	if err != nil {
		t.Fatal(err)
	}
	out := bookmarksSync{usage: map[string]string{}, requests: sim.Usage("1001")[xsim.OpListBookmarks].Requests, log: log.String()}
	for _, m := range msgs {
		ins, ok := m.(*message.SyncInsert)
		if !ok {
			continue
		}
		rec := ins.Record
		switch ins.GetTable().Name {
		case "x_bookmarks":
			out.rows += int(rec.NumRows())
		case "x_api_usage":
			for i := 0; i < int(rec.NumRows()); i++ {
				row := map[string]string{}
				for c := 0; c < int(rec.NumCols()); c++ {
					row[rec.ColumnName(c)] = rec.Column(c).ValueStr(i)
				}
				if row["operation"] == "list_bookmarks" {
					out.usage = row
				}
			}
		}
	}
	return out
}

// A walk whose memory cannot be read does not start: no request is sent,
// no row emitted, and x_api_usage shows the account's failure.
func TestABookmarksMemoryThatCannotBeReadFailsTheWalkBeforeAnyRequest(t *testing.T) {
	r := syncBookmarks(t, &failingState{Store: memstate.New(), key: memoryKey, failGet: true})
	want := `user:1001: reading state "x_bookmarks/1001": backend unavailable`
	if r.rows != 0 || r.requests != 0 || r.usage["failure"] != want || r.usage["walk_outcomes"] != "failed" {
		t.Fatalf("%d rows, %d requests, usage %v; want none and failure %q", r.rows, r.requests, r.usage, want)
	}
}

// A clean walk whose memory cannot be saved has emitted its rows (they are
// the destination's), fails, and reports how the walk itself ended; the
// walk is not logged as finished.
func TestABookmarksMemoryThatCannotBeSavedFailsTheWalkAfterItsRows(t *testing.T) {
	st := &failingState{Store: memstate.New(), key: memoryKey, failSet: true}
	r := syncBookmarks(t, st)
	want := `user:1001: writing state "x_bookmarks/1001": backend unavailable`
	if r.rows != 30 || r.usage["failure"] != want || r.usage["walk_outcomes"] != "reached_end" || r.usage["new_posts"] != "30" {
		t.Fatalf("%d rows, usage %v; want 30 rows and failure %q", r.rows, r.usage, want)
	}
	if strings.Contains(r.log, "bookmarks walk finished") {
		t.Errorf("a failed walk logged as finished:\n%s", r.log)
	}
	if _, ok := st.Committed()[memoryKey]; ok {
		t.Error("memory stored")
	}
}

// A clean walk saves its memory, reports no failure, and logs one line
// with how it ended and what it cost.
func TestACleanBookmarksWalkSavesItsMemoryAndSaysHowItEnded(t *testing.T) {
	st := &failingState{Store: memstate.New()}
	r := syncBookmarks(t, st)
	if r.rows != 30 || r.usage["failure"] != "(null)" || r.usage["walk_outcomes"] != "reached_end" {
		t.Fatalf("%d rows, usage %v", r.rows, r.usage)
	}
	if _, ok := st.Committed()[memoryKey]; !ok {
		t.Error("memory not stored")
	}
	var line struct {
		Message  string `json:"message"`
		Outcome  string `json:"outcome"`
		New      int    `json:"new"`
		Billed   int    `json:"billed"`
		Requests int    `json:"requests"`
	}
	for _, l := range strings.Split(r.log, "\n") {
		if strings.Contains(l, "bookmarks walk finished") {
			if err := json.Unmarshal([]byte(l), &line); err != nil {
				t.Fatal(err)
			}
		}
	}
	if line.Outcome != "reached_end" || line.New != 30 || line.Billed != 30 || line.Requests != r.requests {
		t.Errorf("log line %+v, want reached_end, 30 new, 30 billed, %d requests:\n%s", line, r.requests, r.log)
	}
}
