// Package e2e tests the plugin end to end, as the CloudQuery CLI runs it: served over
// gRPC, against the simulator, with a state backend and destinations that keep
// what they are sent as CloudQuery's do.
package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cloudquery/plugin-sdk/v4/message"
	sdkplugin "github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/walk"
	"github.com/rs/zerolog"
)

const user = "1001"

// harness runs the plugin in process against the simulator, with an
// in-memory state backend that survives between syncs, and keeps every post
// the plugin emitted: what a destination would hold.
type harness struct {
	t       testing.TB
	clk     *clock.Virtual
	sim     *xsim.Server
	store   *memstate.Store
	spec    map[string]any
	emitted map[string]int  // post id → times emitted, for user, sent again not counted
	logger  *zerolog.Logger // the plugin's logger, when set
	// sent holds each row of x_bookmarks and x_post_compliance the plugin
	// emitted, by identity (sentAgain): a row with the same is one sent again
	// (spec.Resend), not a new one.
	sent map[string]bool
}

// sentAgain reports whether the row was emitted before, and records it.
// Rows sent again are the same rows: a bookmark with its first_seen_at, a
// compliance finding with its job.
func sentAgain(sent map[string]bool, table string, row map[string]string) bool {
	key := table + "/" + row["user_id"] + "/" + row["post_id"] + "/" + row["first_seen_at"] + "/" + row["job_id"]
	if sent[key] {
		return true
	}
	sent[key] = true
	return false
}

// startSim starts the simulator with opts on a virtual clock of its own,
// until the test ends.
func startSim(t testing.TB, opts xsim.Options) (*clock.Virtual, *xsim.Server) {
	t.Helper()
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC))
	opts.Clock = clk
	sim := xsim.New(opts)
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	return clk, sim
}

func newHarness(t testing.TB, bookmarks int) *harness {
	t.Helper()
	clk, sim := startSim(t, xsim.Options{})
	if bookmarks > 0 {
		sim.SeedBookmarks(user, bookmarks)
	}
	h := &harness{t: t, clk: clk, sim: sim, store: memstate.New(), emitted: map[string]int{}, sent: map[string]bool{}}
	h.spec = map[string]any{
		"base_url": sim.URL(),
		"accounts": []map[string]any{{"user_id": user, "access_token": sim.IssueToken(user)}},
	}
	return h
}

// syncResult is one sync as the plugin reported it.
type syncResult struct {
	billed   int // posts the simulator billed for the bookmark list
	requests int
	newRows  []string
	resent   int                                     // x_bookmarks rows of earlier syncs sent again
	usage    map[string]map[string]string            // operation → column → value (of any account)
	usageOf  map[string]map[string]map[string]string // user_id → operation → column → value
	folders  []string                                // folder_id/post_id rows of x_bookmark_folder_posts
	tables   map[string][]map[string]string          // table → its rows
	errors   []string
}

func (h *harness) billed() (posts, requests int) {
	u := h.sim.Usage(user)[xsim.OpListBookmarks]
	return u.PostsReturned, u.Requests
}

