// Package contenttable shows that a content table is declared in one file:
// the table below, and its declaration of the column that holds a post,
// are all it takes for both outputs to act on its rows when X reports a
// post. (Its own test binary: the declaration is global.)
package contenttable

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cloudquery/plugin-sdk/v4/message"
	sdkplugin "github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/plan"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// The whole declaration of a content table: one row per bookmark, whose
// post_id is the bookmark's.
func init() { resources.DeclareContent(notes, plan.Holding{Of: "post_id"}) }

func notes() *schema.Table {
	value := func(_ context.Context, _ schema.ClientMeta, r *schema.Resource, c schema.Column) error {
		return r.Set(c.Name, r.Item.(map[string]any)[c.Name])
	}
	return &schema.Table{
		Name: "x_bookmark_notes",
		Columns: schema.ColumnList{
			{Name: "user_id", Type: arrow.BinaryTypes.String, PrimaryKey: true, NotNull: true, Resolver: value},
			{Name: "post_id", Type: arrow.BinaryTypes.String, PrimaryKey: true, NotNull: true, Resolver: value},
			{Name: "note", Type: arrow.BinaryTypes.String, Resolver: value},
		},
		Resolver: func(_ context.Context, _ schema.ClientMeta, parent *schema.Resource, res chan<- any) error {
			post := parent.Get("post_id").String()
			res <- map[string]any{"user_id": parent.Get("user_id").String(), "post_id": post, "note": "a note on " + post}
			return nil
		},
		IsIncremental: true,
	}
}

// world is the content examples of user 1001, and the spec of an archive of
// every table with the compliance section.
func world(t *testing.T) (*clock.Virtual, *xsim.Server, string, map[string]any) {
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	ex := sim.SeedContentExamples("1001")
	return clk, sim, ex.LongPost, map[string]any{
		"base_url":   sim.URL(),
		"accounts":   []map[string]any{{"user_id": "1001", "access_token": sim.IssueToken("1001")}},
		"compliance": map[string]any{"bearer_token": sim.IssueAppOnlyToken(), "every": "0s"},
	}
}

// A CloudQuery sync removes the new table's rows of a post X reports
// deleted, with a DeleteRecord message, as it does the other content
// tables'.
func TestACloudQuerySyncRemovesTheRowsOfADeclaredTable(t *testing.T) {
	clk, sim, post, settings := world(t)
	spec, _ := json.Marshal(settings)
	store := memstate.New()
	sync := func() []message.SyncMessage {
		clk.Advance(24 * time.Hour)
		p := xplugin.New(xplugin.WithClock(clk), xplugin.WithState(store))
		if err := p.Init(context.Background(), spec, sdkplugin.NewClientOptions{}); err != nil {
			t.Fatal(err)
		}
		msgs, err := p.SyncAll(context.Background(), sdkplugin.SyncOptions{Tables: []string{"*"}})
		if err != nil {
			t.Fatal(err)
		}
		return msgs
	}
	if n := noteRows(sync(), post); n != 1 {
		t.Fatalf("the first sync sent %d rows of x_bookmark_notes of post %s, want 1", n, post)
	}
	if err := sim.DeletePost(post); err != nil {
		t.Fatal(err)
	}
	for _, m := range sync() {
		if d, ok := m.(*message.SyncDeleteRecord); ok && d.TableName == "x_bookmark_notes" &&
			d.WhereClause[0].Predicates[1].Column == "post_id" && d.WhereClause[0].Predicates[1].Record.Column(0).ValueStr(0) == post {
			return
		}
	}
	t.Errorf("no DeleteRecord of the rows of x_bookmark_notes of post %s", post)
}

// noteRows counts the rows of x_bookmark_notes of post in msgs.
func noteRows(msgs []message.SyncMessage, post string) int {
	n := 0
	for _, m := range msgs {
		ins, ok := m.(*message.SyncInsert)
		if !ok {
			continue
		}
		if name, _ := ins.Record.Schema().Metadata().GetValue(schema.MetadataTableName); name != "x_bookmark_notes" {
			continue
		}
		col := ins.Record.Column(ins.Record.Schema().FieldIndices("post_id")[0])
		for i := range col.Len() {
			if col.ValueStr(i) == post {
				n++
			}
		}
	}
	return n
}

// The exporter removes the new table's rows of a post X reports deleted
// from its Parquet files, as it does the other content tables'.
func TestTheExporterRemovesTheRowsOfADeclaredTable(t *testing.T) {
	clk, sim, post, settings := world(t)
	settings["compliance"].(map[string]any)["every"] = "0s"
	spec, _ := json.Marshal(map[string]any{"kind": "source", "spec": map[string]any{
		"name": "x", "path": "./cq-source-x", "registry": "local", "version": "v0.0.0",
		"tables": []string{"*"}, "destinations": []string{"file"}, "spec": settings}})
	dir := t.TempDir()
	run := func() {
		clk.Advance(24 * time.Hour)
		src, err := cqspec.Parse(spec, "spec.yml", os.LookupEnv, clk.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk}); err != nil {
			t.Fatal(err)
		}
	}
	run()
	if n := fileRows(t, dir, post); n != 1 {
		t.Fatalf("the first export wrote %d rows of x_bookmark_notes of post %s, want 1", n, post)
	}
	if err := sim.DeletePost(post); err != nil {
		t.Fatal(err)
	}
	run()
	if n := fileRows(t, dir, post); n != 0 {
		t.Errorf("x_bookmark_notes still holds %d rows of post %s", n, post)
	}
}

// fileRows counts the rows of post in DIR/x_bookmark_notes/*.parquet.
func fileRows(t *testing.T, dir, post string) int {
	paths, err := filepath.Glob(filepath.Join(dir, "x_bookmark_notes", "*.parquet"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no file of x_bookmark_notes: %v", err)
	}
	n := 0
	for _, p := range paths {
		err := pqfile.ReadRecords(context.Background(), p, []string{"post_id"}, func(rec arrow.RecordBatch) error {
			for i := range int(rec.NumRows()) {
				if rec.Column(0).ValueStr(i) == post {
					n++
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(fmt.Errorf("%s: %w", p, err))
		}
	}
	return n
}
