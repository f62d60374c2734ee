package plugin

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cloudquery/plugin-sdk/v4/message"
	sdkplugin "github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// compatState is a state an earlier version's CloudQuery syncs left, and
// the simulator as they saw it.
type compatState struct {
	file string
	// world seeds the simulator as the syncs saw it and returns the spec's
	// extra settings.
	world func(t *testing.T, sim *xsim.Server) map[string]any
	// redacted is a post the state records redacted: it is not sent again
	// with its content.
	redacted string
}

var compatStates = []compatState{
	// What the state backend of a CloudQuery sync held after two syncs of
	// the code of before the packages account/keys.go, compliance and ids
	// (every kind of key of then: walk memories with the rows to send
	// again, the folder list, the day's ledger, the ended syncs, the
	// compliance checks and archived ids): 60 bookmarks and a folder, a
	// sync (whose compliance job took an id), 5 more and a second sync.
	{file: "state-v1.json", world: func(t *testing.T, sim *xsim.Server) map[string]any {
		ids := sim.SeedBookmarks("1001", 60)
		sim.CreateFolder("1001", "10011", "folder 1")
		for i := len(ids) - 1; i >= 0; i -= 5 {
			sim.AddToFolder("1001", "10011", ids[i])
		}
		return nil
	}},
	// What main at 51419f4 left after two syncs (every kind of key of then,
	// with the media files, the referenced posts, the authors and their
	// check): the content examples, 40 bookmarks and a folder, a sync with
	// media files and compliance (two jobs), the long post deleted and 5
	// bookmarks more, a second sync (two jobs more) that redacted it.
	{file: "state-v2.json", redacted: "3101", world: func(t *testing.T, sim *xsim.Server) map[string]any {
		ex := sim.SeedContentExamples("1001")
		ids := sim.SeedBookmarks("1001", 40)
		sim.CreateFolder("1001", "10011", "folder 1")
		for i := len(ids) - 1; i >= 0; i -= 5 {
			sim.AddToFolder("1001", "10011", ids[i])
		}
		sim.NewPostID()
		if err := sim.DeletePost(ex.LongPost); err != nil {
			t.Fatal(err)
		}
		return map[string]any{"media_files": map[string]any{"store": "file://" + filepath.ToSlash(t.TempDir())}}
	}},
}

// A state written before works after: the next sync reads every key, sends
// the new bookmarks and, again, the rows kept to send, bills as an
// incremental sync does, and leaves every key readable; a post it
// redacted is not sent again with its content.
func TestAStateWrittenBeforeWorksAfter(t *testing.T) {
	for _, fx := range compatStates {
		t.Run(fx.file, func(t *testing.T) { fx.worksAfter(t) })
	}
}

func (fx compatState) worksAfter(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", fx.file))
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]string
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	extra := fx.world(t, sim)
	token, app := sim.IssueToken("1001"), sim.IssueAppOnlyToken()
	sim.NewPostID() // the first sync's compliance job took an id (v2: one more each)
	sim.SeedBookmarks("1001", 5)
	sim.NewPostID()
	if extra != nil {
		sim.NewPostID()
	}
	fresh := sim.SeedBookmarks("1001", 3)
	clk.Set(time.Date(2026, 11, 1, 13, 0, 0, 0, time.UTC))

	store := memstate.NewWith(keys)
	p := New(WithClock(clk), WithState(store))
	settings := map[string]any{
		"base_url":   sim.URL(),
		"accounts":   []map[string]any{{"user_id": "1001", "access_token": token}},
		"content":    map[string]any{"authors": true, "media": true, "referenced_posts": true},
		"compliance": map[string]any{"bearer_token": app, "every": "0s"},
	}
	for k, v := range extra {
		settings[k] = v
	}
	spec, _ := json.Marshal(settings)
	ctx := context.Background()
	if err := p.Init(ctx, spec, sdkplugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs, err := p.SyncAll(ctx, sdkplugin.SyncOptions{Tables: []string{"*"}})
	if err != nil {
		t.Fatal(err)
	}
	sent := map[string]bool{}
	for _, m := range msgs {
		switch m := m.(type) {
		case *message.SyncError:
			t.Errorf("%s: %s", m.TableName, m.Error)
		case *message.SyncInsert:
			if name, _ := m.Record.Schema().Metadata().GetValue(schema.MetadataTableName); name == "x_bookmarks" {
				col := m.Record.Column(m.Record.Schema().FieldIndices("post_id")[0]).(*array.String)
				text := m.Record.Column(m.Record.Schema().FieldIndices("text")[0])
				for i := range col.Len() {
					sent[col.Value(i)] = true
					if col.Value(i) == fx.redacted && !text.IsNull(i) {
						t.Errorf("the redacted post %s was sent again with its text", fx.redacted)
					}
				}
			}
		}
	}
	for _, id := range sim.Bookmarks("1001") {
		if !sent[id] {
			t.Errorf("post %s was not sent: neither new nor among the rows kept to send again", id)
		}
	}
	// The new posts, a confirmation, the folder's top and the posts they
	// reference; a first sync would read the whole list, and the folder.
	if read := sim.TotalPostsReturned(); read < len(fresh) || read > 3*len(fresh)+4 {
		t.Errorf("the sync read %d posts for %d new ones: the state did not make it incremental", read, len(fresh))
	}
	for key, value := range store.Committed() {
		if known, err := account.CheckKey(key, value); !known || err != nil {
			t.Errorf("%s: known %v, %v", key, known, err)
		}
	}
}
