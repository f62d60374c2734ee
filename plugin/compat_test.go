package plugin

import (
	"context"
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cloudquery/plugin-sdk/v4/message"
	sdkplugin "github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/internal/xsim"
)

// A state written before works after. testdata/state-v1.json is what the
// state backend of a CloudQuery sync held after two syncs of the code of
// before the packages account/keys.go, compliance and ids (every kind of
// key: walk memories with the rows to send again, the folder list, the
// day's ledger, the ended syncs, the compliance checks and archived ids).
// The next sync reads every key, sends the new bookmarks and, again, the
// rows kept to send, bills as an incremental sync does, and leaves every
// key readable.
func TestAStateWrittenBeforeWorksAfter(t *testing.T) {
	b, err := os.ReadFile("testdata/state-v1.json")
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]string
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	// The simulator as the state saw it: 60 bookmarks and a folder, a
	// sync (whose compliance job took an id), 5 more and a second sync.
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	ids := sim.SeedBookmarks("1001", 60)
	sim.CreateFolder("1001", "10011", "folder 1")
	for i := len(ids) - 1; i >= 0; i -= 5 {
		sim.AddToFolder("1001", "10011", ids[i])
	}
	token, app := sim.IssueToken("1001"), sim.IssueAppOnlyToken()
	sim.NewPostID()
	sim.SeedBookmarks("1001", 5)
	sim.NewPostID()
	fresh := sim.SeedBookmarks("1001", 3)
	clk.Set(time.Date(2026, 11, 1, 13, 0, 0, 0, time.UTC))

	store := memstate.NewWith(keys)
	p := New(WithClock(clk), WithState(store))
	spec, _ := json.Marshal(map[string]any{
		"base_url":   sim.URL(),
		"accounts":   []map[string]any{{"user_id": "1001", "access_token": token}},
		"content":    map[string]any{"authors": true, "media": true, "referenced_posts": true},
		"compliance": map[string]any{"bearer_token": app, "every": "0s"},
	})
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
				for i := range col.Len() {
					sent[col.Value(i)] = true
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
