package e2e

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"strconv"
	"strings"
	"testing"

	pb "github.com/cloudquery/plugin-pb-go/pb/plugin/v3"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// The state of a CloudQuery sync is spread over tables by account (package
// plugin): cq_state_x_<bucket>. Versions before kept it in one table,
// cq_state_x, which the first sync that opens a bucket's table moves its
// keys from.

// stateBeforeBuckets is what a first sync of the version before buckets
// left in its one table (the simulator's ids are the same in every run):
// 40 bookmarks of user with their authors and referenced posts, the rows
// kept to send again (gzip'd), and the compliance check's keys.
func stateBeforeBuckets(t *testing.T) map[string]string {
	t.Helper()
	b, err := os.ReadFile("testdata/state-before-buckets.json")
	if err != nil {
		t.Fatal(err)
	}
	var values map[string]string
	if err := json.Unmarshal(b, &values); err != nil {
		t.Fatal(err)
	}
	return values
}

// migrationEnv is the env of 40 bookmarks and compliance checks that
// state was made in, after its first sync, and the posts it bookmarks
// next: the same in every env (the simulator's compliance jobs take ids).
type migrationEnv struct {
	*deliveryEnv
	next []string
}

// newMigrationEnv is a migrationEnv whose state is made by this version
// (ref nil), or that version's, the clock where ref's stands (the checks
// wait on the virtual clock).
func newMigrationEnv(t *testing.T, ref *migrationEnv) *migrationEnv {
	e := &migrationEnv{deliveryEnv: newDeliveryEnv(t, 40)}
	for range 10 {
		e.next = append(e.next, e.sim.NewPostID())
	}
	e.spec["compliance"] = map[string]any{"bearer_token": e.sim.IssueAppOnlyToken(), "every": "0s"}
	if ref == nil {
		e.sync(nil, nil)
		return e
	}
	e.clk.Advance(ref.clk.Now().Sub(e.clk.Now()))
	e.backend.SetTable(oldTable, stateBeforeBuckets(t))
	return e
}

// newRound bookmarks n new posts and syncs, stopped as stop says, and
// returns what X billed for the list.
func (e *migrationEnv) newRound(n int, stop *stopKind, stopAt func(string) bool) int {
	for _, id := range e.next[:n] {
		_ = e.sim.Bookmark(user, id)
	}
	e.next = e.next[n:]
	before := e.billed()
	if stopAt != nil {
		// A stopped process asks X nothing more, however late the stop
		// reaches the plugin's goroutines on a loaded machine.
		at := stopAt
		stopAt = func(key string) bool {
			if at(key) {
				e.sim.SetFaults(xsim.Faults{ServerErrorRate: 1})
				return true
			}
			return false
		}
		defer e.sim.SetFaults(xsim.Faults{})
	}
	if stopped := e.sync(stop, stopAt); stopped != (stop != nil) {
		e.t.Fatalf("stopped: %v", stopped)
	}
	return e.billed() - before
}

// The first sync moves the state of the version before buckets into the
// buckets' tables, and reads the old table no more: the syncs after bill
// what they would had this version made the state, the rows that state
// kept are sent again, and the old table is left as it was.
func TestTheStateBeforeBucketsIsMovedOnce(t *testing.T) {
	ref := newMigrationEnv(t, nil)
	e := newMigrationEnv(t, ref)
	for round, n := range []int{5, 3} {
		e.backend.TakeRead()
		if got, want := e.newRound(n, nil, nil), ref.newRound(n, nil, nil); got != want {
			t.Fatalf("sync %d after the move billed %d posts, %d after a state of this version", round+1, got, want)
		}
		read := e.backend.TakeRead().Rows
		if moved := read[oldTable] > 0; moved != (round == 0) {
			t.Errorf("sync %d read %d rows of the old table", round+1, read[oldTable])
		}
	}
	e.mustHoldTheLists()
	if !maps.Equal(e.backend.Table(oldTable), stateBeforeBuckets(t)) {
		t.Error("the old table was written")
	}
	for _, name := range e.backend.Tables() {
		table := e.backend.Table(name)
		if name == oldTable {
			continue
		}
		if table[account.MovedKey] != oldTable {
			t.Errorf("%s is not marked moved from %s", name, oldTable)
		}
		for key := range table {
			if key != account.MovedKey && !strings.HasSuffix(name, fmt.Sprintf("_%03d", bucketOf(t, key))) {
				t.Errorf("%s holds %s", name, key)
			}
		}
	}
}

