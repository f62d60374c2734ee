package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	pb "github.com/cloudquery/plugin-pb-go/pb/plugin/v3"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// archiveSync runs Init and Sync over gRPC and applies every message at
// once to d, as a database destination in overwrite mode does: an insert
// replaces the row of the same primary key, a DeleteRecord removes the
// rows its predicates match. It returns the number of DeleteRecords.
func (d *destination) archiveSync(t *testing.T, c pb.PluginClient, specJSON []byte, backend string) (deletes int) {
	t.Helper()
	ctx := context.Background()
	if _, err := c.Init(ctx, &pb.Init_Request{Spec: specJSON, InvocationId: "00000000-0000-4000-8000-000000000001"}); err != nil {
		t.Fatal(err)
	}
	stream, err := c.Sync(ctx, &pb.Sync_Request{Tables: []string{"*"}, Backend: &pb.Sync_BackendOptions{TableName: "cq_state_x", Connection: backend}})
	if err != nil {
		t.Fatal(err)
	}
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return deletes
		}
		if err != nil {
			t.Fatal(err)
		}
		switch m := resp.Message.(type) {
		case *pb.Sync_Response_Insert:
			d.commit([]*pb.Sync_Response_Insert{m}, t)
		case *pb.Sync_Response_DeleteRecord:
			deletes++
			d.deleteRecord(t, m.DeleteRecord)
		case *pb.Sync_Response_Error:
			t.Errorf("sync error from table %s: %s", m.Error.TableName, m.Error.Error)
		}
	}
}

// deleteRecord removes the rows of the message's table that every
// predicate of one of its groups matches (user_id = ... AND post_id = ...).
func (d *destination) deleteRecord(t *testing.T, m *pb.Sync_MessageDeleteRecord) {
	for key, row := range d.rows[m.TableName] {
		for _, g := range m.WhereClause {
			match := true
			for _, p := range g.Predicates {
				rec, err := pb.NewRecordFromBytes(p.Record)
				if err != nil {
					t.Fatal(err)
				}
				if p.Operator != pb.Predicate_EQ || rec.NumRows() != 1 || row[p.Column] != rec.Column(0).ValueStr(0) {
					match = false
				}
			}
			if match {
				delete(d.rows[m.TableName], key)
			}
		}
	}
}

// rowsOf are the table's rows of a post.
func (d *destination) rowsOf(table, postID string) []map[string]string {
	return d.rowsWhere(table, "post_id", postID)
}

// complianceEnv is the content examples, archived by gRPC syncs with the
// compliance section into a destination.
type complianceEnv struct {
	t        *testing.T
	dir      string
	clk      *clock.Virtual
	sim      *xsim.Server
	ex       xsim.ContentExamples
	dest     *destination
	backend  string
	settings map[string]any
	deletes  int // DeleteRecord messages of the last sync
}

func newComplianceEnv(t *testing.T, compliance map[string]any, jobs ...xsim.ComplianceOptions) *complianceEnv {
	dir, err := os.MkdirTemp("", "cqx") // unix socket paths must be short
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	opts := xsim.Options{}
	if len(jobs) > 0 {
		opts.Compliance = jobs[0]
	}
	clk, sim := startSim(t, opts)
	e := &complianceEnv{t: t, dir: dir, clk: clk, sim: sim, ex: sim.SeedContentExamples(user),
		dest: &destination{rows: map[string]map[string]map[string]string{}}}
	clk.Advance(time.Hour)
	_, e.backend = startStateBackend(t, dir)
	compliance["bearer_token"] = sim.IssueAppOnlyToken()
	e.settings = map[string]any{
		"base_url":    sim.URL(),
		"accounts":    []map[string]any{{"user_id": user, "access_token": sim.IssueToken(user)}},
		"content":     allKinds,
		"media_files": map[string]any{"store": "file://" + filepath.ToSlash(e.storeDir())},
		"compliance":  compliance,
	}
	return e
}

