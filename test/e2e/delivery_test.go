package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	pb "github.com/cloudquery/plugin-pb-go/pb/plugin/v3"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/test/statebackend"
)

// A CloudQuery sync's rows go source → CLI → destination, which buffers
// them until its stream closes; the state goes to its backend on a stream
// of its own. These tests stop syncs right after the plugin's state reached
// the backend — the moment that loses the most — and drop what the
// destination buffered, then run one clean sync: every bookmark in the list
// (with its content rows), every folder member and every compliance finding
// must be in the destination, and X must have billed nothing twice.

// stopKind is how a sync is stopped.
type stopKind int

const (
	// ctrlC: the CLI cancels the sync (SIGINT); the plugin sees its context
	// end.
	ctrlC stopKind = iota
	// kill9: the CLI and its plugins die at once: the plugin writes nothing
	// more, and the destination loses its buffer.
	kill9
	// failedWrite: the sync runs to its end, and the destination fails to
	// write what it buffered.
	failedWrite
)

func (k stopKind) String() string {
	return [...]string{"Ctrl-C", "kill -9", "failed destination write"}[k]
}

// destination is what a destination plugin holds: rows by table and
// primary key. What a sync sends is buffered until its stream closes.
type destination struct {
	rows map[string]map[string]map[string]string
	// mediaURL is the simulator's media host, which the media objects'
	// URLs name: each simulator has a port of its own.
	mediaURL string
}

func (d *destination) commit(buffered []*pb.Sync_Response_Insert, t *testing.T) {
	for _, m := range buffered {
		rec, err := pb.NewRecordFromBytes(m.Insert.Record)
		if err != nil {
			t.Fatal(err)
		}
		table, err := schema.NewTableFromArrowSchema(rec.Schema())
		if err != nil {
			t.Fatal(err)
		}
		if d.rows[table.Name] == nil {
			d.rows[table.Name] = map[string]map[string]string{}
		}
		for _, row := range rows(rec) {
			var key []string
			for _, c := range table.PrimaryKeys() {
				key = append(key, row[c])
			}
			d.rows[table.Name][strings.Join(key, "/")] = row
		}
	}
}

// has reports whether table holds a row whose primary key starts with key.
func (d *destination) has(table, key string) bool {
	for k := range d.rows[table] {
		if k == key || strings.HasPrefix(k, key+"/") {
			return true
		}
	}
	return false
}

// deliveryEnv is the simulator, the state backend and the destination of a
// series of gRPC syncs, each in a new plugin process.
type deliveryEnv struct {
	t       *testing.T
	dir     string
	clk     *clock.Virtual
	sim     *xsim.Server
	backend *statebackend.Backend
	conn    string
	dest    *destination
	spec    map[string]any
	shard   *pb.Sync_Request_Shard // the syncs' shard, nil for every account
}

func newDeliveryEnv(t *testing.T, bookmarks int) *deliveryEnv {
	t.Helper()
	dir, err := os.MkdirTemp("", "cqx") // unix socket paths must be short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	clk, sim := startSim(t, xsim.Options{})
	sim.SeedBookmarks(user, bookmarks)
	backend, conn := startStateBackend(t, dir)
	e := &deliveryEnv{t: t, dir: dir, clk: clk, sim: sim, backend: backend, conn: conn,
		dest: &destination{rows: map[string]map[string]map[string]string{}, mediaURL: sim.MediaURL()}}
	e.spec = map[string]any{
		"base_url": sim.URL(),
		"accounts": []map[string]any{{"user_id": user, "access_token": sim.IssueToken(user)}},
		"content":  map[string]any{"authors": true, "referenced_posts": true},
	}
	return e
}

