package export_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// The README's "my bookmarks that were deleted" query, run by DuckDB on an
// export whose second run found a deleted bookmark, returns that bookmark
// with what can still be known of it (its dates, why, when), its text
// redacted; and docs/compliance.md's in-policy query finds no content of a
// reported post.
func TestREADMEDeletedBookmarksQuery(t *testing.T) {
	if os.Getenv("CQX_DUCKDB_DIR") == "" {
		t.Skip("DuckDB for Node.js not installed (CQX_DUCKDB_DIR unset; .ci/run sets it)")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var query string
	for _, m := range regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		if strings.Contains(m[1], "x_post_compliance") {
			query = m[1]
		}
	}
	if query == "" {
		t.Fatal("README.md has no query of x_post_compliance")
	}
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 50}, {id: "1002", bookmarks: 5}}
	text := specYAML(sim.URL(), users, seed(sim, users), `["*"]`) +
		fmt.Sprintf("    compliance:\n      bearer_token: %q\n      every: 1h\n", sim.IssueAppOnlyToken())
	src, err := cqspec.Parse([]byte(text), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	deleted := sim.Bookmarks("1001")[20]
	for run := range 2 {
		if run == 1 {
			_ = sim.DeletePost(deleted)
			_ = sim.SetPostCompliance(sim.Bookmarks("1002")[1], "protected")
		}
		clk.Advance(2 * time.Hour)
		if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk}); err != nil {
			t.Fatal(err)
		}
	}
	rows := duckdb(t, strings.ReplaceAll(query, "'out/", "'"+dir+"/"))
	if len(rows) != 1 || rows[0]["post_id"] != deleted || rows[0]["user_id"] != "1001" || rows[0]["created_at"] == nil || rows[0]["first_seen_at"] == nil ||
		rows[0]["reason"] != "deleted" || rows[0]["redacted_at"] == nil || rows[0]["archive_action"] != "redacted" {
		t.Fatalf("rows %v, want post %s of user 1001", rows, deleted)
	}
	if text := duckdb(t, "SELECT text FROM '"+dir+"/x_bookmarks/*.parquet' WHERE post_id = '"+deleted+"'"); len(text) != 1 || text[0]["text"] != nil {
		t.Errorf("the deleted post's text %v, want it redacted", text)
	}
	if found := duckdb(t, inPolicyQuery(t, dir)); len(found) != 0 {
		t.Errorf("the in-policy query finds %v", found)
	}
}

// inPolicyQuery is docs/compliance.md's query that proves the archive in
// policy, on the exporter's files in dir.
func inPolicyQuery(t *testing.T, dir string) string {
	t.Helper()
	doc, err := os.ReadFile("../docs/compliance.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		if strings.Contains(m[1], "WITH reported AS") {
			return regexp.MustCompile(`\b(FROM|JOIN) (x_[a-z_]+)`).ReplaceAllString(m[1], "$1 '"+dir+"/$2/*.parquet'")
		}
	}
	t.Fatal("docs/compliance.md has no in-policy query")
	return ""
}