// sync advances the clock a day and runs one sync of the given tables.
func (h *harness) sync(tables ...string) syncResult {
	h.t.Helper()
	if len(tables) == 0 {
		tables = []string{"x_bookmarks", "x_api_usage"}
	}
	h.clk.Advance(24 * time.Hour)
	specJSON, err := json.Marshal(h.spec)
	if err != nil {
		h.t.Fatal(err)
	}
	p := plugin.New(plugin.WithClock(h.clk), plugin.WithState(h.store))
	if h.logger != nil {
		p.SetLogger(*h.logger)
	}
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, sdkplugin.NewClientOptions{}); err != nil {
		h.t.Fatal(err)
	}
	billedBefore, requestsBefore := h.billed()
	msgs, err := p.SyncAll(ctx, sdkplugin.SyncOptions{Tables: tables})
	if err != nil {
		h.t.Fatal(err)
	}
	billedAfter, requestsAfter := h.billed()
	res := syncResult{billed: billedAfter - billedBefore, requests: requestsAfter - requestsBefore, usage: map[string]map[string]string{},
		usageOf: map[string]map[string]map[string]string{}, tables: map[string][]map[string]string{}}
	for _, m := range msgs {
		switch m := m.(type) {
		case *message.SyncInsert:
			res.tables[m.GetTable().Name] = append(res.tables[m.GetTable().Name], rows(m.Record)...)
			switch m.GetTable().Name {
			case "x_bookmarks":
				for _, row := range rows(m.Record) {
					switch {
					case sentAgain(h.sent, "x_bookmarks", row):
						res.resent++
					case row["user_id"] == user:
						h.emitted[row["post_id"]]++
						res.newRows = append(res.newRows, row["post_id"])
					}
				}
			case "x_bookmark_folder_posts":
				folders, posts := stringColumn(m.Record, "folder_id"), stringColumn(m.Record, "post_id")
				for i := range posts {
					res.folders = append(res.folders, folders[i]+"/"+posts[i])
				}
			case "x_api_usage":
				for _, row := range rows(m.Record) {
					res.usage[row["operation"]] = row
					if res.usageOf[row["user_id"]] == nil {
						res.usageOf[row["user_id"]] = map[string]map[string]string{}
					}
					res.usageOf[row["user_id"]][row["operation"]] = row
				}
			}
		case *message.SyncError:
			res.errors = append(res.errors, m.Error)
		}
	}
	return res
}

// missing returns the user's current bookmarks never emitted.
func (h *harness) missing() []string {
	var out []string
	for _, id := range h.sim.Bookmarks(user) {
		if h.emitted[id] == 0 {
			out = append(out, id)
		}
	}
	return out
}

func (h *harness) mustLoseNothing() {
	h.t.Helper()
	if m := h.missing(); len(m) > 0 {
		h.t.Fatalf("%d current bookmarks were never emitted: %v", len(m), m[:min(len(m), 10)])
	}
}

// memory returns the walk memory stored for the user's bookmarks.
func (h *harness) memory() *walk.Memory {
	h.t.Helper()
	m, err := walk.UnmarshalMemory(h.store.Committed()["x_bookmarks/"+user])
	if err != nil {
		h.t.Fatal(err)
	}
	return m
}

func (h *harness) bookmarkNew(n int) []string {
	var ids []string
	for range n {
		id := h.sim.NewPostID()
		if err := h.sim.Bookmark(user, id); err != nil {
			h.t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}

func stringColumn(rec arrow.RecordBatch, name string) []string {
	idx := rec.Schema().FieldIndices(name)
	if len(idx) == 0 {
		panic("no column " + name)
	}
	col := rec.Column(idx[0]).(*array.String)
	out := make([]string, col.Len())
	for i := range out {
		out[i] = col.Value(i)
	}
	return out
}

func rows(rec arrow.RecordBatch) []map[string]string {
	out := make([]map[string]string, rec.NumRows())
	for i := range out {
		out[i] = map[string]string{}
		for c := 0; c < int(rec.NumCols()); c++ {
			col := rec.Column(c)
			if col.IsNull(i) {
				continue
			}
			out[i][rec.ColumnName(c)] = col.ValueStr(i)
		}
	}
	return out
}

func (r syncResult) outcome() string { return r.usage["list_bookmarks"]["walk_outcomes"] }

func (r syncResult) String() string {
	return fmt.Sprintf("billed %d, requests %d, new %d, usage %v, errors %v", r.billed, r.requests, len(r.newRows), r.usage["list_bookmarks"], r.errors)
}

// folderPosts returns a sync's folder membership rows, sorted.
func (h *harness) folderPosts(r syncResult) []string {
	out := slices.Clone(r.folders)
	slices.Sort(out)
	return out
}
