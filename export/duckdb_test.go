package export_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// duckdb runs one query with DuckDB (from npm; .ci/run installs it and sets
// CQX_DUCKDB_DIR) and returns the rows. Without it the test is skipped.
func duckdb(t *testing.T, sql string) []map[string]any {
	t.Helper()
	dir := os.Getenv("CQX_DUCKDB_DIR")
	if dir == "" {
		t.Skip("DuckDB for Node.js not installed (CQX_DUCKDB_DIR unset; .ci/run sets it)")
	}
	out, err := exec.Command("node", filepath.Join(dir, "query.mjs"), sql).Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("duckdb: %v\n%s", err, ee.Stderr)
		}
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("duckdb output %q: %v", out, err)
	}
	return rows
}

// duckDBTypes are the columns DuckDB 1.5 reads from each table's files, in
// order, with their types, as the exporter wrote them when each column was
// declared a second time for its own Parquet page writer (recorded before
// that path was removed): every table keeps them. The content tables and
// columns, x_bookmark_changes and x_post_compliance came later.
var duckDBTypes = map[string][][2]string{
	"x_bookmarks": {
		{"_cq_sync_time", "TIMESTAMP WITH TIME ZONE"},
		{"_cq_source_name", "VARCHAR"},
		{"_cq_id", "VARCHAR"},
		{"_cq_parent_id", "VARCHAR"},
		{"user_id", "VARCHAR"},
		{"post_id", "VARCHAR"},
		{"text", "VARCHAR"},
		{"created_at", "TIMESTAMP WITH TIME ZONE"},
		{"author_id", "VARCHAR"},
		{"conversation_id", "VARCHAR"},
		{"lang", "VARCHAR"},
		{"in_reply_to_user_id", "VARCHAR"},
		{"possibly_sensitive", "BOOLEAN"},
		{"edit_history_tweet_ids", "VARCHAR[]"},
		{"public_metrics", "VARCHAR"},
		{"entities", "VARCHAR"},
		{"referenced_tweets", "VARCHAR"},
		{"attachments", "VARCHAR"},
		{"note_tweet", "VARCHAR"},
		{"full_text", "VARCHAR"},
		{"article_title", "VARCHAR"},
		{"article_text", "VARCHAR"},
		{"article", "VARCHAR"},
		{"author", "VARCHAR"},
		{"media", "VARCHAR"},
		{"post", "VARCHAR"},
		{"first_seen_at", "TIMESTAMP WITH TIME ZONE"},
		{"bookmarked_after", "TIMESTAMP WITH TIME ZONE"},
		{"found_position", "BIGINT"},
	},
	"x_bookmark_authors": {
		{"_cq_sync_time", "TIMESTAMP WITH TIME ZONE"},
		{"_cq_source_name", "VARCHAR"},
		{"_cq_id", "VARCHAR"},
		{"_cq_parent_id", "VARCHAR"},
		{"user_id", "VARCHAR"},
		{"post_id", "VARCHAR"},
		{"author_id", "VARCHAR"},
		{"username", "VARCHAR"},
		{"name", "VARCHAR"},
		{"description", "VARCHAR"},
		{"location", "VARCHAR"},
		{"url", "VARCHAR"},
		{"profile_image_url", "VARCHAR"},
		{"protected", "BOOLEAN"},
		{"verified", "BOOLEAN"},
		{"verified_type", "VARCHAR"},
		{"created_at", "TIMESTAMP WITH TIME ZONE"},
		{"public_metrics", "VARCHAR"},
		{"user", "VARCHAR"},
		{"error", "VARCHAR"},
		{"seen_at", "TIMESTAMP WITH TIME ZONE"},
	},
	"x_bookmark_media": {
		{"_cq_sync_time", "TIMESTAMP WITH TIME ZONE"},
		{"_cq_source_name", "VARCHAR"},
		{"_cq_id", "VARCHAR"},
		{"_cq_parent_id", "VARCHAR"},
		{"user_id", "VARCHAR"},
		{"post_id", "VARCHAR"},
		{"media_key", "VARCHAR"},
		{"position", "BIGINT"},
		{"role", "VARCHAR"},
		{"type", "VARCHAR"},
		{"url", "VARCHAR"},
		{"preview_image_url", "VARCHAR"},
		{"download_url", "VARCHAR"},
		{"alt_text", "VARCHAR"},
		{"width", "BIGINT"},
		{"height", "BIGINT"},
		{"duration_ms", "BIGINT"},
		{"variants", "VARCHAR"},
		{"media", "VARCHAR"},
		{"error", "VARCHAR"},
		{"seen_at", "TIMESTAMP WITH TIME ZONE"},
	},
	"x_bookmark_referenced_posts": {
		{"_cq_sync_time", "TIMESTAMP WITH TIME ZONE"},
		{"_cq_source_name", "VARCHAR"},
		{"_cq_id", "VARCHAR"},
		{"_cq_parent_id", "VARCHAR"},
		{"user_id", "VARCHAR"},
		{"post_id", "VARCHAR"},
		{"referenced_post_id", "VARCHAR"},
		{"type", "VARCHAR"},
		{"text", "VARCHAR"},
		{"full_text", "VARCHAR"},
		{"created_at", "TIMESTAMP WITH TIME ZONE"},
		{"author_id", "VARCHAR"},
		{"author_username", "VARCHAR"},
		{"conversation_id", "VARCHAR"},
		{"lang", "VARCHAR"},
		{"article_title", "VARCHAR"},
		{"article_text", "VARCHAR"},
		{"public_metrics", "VARCHAR"},
		{"author", "VARCHAR"},
		{"media", "VARCHAR"},
		{"post", "VARCHAR"},
		{"error", "VARCHAR"},
		{"seen_at", "TIMESTAMP WITH TIME ZONE"},
	},
	"x_bookmark_folders": {
		{"_cq_sync_time", "TIMESTAMP WITH TIME ZONE"},
		{"_cq_source_name", "VARCHAR"},
		{"_cq_id", "VARCHAR"},
		{"_cq_parent_id", "VARCHAR"},
		{"user_id", "VARCHAR"},
		{"folder_id", "VARCHAR"},
		{"name", "VARCHAR"},
	},
	"x_bookmark_folder_posts": {
		{"_cq_sync_time", "TIMESTAMP WITH TIME ZONE"},
		{"_cq_source_name", "VARCHAR"},
		{"_cq_id", "VARCHAR"},
		{"_cq_parent_id", "VARCHAR"},
		{"user_id", "VARCHAR"},
		{"folder_id", "VARCHAR"},
		{"post_id", "VARCHAR"},
	},
	"x_api_usage": {
		{"_cq_sync_time", "TIMESTAMP WITH TIME ZONE"},
		{"_cq_source_name", "VARCHAR"},
		{"_cq_id", "VARCHAR"},
		{"_cq_parent_id", "VARCHAR"},
		{"sync_id", "VARCHAR"},
		{"user_id", "VARCHAR"},
		{"operation", "VARCHAR"},
		{"sync_started_at", "TIMESTAMP WITH TIME ZONE"},
		{"account", "VARCHAR"},
		{"requests", "BIGINT"},
		{"ok_responses", "BIGINT"},
		{"posts_returned", "BIGINT"},
		{"posts_billed", "BIGINT"},
		{"posts_unread", "BIGINT"},
		{"users_returned", "BIGINT"},
		{"users_billed", "BIGINT"},
		{"media_returned", "BIGINT"},
		{"writes_billed", "BIGINT"},
		{"owned_reads", "BOOLEAN"},
		{"posts_usd", "DOUBLE"},
		{"users_usd", "DOUBLE"},
		{"writes_usd", "DOUBLE"},
		{"estimated_usd", "DOUBLE"},
		{"rate_limited", "BIGINT"},
		{"rate_limit_waits", "BIGINT"},
		{"rate_limit_wait_seconds", "DOUBLE"},
		{"errors", "BIGINT"},
		{"walks", "BIGINT"},
		{"walk_outcomes", "VARCHAR"},
		{"new_posts", "BIGINT"},
		{"includes_missing", "BIGINT"},
		{"files_stored", "BIGINT"},
		{"bytes_fetched", "BIGINT"},
		{"failure", "VARCHAR"},
	},
	"x_bookmark_changes": {
		{"_cq_sync_time", "TIMESTAMP WITH TIME ZONE"},
		{"_cq_source_name", "VARCHAR"},
		{"operation_id", "VARCHAR"},
		{"user_id", "VARCHAR"},
		{"post_id", "VARCHAR"},
		{"change", "VARCHAR"},
		{"changed_at", "TIMESTAMP WITH TIME ZONE"},
		{"bookmarked", "BOOLEAN"},
		{"command", "VARCHAR"},
		{"source_user_id", "VARCHAR"},
	},
	"x_media_files": {
		{"_cq_sync_time", "TIMESTAMP WITH TIME ZONE"},
		{"_cq_source_name", "VARCHAR"},
		{"_cq_id", "VARCHAR"},
		{"_cq_parent_id", "VARCHAR"},
		{"user_id", "VARCHAR"},
		{"post_id", "VARCHAR"},
		{"media_key", "VARCHAR"},
		{"url", "VARCHAR"},
		{"media_post_id", "VARCHAR"},
		{"media_type", "VARCHAR"},
		{"file", "VARCHAR"},
		{"status", "VARCHAR"},
		{"file_key", "VARCHAR"},
		{"sha256", "VARCHAR"},
		{"size", "BIGINT"},
		{"content_type", "VARCHAR"},
		{"stored_at", "TIMESTAMP WITH TIME ZONE"},
		{"http_status", "BIGINT"},
		{"error", "VARCHAR"},
		{"checked_at", "TIMESTAMP WITH TIME ZONE"},
	},
	"x_post_compliance": {
		{"_cq_sync_time", "TIMESTAMP WITH TIME ZONE"},
		{"_cq_source_name", "VARCHAR"},
		{"_cq_id", "VARCHAR"},
		{"_cq_parent_id", "VARCHAR"},
		{"user_id", "VARCHAR"},
		{"post_id", "VARCHAR"},
		{"job_id", "VARCHAR"},
		{"action", "VARCHAR"},
		{"reason", "VARCHAR"},
		{"archive_action", "VARCHAR"},
		{"created_at", "TIMESTAMP WITH TIME ZONE"},
		{"redacted_at", "TIMESTAMP WITH TIME ZONE"},
		{"checked_at", "TIMESTAMP WITH TIME ZONE"},
	},
}

