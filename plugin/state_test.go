package plugin

import (
	"context"
	"encoding/json"
	"maps"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// An account's state is in the bucket of its user id: that bucket never
// changes, whatever the spec or the number of shards.
func TestTheBucketOfAnAccountNeverChanges(t *testing.T) {
	for id, want := range map[string]int{"1001": 87, "1002": 234, "2244994945": 27} {
		if got := userBucket(id); got != want {
			t.Errorf("user %s is in bucket %d, was in %d: its state would be lost", id, got, want)
		}
	}
}

// Accounts spread evenly over the buckets, so that each shard reads about
// its share of the state.
func TestAccountsSpreadOverTheBuckets(t *testing.T) {
	var counts [stateBuckets]int
	const accounts = 100_000
	for i := range accounts {
		counts[userBucket(xsimLikeID(i))]++
	}
	for b, n := range counts {
		if mean := accounts / stateBuckets; n < mean*8/10 || n > mean*12/10 {
			t.Errorf("bucket %d holds %d accounts, %d on average", b, n, mean)
		}
	}
}

// xsimLikeID is the i-th of a series of user ids of the forms X's have:
// old ones short, new ones snowflakes of 19 digits (a new one every ms).
func xsimLikeID(i int) string {
	if i%2 == 0 {
		return strconv.Itoa(1000 + i*7919)
	}
	return strconv.Itoa(1_400_000_000_000_000_000 + i<<22)
}

// A sharded sync needs each account's user id without a request: an
// account with neither user_id nor a token file that records it fails,
// in one shard, saying what to set; it sends no request.
func TestAShardedSyncNeedsTheUserIDs(t *testing.T) {
	sim := startSim(t)
	sim.SeedBookmarks("1001", 3)
	specJSON, _ := json.Marshal(map[string]any{
		"base_url": sim.URL(),
		"accounts": []map[string]any{{"access_token": sim.IssueToken("1001")}},
	})
	failed := 0
	for n := int32(1); n <= 2; n++ {
		for _, e := range shardErrors(t, specJSON, n, 2) {
			failed++
			if !strings.Contains(e, "a sharded sync needs the user id of every account: set accounts[0].user_id") {
				t.Errorf("shard %d/2: %s", n, e)
			}
		}
	}
	if failed != 1 {
		t.Errorf("the account failed in %d shards, want 1", failed)
	}
	if u := sim.Usage("1001"); u[xsim.OpUsersMe].Requests+u[xsim.OpListBookmarks].Requests != 0 {
		t.Errorf("requests were sent: %+v", u)
	}
}

// A shard reads the token files of its own accounts alone, when the spec
// gives the user ids: the others may be on other machines, or not what
// the spec says (that is for their shard to report).
func TestAShardReadsTheTokenFilesOfItsAccountsAlone(t *testing.T) {
	sim := startSim(t)
	sim.SeedBookmarks("1001", 3)
	file := auth.TokenFile{Path: filepath.Join(t.TempDir(), "tokens.json")}
	if err := file.Save(&auth.StoredToken{Version: auth.FileFormatVersion, AccessToken: "a", RefreshToken: "r",
		TokenType: "bearer", Expiry: time.Now().Add(time.Hour), ClientID: "c", UserID: "9999"}); err != nil {
		t.Fatal(err)
	}
	specJSON, _ := json.Marshal(map[string]any{
		"base_url": sim.URL(),
		"accounts": []map[string]any{ // 1001 is in shard 2 of 2, 1002 in shard 1
			{"user_id": "1001", "access_token": sim.IssueToken("1001")},
			{"user_id": "1002", "token_file": file.Path},
		},
	})
	for n, want := range []string{"", "accounts[1].user_id is 1002 but the token file belongs to user 9999"} {
		got := strings.Join(shardErrors(t, specJSON, int32(2-n), 2), "\n")
		if want == "" && got != "" || !strings.Contains(got, want) {
			t.Errorf("shard %d/2: errors %q, want %q", 2-n, got, want)
		}
	}
}

// shardErrors is the errors of a sync of x_bookmarks of shard num/total of
// the spec, the state in memory.
// startSim starts a simulator without rate limits, closed with the test.
func startSim(t *testing.T) *xsim.Server {
	t.Helper()
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	return sim
}

func shardErrors(t *testing.T, specJSON []byte, num, total int32) []string {
	t.Helper()
	p := New(WithState(memstate.New()))
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"x_bookmarks"}, Shard: &plugin.Shard{Num: num, Total: total}})
	if err != nil {
		t.Fatal(err)
	}
	return syncErrors(msgs)
}

// slowTable is a bucket table whose SetKey takes its time, and which
// records the keys each Flush wrote.
type slowTable struct {
	mu       sync.Mutex
	inSetKey chan struct{}
	release  chan struct{}
	set      map[string]string
	flushed  map[string]string
}

func (t *slowTable) GetKey(_ context.Context, key string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.set[key], nil
}

func (t *slowTable) SetKey(_ context.Context, key, value string) error {
	close(t.inSetKey)
	<-t.release
	t.mu.Lock()
	defer t.mu.Unlock()
	t.set[key] = value
	return nil
}

func (t *slowTable) Flush(context.Context) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	maps.Copy(t.flushed, t.set)
	return nil
}

func (t *slowTable) Close() error { return nil }

// A key one walk sets while another walk flushes the state is written by a
// flush: the flush cannot clear the bucket's mark before the key is in it.
func TestAKeySetWhileTheStateFlushesIsFlushed(t *testing.T) {
	ctx := context.Background()
	key := account.BookmarksKey("1001")
	b := userBucket("1001")
	table := &slowTable{inSetKey: make(chan struct{}), release: make(chan struct{}), set: map[string]string{}, flushed: map[string]string{}}
	s := &bucketedState{tables: map[int]state.Client{0: table, b: table}, dirty: map[int]bool{}}

	setDone := make(chan error)
	go func() { setDone <- s.SetKey(ctx, key, "walked") }()
	<-table.inSetKey
	flushDone := make(chan error)
	go func() { flushDone <- s.Flush(ctx) }()
	select { // give a flush that does not wait for the key the time to end
	case err := <-flushDone:
		flushDone = nil
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(100 * time.Millisecond):
	}
	close(table.release)
	if err := <-setDone; err != nil {
		t.Fatal(err)
	}
	if flushDone != nil {
		if err := <-flushDone; err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := table.flushed[key]; got != "walked" {
		t.Fatalf("after the flushes, %s is %q in the table, want %q: the key would be lost", key, got, "walked")
	}
}