// sync runs one sync as the CLI does. With stop set, the sync is stopped
// the first time the state backend receives a key for which stopAt is true,
// and the destination drops what it buffered. It returns whether it
// stopped.
func (e *deliveryEnv) sync(stop *stopKind, stopAt func(key string) bool) bool {
	e.t.Helper()
	e.clk.Advance(24 * time.Hour)
	specJSON, err := json.Marshal(e.spec)
	if err != nil {
		e.t.Fatal(err)
	}
	c, stopPlugin := servePlugin(e.t, e.dir, e.clk)
	defer stopPlugin()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var once sync.Once
	stopped := make(chan struct{})
	if stop != nil && *stop != failedWrite {
		e.backend.OnWrite(func(keys []string) {
			if slices.ContainsFunc(keys, stopAt) {
				once.Do(func() {
					if *stop == kill9 {
						e.backend.RefuseWrites(true) // the plugin is dead: it writes nothing more
					}
					close(stopped)
					cancel()
				})
			}
		})
	}
	defer e.backend.OnWrite(nil)
	defer e.backend.RefuseWrites(false)

	if _, err := c.Init(ctx, &pb.Init_Request{Spec: specJSON, InvocationId: "00000000-0000-4000-8000-000000000002"}); err != nil {
		e.t.Fatal(err)
	}
	stream, err := c.Sync(ctx, &pb.Sync_Request{
		Tables:  []string{"*"},
		Backend: &pb.Sync_BackendOptions{TableName: oldTable, Connection: e.conn},
		Shard:   e.shard,
	})
	if err != nil {
		e.t.Fatal(err)
	}
	var buffered []*pb.Sync_Response_Insert
	for {
		resp, err := stream.Recv()
		select {
		case <-stopped:
			return true // the destination's buffer is lost with the CLI
		default:
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			e.t.Fatalf("sync: %v", err)
		}
		if m, ok := resp.Message.(*pb.Sync_Response_Insert); ok {
			buffered = append(buffered, m)
		}
	}
	if stop != nil && *stop == failedWrite {
		return true
	}
	e.dest.commit(buffered, e.t)
	return false
}

// billed is what X billed the user for, of every list.
func (e *deliveryEnv) billed() int {
	u := e.sim.Usage(user)
	return u[xsim.OpListBookmarks].PostsBilled + u[xsim.OpGetFolder].PostsBilled
}

// mustHoldTheLists fails unless the destination holds every bookmark in
// the list, with its author's row.
func (e *deliveryEnv) mustHoldTheLists() {
	e.t.Helper()
	var missing, noAuthor []string
	for _, id := range e.sim.Bookmarks(user) {
		switch {
		case !e.dest.has("x_bookmarks", user+"/"+id):
			missing = append(missing, id)
		case !e.dest.has("x_bookmark_authors", user+"/"+id):
			noAuthor = append(noAuthor, id)
		}
	}
	if len(missing) > 0 || len(noAuthor) > 0 {
		e.t.Fatalf("after a clean sync, %d bookmarks are missing from x_bookmarks (%v) and %d from x_bookmark_authors (%v)",
			len(missing), first(missing), len(noAuthor), first(noAuthor))
	}
}

func first(ids []string) []string { return ids[:min(len(ids), 5)] }

// stopCase is a stop test's case: how its syncs are stopped, and whether
// they sync every account or one shard.
type stopCase struct {
	kind    stopKind
	sharded bool
}

func (c stopCase) String() string {
	if c.sharded {
		return c.kind.String() + ", shard 2 of 2"
	}
	return c.kind.String()
}

var stopCases = []stopCase{{ctrlC, false}, {kill9, false}, {failedWrite, false}, {ctrlC, true}, {kill9, true}, {failedWrite, true}}

// newStopEnv is newDeliveryEnv for case c: sharded, its syncs are those of
// shard 2 of 2, user's (a shard takes the accounts of its state buckets),
// of a spec with an account of shard 1 too, which bookmarked some of
// user's posts (new posts would change the ids of the posts to come).
func newStopEnv(t *testing.T, c stopCase, bookmarks int) *deliveryEnv {
	e := newDeliveryEnv(t, bookmarks)
	if c.sharded {
		const other = "1002"
		for _, id := range e.sim.Bookmarks(user)[:5] {
			if err := e.sim.Bookmark(other, id); err != nil {
				t.Fatal(err)
			}
		}
		e.spec["accounts"] = append(e.spec["accounts"].([]map[string]any), map[string]any{"user_id": other, "access_token": e.sim.IssueToken(other)})
		e.shard = &pb.Sync_Request_Shard{Num: 2, Total: 2}
	}
	return e
}

// bookmarkRounds runs a first sync, then rounds of 25 new bookmarks each
// synced by a sync stopped (when stop is set) right after the state of the
// bookmarks walk reached the backend, then a clean sync. It returns what X
// billed for all of them.
func (e *deliveryEnv) bookmarkRounds(rounds int, stop *stopKind) int {
	e.t.Helper()
	e.sync(nil, nil)
	e.mustHoldTheLists()
	isWalkState := func(key string) bool { return key == "x_bookmarks/"+user }
	for range rounds {
		for range 25 {
			_ = e.sim.Bookmark(user, e.sim.NewPostID())
		}
		if stopped := e.sync(stop, isWalkState); stopped != (stop != nil) {
			e.t.Fatalf("stopped: %v", stopped)
		}
	}
	e.sync(nil, nil)
	return e.billed()
}