// storeDir is the directory of the syncs' media store.
func (e *complianceEnv) storeDir() string { return filepath.Join(e.dir, "media") }

// rowsWhere are the table's rows whose column holds value.
func (d *destination) rowsWhere(table, column, value string) []map[string]string {
	var out []map[string]string
	for _, row := range d.rows[table] {
		if row[column] == value {
			out = append(out, row)
		}
	}
	return out
}

// sync is one sync, a day after the last, in a new plugin process.
func (e *complianceEnv) sync() {
	e.t.Helper()
	e.clk.Advance(24 * time.Hour)
	specJSON, _ := json.Marshal(e.settings)
	c, stop := servePlugin(e.t, e.dir, e.clk)
	defer stop()
	e.deletes = e.dest.archiveSync(e.t, c, specJSON, e.backend)
}

// contentTables are the tables whose rows are a bookmark's content.
var contentTables = []string{"x_bookmark_authors", "x_bookmark_media", "x_bookmark_referenced_posts"}

// A bookmark whose post its author deleted is redacted in the destination
// at the check that reports it (the default, on_change: redact): its
// x_bookmarks row is sent again with its key and dates only, which replaces
// the row by its primary key, and its rows of the content tables are
// removed with DeleteRecord messages; its tombstone stays. The next syncs
// neither send its content again (the outbox forgot it) nor act again.
func TestGRPCRedactsADeletedBookmarkInTheDestination(t *testing.T) {
	e := newComplianceEnv(t, map[string]any{})
	e.sync()
	post := e.ex.LongPost
	before := e.dest.rowsOf("x_bookmarks", post)
	if len(before) != 1 || before[0]["full_text"] == "" {
		t.Fatalf("first sync: %v", before)
	}
	for _, table := range contentTables {
		if len(e.dest.rowsOf(table, post)) == 0 {
			t.Fatalf("first sync: no %s row of the post", table)
		}
	}
	if err := e.sim.DeletePost(post); err != nil {
		t.Fatal(err)
	}
	e.sync()
	after := e.dest.rowsOf("x_bookmarks", post)
	if len(after) != 1 {
		t.Fatalf("x_bookmarks rows of the deleted post: %v", after)
	}
	kept := map[string]bool{"user_id": true, "post_id": true, "created_at": true, "first_seen_at": true, "bookmarked_after": true, "found_position": true, "_cq_id": true, "_cq_parent_id": true}
	for col, v := range after[0] {
		if !kept[col] {
			t.Errorf("redacted row keeps %s = %q", col, v)
		}
	}
	for col := range kept {
		if col != "_cq_id" && col != "_cq_parent_id" && after[0][col] != before[0][col] {
			t.Errorf("redacted row's %s is %q, was %q", col, after[0][col], before[0][col])
		}
	}
	for _, table := range contentTables {
		if rows := e.dest.rowsOf(table, post); len(rows) != 0 {
			t.Errorf("%s still holds %v", table, rows)
		}
	}
	if tomb := e.dest.rowsOf("x_post_compliance", post); len(tomb) != 1 || tomb[0]["reason"] != "deleted" {
		t.Errorf("tombstone %v", tomb)
	}
	other := e.dest.rowsOf("x_bookmarks", e.ex.ArticlePost)
	if len(other) != 1 || other[0]["article_text"] == "" || len(e.dest.rowsOf("x_bookmark_media", e.ex.ArticlePost)) != 2 {
		t.Errorf("a bookmark X did not report changed: %v", other)
	}

	e.sync()
	if got := e.dest.rowsOf("x_bookmarks", post); len(got) != 1 || got[0]["full_text"] != "" || e.deletes != 0 {
		t.Errorf("third sync: row %v, %d DeleteRecord messages: want the redacted row, nothing applied again", got, e.deletes)
	}
	for _, table := range contentTables {
		if rows := e.dest.rowsOf(table, post); len(rows) != 0 {
			t.Errorf("third sync sent again %s %v", table, rows)
		}
	}
}