// DuckDB reads DIR/<table>/*.parquet directly, with every column's type as
// listed above: timestamps as timestamps, ids as text, lists as lists, JSON
// as text that its JSON functions read.
func TestDuckDBReadsTheExportedFiles(t *testing.T) {
	if os.Getenv("CQX_DUCKDB_DIR") == "" {
		t.Skip("DuckDB for Node.js not installed (CQX_DUCKDB_DIR unset; .ci/run sets it)")
	}
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 300, folders: 1}, {id: "1002", bookmarks: 7}}
	tokens := seed(sim, users)
	src, err := cqspec.Parse([]byte(specYAML(sim.URL(), users, tokens, `["*"]`)+allContentYAML+"    media_files: {photos: true}\n"), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for range 2 {
		clk.Advance(time.Hour)
		sim.Bookmark("1001", sim.NewPostID())
		if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk}); err != nil {
			t.Fatal(err)
		}
	}
	for _, table := range export.TableNames() {
		if _, ok := duckDBTypes[table]; !ok {
			t.Errorf("%s: no column types to check it against", table)
		}
	}
	for table, want := range duckDBTypes {
		var got [][2]string
		for _, r := range duckdb(t, "DESCRIBE SELECT * FROM '"+filepath.Join(dir, table, "*.parquet")+"'") {
			got = append(got, [2]string{r["column_name"].(string), r["column_type"].(string)})
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("DuckDB reads %s as\n%v\nwant\n%v", table, got, want)
		}
	}
	files := "'" + filepath.Join(dir, "x_bookmarks", "*.parquet") + "'"
	got := duckdb(t, `SELECT count(*) AS n, count(DISTINCT (user_id, post_id)) AS distinct_posts,
		bool_and(post->>'$.id' = post_id) AS json_ids_match,
		bool_and(created_at < first_seen_at) AS created_before_seen,
		sum(CAST(public_metrics->>'$.like_count' AS BIGINT)) IS NOT NULL AS metrics_read
		FROM `+files)[0]
	want := len(sim.Bookmarks("1001")) + len(sim.Bookmarks("1002"))
	if n := asInt(t, got["n"]); n != want || asInt(t, got["distinct_posts"]) != want {
		t.Errorf("DuckDB counts %v rows (%v distinct), want %d", got["n"], got["distinct_posts"], want)
	}
	for _, k := range []string{"json_ids_match", "created_before_seen", "metrics_read"} {
		if got[k] != true {
			t.Errorf("%s = %v", k, got[k])
		}
	}
	id := sim.Bookmarks("1002")[3]
	post := sim.PostContent(id)
	row := duckdb(t, "SELECT epoch_ms(created_at) AS ms FROM "+files+" WHERE post_id = '"+id+"'")
	if len(row) != 1 || int64(asInt(t, row[0]["ms"])) != post.CreatedAt.UnixMilli() {
		t.Errorf("created_at of %s: DuckDB %v, simulator %v", id, row, post.CreatedAt)
	}
}

// asInt reads a number DuckDB returned as JSON (BIGINTs come as strings).
func asInt(t *testing.T, v any) int {
	t.Helper()
	switch v := v.(type) {
	case float64:
		return int(v)
	case string:
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatalf("not a number: %q", v)
		}
		return n
	}
	t.Fatalf("not a number: %#v", v)
	return 0
}
