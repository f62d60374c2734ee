package e2e

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdkplugin "github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/media"
	"github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// shardEnv syncs two accounts with --shard 1/2 and 2/2 into one media
// store and one state backend: alice bookmarks a post that quotes a post
// with a photo, bob bookmarks the quoted post itself.
type shardEnv struct {
	t        *testing.T
	clk      *clock.Virtual
	sim      *xsim.Server
	ex       xsim.ContentExamples
	state    *memstate.Store
	storeDir string
	spec     map[string]any
}

const shardAlice, shardBob = "1001", "1002"

func newShardEnv(t *testing.T) *shardEnv {
	clk, sim := startSim(t, xsim.Options{})
	e := &shardEnv{t: t, clk: clk, sim: sim, ex: sim.SeedContentExamples(shardAlice), state: memstate.New(), storeDir: t.TempDir()}
	sim.AddUser(shardBob, "bob")
	if err := sim.Bookmark(shardBob, e.ex.Quoted); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	e.spec = map[string]any{
		"base_url": sim.URL(),
		"accounts": []map[string]any{
			{"user_id": shardAlice, "access_token": sim.IssueToken(shardAlice)},
			{"user_id": shardBob, "access_token": sim.IssueToken(shardBob)},
		},
		"content":     allKinds,
		"media_files": map[string]any{"store": "file://" + filepath.ToSlash(e.storeDir)},
		"compliance":  map[string]any{"bearer_token": sim.IssueAppOnlyToken(), "every": "0s"},
	}
	return e
}

// syncShard runs shard n of 2 in a new plugin, and returns its error.
func (e *shardEnv) syncShard(n int32) error {
	specJSON, _ := json.Marshal(e.spec)
	p := plugin.New(plugin.WithClock(e.clk), plugin.WithState(e.state))
	if err := p.Init(context.Background(), specJSON, sdkplugin.NewClientOptions{}); err != nil {
		e.t.Fatal(err)
	}
	_, err := p.SyncAll(context.Background(), sdkplugin.SyncOptions{Tables: []string{"*"}, Shard: &sdkplugin.Shard{Num: n, Total: 2}})
	return err
}

// storedFiles are the keys of the files an account's media state says stored.
func (e *shardEnv) storedFiles(user string) map[string]bool {
	key := account.MediaFilesKey(user)
	uses, err := resources.MediaFileUses(key, e.state.Committed()[key])
	if err != nil {
		e.t.Fatal(err)
	}
	files := map[string]bool{}
	for _, u := range uses {
		if u.Status == media.Stored {
			files[u.FileKey] = true
		}
	}
	return files
}

// With --shard, the media files of a post X reported are deleted only when
// no account of any shard still uses them: the photo of a quoted post stays
// in the store for the account of the other shard that bookmarked it.
func TestShardsKeepTheMediaFilesOtherShardsUse(t *testing.T) {
	e := newShardEnv(t)
	for n := int32(1); n <= 2; n++ {
		if err := e.syncShard(n); err != nil {
			t.Fatal(err)
		}
	}
	bobs := e.storedFiles(shardBob)
	if len(bobs) == 0 {
		t.Fatal("bob's bookmark of the quoted post stored no file")
	}
	for f := range bobs {
		if !e.storedFiles(shardAlice)[f] {
			t.Fatalf("alice's quote does not use the quoted post's file %s: the test shares no file", f)
		}
	}
	if err := e.sim.DeletePost(e.ex.LongPost); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(24 * time.Hour)
	if err := e.syncShard(1); err != nil {
		t.Fatal(err)
	}
	if e.storedFiles(shardAlice)[firstKey(bobs)] {
		t.Fatal("alice's redacted post still records the quoted post's file: nothing was acted on")
	}
	for f := range bobs {
		if _, err := os.Stat(filepath.Join(e.storeDir, filepath.FromSlash(f))); err != nil {
			t.Errorf("bob's file %s, which shard 2 still uses, was deleted: %v", f, err)
		}
	}
}

// A shard cannot look up the user id of another shard's account, so with
// media files removed by the compliance actions, an account without
// user_id is an error that names it, before anything is read.
func TestAShardedSyncThatRemovesMediaFilesNeedsEveryUserID(t *testing.T) {
	e := newShardEnv(t)
	delete(e.spec["accounts"].([]map[string]any)[1], "user_id")
	err := e.syncShard(1)
	if err == nil || !strings.Contains(err.Error(), "accounts[1]: user_id is needed with --shard") {
		t.Fatalf("sync of shard 1: %v", err)
	}
	if got := e.sim.Usage(shardAlice); len(got) != 0 {
		t.Errorf("requests made before the error: %v", got)
	}
	e.spec["compliance"].(map[string]any)["on_change"] = "keep"
	if err := e.syncShard(1); err != nil {
		t.Errorf("with on_change: keep no file is removed, so no id is needed: %v", err)
	}
}

func firstKey(m map[string]bool) string {
	for k := range m {
		return k
	}
	return ""
}