// With on_change: delete, the bookmark's row goes too; the tombstone stays.
func TestGRPCDeletesADeletedBookmarkWhenAsked(t *testing.T) {
	e := newComplianceEnv(t, map[string]any{"on_change": "delete"})
	e.sync()
	post := e.ex.ArticlePost
	if err := e.sim.DeletePost(post); err != nil {
		t.Fatal(err)
	}
	e.sync()
	for _, table := range append([]string{"x_bookmarks"}, contentTables...) {
		if rows := e.dest.rowsOf(table, post); len(rows) != 0 {
			t.Errorf("%s still holds %v", table, rows)
		}
	}
	if len(e.dest.rowsOf("x_post_compliance", post)) != 1 || len(e.dest.rowsOf("x_bookmarks", e.ex.LongPost)) != 1 {
		t.Error("the tombstone, or another bookmark, is gone")
	}
}

// With on_change: keep, nothing changes in the destination.
func TestGRPCKeepsReportedBookmarksWhenAsked(t *testing.T) {
	e := newComplianceEnv(t, map[string]any{"on_change": "keep"})
	e.sync()
	post := e.ex.LongPost
	_ = e.sim.DeletePost(post)
	e.sync()
	if rows := e.dest.rowsOf("x_bookmarks", post); len(rows) != 1 || rows[0]["full_text"] == "" || e.deletes != 0 {
		t.Errorf("kept row %v, %d DeleteRecord messages", rows, e.deletes)
	}
}

// A post a bookmark quotes, answers or reposts is checked as the bookmarks
// are: when its author deletes it, its rows of x_bookmark_referenced_posts
// and its media's rows of x_media_files go, with its media files; the
// bookmark that quotes it stays whole, and its tombstone lands in
// x_post_compliance. The next sync neither sends it again nor acts again.
func TestGRPCRemovesAReferencedPostItsAuthorDeleted(t *testing.T) {
	e := newComplianceEnv(t, map[string]any{})
	e.sync()
	quoted := e.ex.Quoted
	files := e.dest.rowsWhere("x_media_files", "media_post_id", quoted)
	if len(e.dest.rowsWhere("x_bookmark_referenced_posts", "referenced_post_id", quoted)) != 1 || len(files) == 0 {
		t.Fatalf("first sync: no referenced row or media file of the quoted post")
	}
	if err := e.sim.DeletePost(quoted); err != nil {
		t.Fatal(err)
	}
	e.sync()
	if rows := e.dest.rowsWhere("x_bookmark_referenced_posts", "referenced_post_id", quoted); len(rows) != 0 {
		t.Errorf("x_bookmark_referenced_posts still holds the deleted post: %v", rows)
	}
	if rows := e.dest.rowsWhere("x_media_files", "media_post_id", quoted); len(rows) != 0 {
		t.Errorf("x_media_files still holds the deleted post's media: %v", rows)
	}
	for _, f := range files {
		if _, err := os.Stat(filepath.Join(e.storeDir(), filepath.FromSlash(f["file_key"]))); err == nil {
			t.Errorf("media file %s of the deleted post is still stored", f["file_key"])
		}
	}
	if tomb := e.dest.rowsOf("x_post_compliance", quoted); len(tomb) != 1 || tomb[0]["reason"] != "deleted" {
		t.Errorf("tombstone %v", tomb)
	}
	quote := e.dest.rowsOf("x_bookmarks", e.ex.LongPost)
	if len(quote) != 1 || quote[0]["full_text"] != e.ex.LongText || len(e.dest.rowsOf("x_bookmark_media", e.ex.LongPost)) != 2 ||
		len(e.dest.rowsWhere("x_media_files", "media_post_id", e.ex.LongPost)) == 0 {
		t.Errorf("the bookmark that quotes the deleted post lost its own content: %v", quote)
	}
	e.sync()
	if rows := e.dest.rowsWhere("x_bookmark_referenced_posts", "referenced_post_id", quoted); len(rows) != 0 || e.deletes != 0 {
		t.Errorf("third sync: %d DeleteRecord messages, referenced rows %v: want none", e.deletes, rows)
	}
}

