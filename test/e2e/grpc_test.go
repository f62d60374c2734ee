package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	pb "github.com/cloudquery/plugin-pb-go/pb/plugin/v3"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/serve"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// servePlugin runs the plugin's gRPC server on a unix socket, exactly as
// `cq-source-x serve --network unix --address SOCK` does when the CloudQuery
// CLI starts it, and returns a connected client. Stopping it ends the
// "process": nothing survives but what the state backend holds.
func servePlugin(t *testing.T, dir string, clk clock.Clock) (pb.PluginClient, func()) {
	t.Helper()
	sock := filepath.Join(dir, "plugin.sock")
	_ = os.Remove(sock)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		srv := serve.Plugin(plugin.New(plugin.WithClock(clk)), serve.WithArgs("serve", "--network", "unix", "--address", sock, "--log-level", "warn", "--no-sentry"))
		if err := srv.Serve(ctx); err != nil {
			t.Errorf("serve: %v", err)
		}
	}()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	c := pb.NewPluginClient(conn)
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err := c.GetName(ctx, &pb.GetName_Request{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("plugin did not start: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return c, func() {
		conn.Close()
		cancel()
		wg.Wait()
	}
}

// grpcSync runs Init and Sync over gRPC and returns the rows of each table.
func grpcSync(t *testing.T, c pb.PluginClient, specJSON []byte, backend string) map[string][]map[string]string {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Init(ctx, &pb.Init_Request{Spec: specJSON, InvocationId: "00000000-0000-4000-8000-000000000001"}); err != nil {
		t.Fatal(err)
	}
	stream, err := c.Sync(ctx, &pb.Sync_Request{
		Tables:  []string{"*"},
		Backend: &pb.Sync_BackendOptions{TableName: "cq_state_x", Connection: backend},
	})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]map[string]string{}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		switch m := resp.Message.(type) {
		case *pb.Sync_Response_Insert:
			rec, err := pb.NewRecordFromBytes(m.Insert.Record)
			if err != nil {
				t.Fatal(err)
			}
			table, err := schema.NewTableFromArrowSchema(rec.Schema())
			if err != nil {
				t.Fatal(err)
			}
			out[table.Name] = append(out[table.Name], rows(rec)...)
		case *pb.Sync_Response_Error:
			t.Errorf("sync error from table %s: %s", m.Error.TableName, m.Error.Error)
		}
	}
}

// The plugin over real gRPC, as the CloudQuery CLI runs it: a first sync, the
// user changes the list, a second sync in a new plugin process emits only the
// new posts and is billed exactly what the planner intended, because the
// state survived in the state backend.
func TestGRPCIncrementalSyncWithStateBackend(t *testing.T) {
	dir, err := os.MkdirTemp("", "cqx") // unix socket paths must be short
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	clk, sim := startSim(t, xsim.Options{})
	sim.SeedBookmarks(user, 400)
	sim.CreateFolder(user, "900", "to read")
	for _, id := range sim.Bookmarks(user)[:12] {
		sim.AddToFolder(user, "900", id)
	}
	backend, backendConn := startStateBackend(t, dir)
	specJSON, _ := json.Marshal(map[string]any{
		"base_url": sim.URL(),
		"accounts": []map[string]any{{"user_id": user, "access_token": sim.IssueToken(user)}},
	})

	c, stop := servePlugin(t, dir, clk)
	first := grpcSync(t, c, specJSON, backendConn)
	stop()
	if n := len(first["x_bookmarks"]); n != 400 {
		t.Fatalf("first sync emitted %d bookmarks, want 400", n)
	}
	if n := len(first["x_bookmark_folder_posts"]); n != 12 {
		t.Fatalf("first sync emitted %d folder posts, want 12", n)
	}
	if backend.Value("x_bookmarks/"+user, oldTable) == "" || backend.Value("x_bookmark_folder_posts/"+user+"/900", oldTable) == "" {
		t.Fatal("the state backend holds no walk state after the first sync")
	}

	// The user saves 7 posts, removes the newest held one, re-bookmarks an
	// old one, and files one new post in the folder.
	clk.Advance(24 * time.Hour)
	list := sim.Bookmarks(user)
	_ = sim.Unbookmark(user, list[0])
	var added []string
	for range 7 {
		id := sim.NewPostID()
		_ = sim.Bookmark(user, id)
		added = append(added, id)
	}
	_ = sim.Bookmark(user, list[200])
	sim.AddToFolder(user, "900", added[3])
	billedBefore := sim.Usage(user)[xsim.OpListBookmarks].PostsReturned
	simBilled := func() int {
		u := sim.Usage(user)
		return u[xsim.OpListBookmarks].PostsBilled + u[xsim.OpGetFolder].PostsBilled
	}
	simBilledBefore := simBilled()

	c, stop = servePlugin(t, dir, clk)
	second := grpcSync(t, c, specJSON, backendConn)
	stop()

	// The second sync sends the first sync's rows again (spec.Resend), as
	// they were, and the 7 new posts.
	sent := map[string]bool{}
	for _, r := range first["x_bookmarks"] {
		sentAgain(sent, "x_bookmarks", r)
	}
	var got []string
	resent := 0
	for _, r := range second["x_bookmarks"] {
		if sentAgain(sent, "x_bookmarks", r) {
			resent++
		} else {
			got = append(got, r["post_id"])
		}
	}
	slices.Sort(got)
	slices.Sort(added)
	if !slices.Equal(got, added) || resent != 400 {
		t.Fatalf("second sync emitted %v and %d rows of the first again, want exactly the 7 new posts %v and the first sync's 400", got, resent, added)
	}
	// k = 8 posts above the held tail (7 new, 1 re-bookmarked): the planner
	// reads k + 2 = 10, and 1 more for the removed newest held post that the
	// confirming run skips, in pages that never over-read.
	billed := sim.Usage(user)[xsim.OpListBookmarks].PostsReturned - billedBefore
	var usage map[string]string
	usageBilled := 0
	for _, r := range second["x_api_usage"] {
		if r["operation"] == "list_bookmarks" {
			usage = r
		}
		n, _ := strconv.Atoi(r["posts_billed"])
		usageBilled += n
	}
	if billed != 11 || usage["posts_returned"] != "11" || usage["walk_outcomes"] != "met_held" || usage["new_posts"] != "7" {
		t.Fatalf("billed %d, usage row %v; want 11 returned, met_held, 7 new", billed, usage)
	}
	// X bills the post read by both walks once (a new post in the folder):
	// the usage rows bill what the simulator bills.
	if got := simBilled() - simBilledBefore; usageBilled != got {
		t.Fatalf("usage rows bill %d posts, the simulator %d", usageBilled, got)
	}
	if n := len(second["x_bookmark_folder_posts"]); n != 13 {
		t.Fatalf("folder membership has %d posts, want 13", n)
	}
	for _, r := range second["x_bookmarks"] {
		if slices.Contains(added, r["post_id"]) && (r["bookmarked_after"] == "" || r["first_seen_at"] == "") {
			t.Fatalf("bookmark time window missing: %v", r)
		}
	}
}
