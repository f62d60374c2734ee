package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdkplugin "github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/plugin"
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
	read     []string // the keys the syncs read
}

// readLog is the state backend, and the keys read of it.
type readLog struct {
	*memstate.Store
	read *[]string
}

func (l readLog) GetKey(ctx context.Context, key string) (string, error) {
	*l.read = append(*l.read, key)
	return l.Store.GetKey(ctx, key)
}

const shardAlice, shardBob = "1001", "1002"

// aliceShard is alice's shard of 2, and bob's the other: a shard takes the
// accounts of its state buckets (package plugin), by user id.
const aliceShard = 2

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
	p := plugin.New(plugin.WithClock(e.clk), plugin.WithState(readLog{e.state, &e.read}))
	if err := p.Init(context.Background(), specJSON, sdkplugin.NewClientOptions{}); err != nil {
		e.t.Fatal(err)
	}
	_, err := p.SyncAll(context.Background(), sdkplugin.SyncOptions{Tables: []string{"*"}, Shard: &sdkplugin.Shard{Num: n, Total: 2}})
	return err
}

// storedFiles are the keys of the files an account's record says stored.
func (e *shardEnv) storedFiles(user string) map[string]bool {
	rec, err := archived.Unmarshal(e.state.Committed()[account.RecordKey(user)], "record")
	if err != nil {
		e.t.Fatal(err)
	}
	files := map[string]bool{}
	for _, k := range rec.StoredFiles() {
		files[k] = true
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
	if err := e.syncShard(aliceShard); err != nil {
		t.Fatal(err)
	}
	if e.storedFiles(shardAlice)[firstKey(bobs)] {
		t.Fatal("alice's redacted post still records the quoted post's file: nothing was acted on")
	}
	for f := range bobs {
		if _, err := os.Stat(filepath.Join(e.storeDir, filepath.FromSlash(f))); err != nil {
			t.Errorf("bob's file %s, which his shard still uses, was deleted: %v", f, err)
		}
	}
}

// A shard reads no key of another shard's accounts, and needs no user id
// of theirs: the files of a post X reported are deleted by the marks the
// store holds (store.Release), not by the other shards' records. A file
// only the shard's account used is deleted.
func TestAShardReadsNothingOfTheOtherShardsAccounts(t *testing.T) {
	e := newShardEnv(t)
	for n := int32(1); n <= 2; n++ {
		if err := e.syncShard(n); err != nil {
			t.Fatal(err)
		}
	}
	alices := e.storedFiles(shardAlice)
	delete(e.spec["accounts"].([]map[string]any)[1], "user_id")
	if err := e.sim.DeletePost(e.ex.LongPost); err != nil {
		t.Fatal(err)
	}
	e.clk.Advance(24 * time.Hour)
	e.read = nil
	if err := e.syncShard(aliceShard); err != nil {
		t.Fatal(err)
	}
	for _, key := range e.read {
		if strings.Contains(key, shardBob) {
			t.Errorf("alice's shard read %s, a key of bob's, in the other shard", key)
		}
	}
	deleted := 0
	for f := range alices {
		if _, err := os.Stat(filepath.Join(e.storeDir, filepath.FromSlash(f))); errors.Is(err, fs.ErrNotExist) {
			deleted++
		}
	}
	if deleted == 0 {
		t.Error("no file only alice used was deleted")
	}
}

func firstKey(m map[string]bool) string {
	for k := range m {
		return k
	}
	return ""
}