// bucketOf is the bucket of key, as the tables of a sync of every account
// of the tests have them: user's 087, the scope's 000.
func bucketOf(t *testing.T, key string) int {
	k, ok := account.ParseKey(key)
	switch {
	case !ok:
		t.Fatalf("a key of no form: %s", key)
	case k.User == user:
		return 87
	case k.User != "":
		t.Fatalf("a key of another user: %s", key)
	}
	return 0
}

// A sync stopped at any step of the move leaves the old table whole and
// the buckets unmarked, or the buckets whole: the next sync reads the
// state, bills what a sync after an unstopped move bills, and sends the
// rows it kept.
func TestAStopWhileTheStateIsMovedLosesNothing(t *testing.T) {
	// The buckets are moved one after the other, in the order the sync
	// first needs them: a bucket's copy holds a key of its own, and its
	// mark is the next write of MovedKey.
	copied := func(key string) func(string) bool {
		return func(k string) bool { return k == key }
	}
	marked := func(key string) func(string) bool {
		seen := false
		return func(k string) bool {
			seen = seen || k == key
			return seen && k == account.MovedKey
		}
	}
	steps := map[string]func() func(string) bool{
		"the scope's bucket copied":   func() func(string) bool { return copied(account.EndedKey("")) },
		"the scope's bucket marked":   func() func(string) bool { return marked(account.EndedKey("")) },
		"the account's bucket copied": func() func(string) bool { return copied(account.BookmarksKey(user)) },
		"the account's bucket marked": func() func(string) bool { return marked(account.BookmarksKey(user)) },
	}
	ref := newMigrationEnv(t, newMigrationEnv(t, nil))
	want := []int{ref.newRound(5, nil, nil), ref.newRound(3, nil, nil)}
	for name, step := range steps {
		for _, kind := range []stopKind{ctrlC, kill9} {
			t.Run(name+", "+kind.String(), func(t *testing.T) {
				e := newMigrationEnv(t, ref)
				stopped := e.newRound(5, &kind, step())
				if got := stopped + e.newRound(0, nil, nil); got != want[0] {
					t.Errorf("the stopped sync and the next billed %d posts, %d when not stopped", got, want[0])
				}
				if got := e.newRound(3, nil, nil); got != want[1] {
					t.Errorf("the sync after billed %d posts, %d when the move was not stopped", got, want[1])
				}
				e.mustHoldTheLists()
				if !maps.Equal(e.backend.Table(oldTable), stateBeforeBuckets(t)) {
					t.Error("the old table was written")
				}
			})
		}
	}
}

// A shard reads the tables of its own accounts' buckets and of its scope
// alone (and the old table, empty here, when it opens a bucket the first
// time), and syncs each of its accounts: every account is synced by one
// shard, whatever the number of shards, and incrementally after the
// number changes (its state is where it was).
func TestAShardReadsTheTablesOfItsBucketsAlone(t *testing.T) {
	e := newDeliveryEnv(t, 0)
	var users []string
	var accounts []map[string]any
	for i := range 8 {
		u := strconv.Itoa(3001 + i)
		e.sim.SeedBookmarks(u, 30)
		users = append(users, u)
		accounts = append(accounts, map[string]any{"user_id": u, "access_token": e.sim.IssueToken(u)})
	}
	e.spec["accounts"] = accounts
	e.sync(nil, nil)
	for _, total := range []int32{2, 3} {
		synced := map[string]int{}
		for _, u := range users {
			_ = e.sim.Bookmark(u, e.sim.NewPostID())
		}
		for num := int32(1); num <= total; num++ {
			before := map[string]xsim.OpUsage{}
			for _, u := range users {
				before[u] = e.sim.Usage(u)[xsim.OpListBookmarks]
			}
			e.backend.TakeRead()
			e.shard = &pb.Sync_Request_Shard{Num: num, Total: total}
			e.sync(nil, nil)
			for name := range e.backend.TakeRead().Rows {
				if b, _ := strconv.Atoi(name[strings.LastIndexByte(name, '_')+1:]); name != oldTable && int32(b)%total != num-1 {
					t.Errorf("shard %d/%d read %s", num, total, name)
				}
			}
			for _, u := range users {
				now := e.sim.Usage(u)[xsim.OpListBookmarks]
				if now.Requests > before[u].Requests {
					synced[u]++
					if billed := now.PostsBilled - before[u].PostsBilled; billed > 5 {
						t.Errorf("shard %d/%d billed %d posts of user %s, who saved one", num, total, billed, u)
					}
				}
			}
		}
		for _, u := range users {
			if synced[u] != 1 {
				t.Errorf("%d shards synced user %s", synced[u], u)
			}
		}
	}
}