// mustHoldTheSameRows fails unless the destination holds the rows of
// tables that want holds, the same but for the ids the SDK gives rows.
func (d *destination) mustHoldTheSameRows(t *testing.T, want *destination, tables ...string) {
	t.Helper()
	for _, table := range tables {
		if len(want.rows[table]) == 0 {
			t.Fatalf("the syncs that were not stopped wrote no %s row", table)
		}
		for key, w := range want.rows[table] {
			got, ok := d.rows[table][key]
			if !ok {
				t.Fatalf("%s: no row %s", table, key)
			}
			for col, v := range w {
				if col != "_cq_id" && col != "_cq_parent_id" && strings.ReplaceAll(got[col], d.mediaURL, "") != strings.ReplaceAll(v, want.mediaURL, "") {
					t.Fatalf("%s row %s: %s is %q, %q in the syncs that were not stopped", table, key, col, got[col], v)
				}
			}
		}
	}
}

// Bookmarks and their content tables: four syncs stopped right after the
// state of their bookmarks walk reached the backend, each after new saves,
// then a clean sync. The stopped syncs' rows are sent again from the
// state, as they were: the destination holds the rows of the same syncs
// when none is stopped, and X bills what they bill.
func TestAStoppedSyncLosesNoBookmark(t *testing.T) {
	unstopped := newDeliveryEnv(t, 120)
	unstoppedBilled := unstopped.bookmarkRounds(4, nil)
	for _, c := range stopCases {
		t.Run(c.String(), func(t *testing.T) {
			e := newStopEnv(t, c, 120)
			billed := e.bookmarkRounds(4, &c.kind)
			e.mustHoldTheLists()
			e.dest.mustHoldTheSameRows(t, unstopped.dest, "x_bookmarks", "x_bookmark_authors", "x_bookmark_media", "x_bookmark_referenced_posts")
			if billed != unstoppedBilled {
				t.Errorf("X billed %d posts, %d when no sync is stopped: the stopped syncs' posts were read again", billed, unstoppedBilled)
			}
		})
	}
}

// Folder membership: each sync emits the whole of it, so a clean sync
// writes it whole again, whatever was stopped before.
func TestAStoppedSyncLosesNoFolderMember(t *testing.T) {
	for _, c := range stopCases {
		t.Run(c.String(), func(t *testing.T) {
			e := newStopEnv(t, c, 60)
			e.sim.CreateFolder(user, "900", "to read")
			e.sync(nil, nil)
			isFolderState := func(key string) bool { return strings.HasPrefix(key, "x_bookmark_folder_posts/"+user+"/") }
			for range 3 {
				for range 5 {
					id := e.sim.NewPostID()
					_ = e.sim.Bookmark(user, id)
					e.sim.AddToFolder(user, "900", id)
				}
				if !e.sync(&c.kind, isFolderState) {
					t.Fatal("the sync was not stopped")
				}
			}
			e.sync(nil, nil)
			members := e.sim.FolderPosts(user, "900")
			for _, id := range members {
				if !e.dest.has("x_bookmark_folder_posts", user+"/900/"+id) {
					t.Fatalf("folder member %s is missing after a clean sync", id)
				}
			}
			if len(members) != 15 {
				t.Fatalf("the folder holds %d posts, want 15", len(members))
			}
		})
	}
}

// Compliance findings: syncs stopped right after the account's checks,
// which record the posts checked, reached the backend. The findings are
// sent again: the destination holds one for every post X reported.
func TestAStoppedSyncLosesNoComplianceFinding(t *testing.T) {
	for _, c := range stopCases {
		t.Run(c.String(), func(t *testing.T) {
			e := newStopEnv(t, c, 40)
			e.spec["compliance"] = map[string]any{"bearer_token": e.sim.IssueAppOnlyToken(), "every": "0s"}
			e.sync(nil, nil)
			isChecks := func(key string) bool { return key == "x_post_compliance/checks/"+user }
			var deleted []string
			for round := range 3 {
				id := e.sim.Bookmarks(user)[10+round]
				if err := e.sim.DeletePost(id); err != nil {
					t.Fatal(err)
				}
				deleted = append(deleted, id)
				if !e.sync(&c.kind, isChecks) {
					t.Fatal("the sync was not stopped")
				}
			}
			e.sync(nil, nil)
			for _, id := range deleted {
				if !e.dest.has("x_post_compliance", user+"/"+id) {
					t.Fatalf("the finding that post %s was deleted is missing after a clean sync", id)
				}
			}
		})
	}
}