// An account X suspends takes all it wrote: X reports each of its posts
// suspended, so its bookmarked posts are redacted (with its profile, in
// x_bookmark_authors) and the posts of it that bookmarks quote or answer
// leave x_bookmark_referenced_posts (with its profile, in their author
// column). No row keeps its profile or its text; other authors' bookmarks
// stay whole. The job of accounts reports the account too: the posts X
// reports themselves get no second row for it.
func TestGRPCRemovesWhatASuspendedAccountWrote(t *testing.T) {
	e := newComplianceEnv(t, map[string]any{})
	e.sync()
	bo := e.ex.Authors[1]
	if err := e.sim.SuspendUser(bo); err != nil {
		t.Fatal(err)
	}
	e.sync()
	e.nothingLeftOf(bo)
	for _, post := range []string{e.ex.ArticlePost, e.ex.ReplyToDeleted, e.ex.Quoted} {
		if tomb := e.dest.rowsOf("x_post_compliance", post); len(tomb) != 1 || tomb[0]["reason"] != "suspended" {
			t.Errorf("rows of x_post_compliance of %s: %v", post, tomb)
		}
	}
}

// X's jobs of accounts (type users) are run too, over the authors of the
// archived posts: an account they report loses all it wrote even when the
// jobs of posts say nothing of its posts (X documents that those report
// them; the program does not rely on it). Each of its posts gets a row in
// x_post_compliance from the job of accounts, and the next sync acts no
// more.
func TestGRPCRemovesWhatAnAccountReportedByTheJobOfAccountsWrote(t *testing.T) {
	e := newComplianceEnv(t, map[string]any{})
	e.sync()
	bo := e.ex.Authors[1]
	if err := e.sim.SetUserCompliance(bo, "deactivated"); err != nil {
		t.Fatal(err)
	}
	e.sync()
	e.nothingLeftOf(bo)
	for _, post := range []string{e.ex.ArticlePost, e.ex.ReplyToDeleted, e.ex.Quoted} {
		if tomb := e.dest.rowsOf("x_post_compliance", post); len(tomb) != 1 || tomb[0]["reason"] != "deactivated" {
			t.Errorf("rows of x_post_compliance of %s: %v", post, tomb)
		}
	}
	e.sync()
	if e.deletes != 0 {
		t.Errorf("third sync sent %d DeleteRecord messages: the actions were applied again", e.deletes)
	}
	e.nothingLeftOf(bo)
}

// nothingLeftOf fails when a row of the destination holds the author's
// profile or text, or when a bookmark of another author lost its content.
func (e *complianceEnv) nothingLeftOf(author string) {
	e.t.Helper()
	for _, table := range []string{"x_bookmark_authors", "x_bookmark_referenced_posts"} {
		if rows := e.dest.rowsWhere(table, "author_id", author); len(rows) != 0 {
			e.t.Errorf("%s still holds what account %s wrote: %v", table, author, rows)
		}
	}
	for _, post := range []string{e.ex.ArticlePost, e.ex.ReplyToDeleted} {
		if rows := e.dest.rowsOf("x_bookmarks", post); len(rows) != 1 || rows[0]["text"] != "" || rows[0]["author"] != "" {
			e.t.Errorf("bookmark %s of account %s: %v", post, author, rows)
		}
	}
	if rows := e.dest.rowsOf("x_bookmarks", e.ex.LongPost); len(rows) != 1 || rows[0]["full_text"] != e.ex.LongText {
		e.t.Errorf("another author's bookmark changed: %v", rows)
	}
}
