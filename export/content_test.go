package export_test

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/test/synctest"
)

const allContentYAML = "    content: {authors: true, media: true, referenced_posts: true, long_text: true, articles: true}\n"

// tableRows reads every file of a table into rows of column → value.
func tableRows(t *testing.T, dir, table string) []map[string]string {
	t.Helper()
	var out []map[string]string
	for _, path := range parquetFiles(t, dir, table) {
		out = append(out, tableRowsOf(t, path)...)
	}
	return out
}

// tableRowsOf reads one file into rows of column → value.
func tableRowsOf(t *testing.T, path string) []map[string]string {
	t.Helper()
	var out []map[string]string
	{
		sc, recs, _ := synctest.ReadParquet(t, path)
		for _, r := range recs {
			for i := 0; i < int(r.NumRows()); i++ {
				row := map[string]string{}
				for c, f := range sc.Fields() {
					col := r.Column(c)
					if col.IsNull(i) {
						continue
					}
					if s, ok := col.(*array.String); ok {
						row[f.Name] = s.Value(i)
					} else {
						row[f.Name] = col.ValueStr(i)
					}
				}
				out = append(out, row)
			}
			r.Release()
		}
	}
	return out
}

// The exporter writes every content kind to its table: the authors, media
// and referenced posts of the content examples, and x_bookmarks' long text
// and article columns.
func TestExportWritesEveryContentKind(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	ex := sim.SeedContentExamples("1001")
	users := []demoUser{{id: "1001"}}
	src, err := cqspec.Parse([]byte(specYAML(sim.URL(), users, seed(sim, users), `["*"]`)+allContentYAML), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	clk.Advance(time.Hour)
	if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk}); err != nil {
		t.Fatal(err)
	}
	get := func(table, post, key, value string) map[string]string {
		for _, r := range tableRows(t, dir, table) {
			if r["post_id"] == post && (key == "" || r[key] == value) {
				return r
			}
		}
		t.Fatalf("%s has no row for post %s %s=%s", table, post, key, value)
		return nil
	}
	if r := get("x_bookmarks", ex.LongPost, "", ""); r["full_text"] != ex.LongText {
		t.Errorf("long text %q", r["full_text"])
	}
	if r := get("x_bookmarks", ex.ArticlePost, "", ""); r["article_title"] != ex.ArticleTitle || r["article_text"] != ex.ArticleText {
		t.Errorf("article %v", r)
	}
	if r := get("x_bookmark_authors", ex.ArticlePost, "", ""); r["username"] != "bo" || r["author_id"] != ex.Authors[1] {
		t.Errorf("author %v", r)
	}
	if r := get("x_bookmark_media", ex.LongPost, "media_key", "7_4102"); r["type"] != "video" || !strings.HasSuffix(r["download_url"], ".mp4") {
		t.Errorf("video %v", r)
	}
	if r := get("x_bookmark_referenced_posts", ex.LongPost, "referenced_post_id", ex.Quoted); r["author_username"] != "bo" || r["type"] != "quoted" {
		t.Errorf("quoted %v", r)
	}
	if r := get("x_bookmark_referenced_posts", ex.ReplyToDeleted, "referenced_post_id", ex.Deleted); !strings.HasPrefix(r["error"], "Not Found Error") {
		t.Errorf("deleted %v", r)
	}
}

// A reply that quotes the post it answers is written with a row of each
// reference type, each with the referenced post's author and media, and no
// two rows of x_bookmark_referenced_posts share a primary key.
func TestExportWritesARowPerReferenceTypeUnderDistinctKeys(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	ex := sim.SeedContentExamples("1001")
	const reply = "3201"
	sim.PutPost(xsim.Post{ID: reply, Text: "@bo this, again", AuthorID: ex.Authors[0], InReplyToUserID: ex.Authors[1], ConversationID: ex.Quoted,
		ReferencedTweets: []xsim.ReferencedTweet{{Type: "replied_to", ID: ex.Quoted}, {Type: "quoted", ID: ex.Quoted}}})
	if err := sim.Bookmark("1001", reply); err != nil {
		t.Fatal(err)
	}
	users := []demoUser{{id: "1001"}}
	src, err := cqspec.Parse([]byte(specYAML(sim.URL(), users, seed(sim, users), `["*"]`)+allContentYAML), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	clk.Advance(time.Hour)
	if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk}); err != nil {
		t.Fatal(err)
	}
	keys := map[string]int{}
	types := map[string]bool{}
	for _, r := range tableRows(t, dir, resources.ReferencedPostsTable) {
		var key []string
		for _, pk := range resources.ReferencedPosts().PrimaryKeys() {
			key = append(key, r[pk])
		}
		keys[strings.Join(key, "/")]++
		if r["post_id"] != reply {
			continue
		}
		types[r["type"]] = true
		if r["referenced_post_id"] != ex.Quoted || r["author_username"] != "bo" || !strings.Contains(r["media"], "3_4001") {
			t.Errorf("reference of the reply %v", r)
		}
	}
	if len(types) != 2 || !types["replied_to"] || !types["quoted"] {
		t.Errorf("the reply's references have types %v, want replied_to and quoted", types)
	}
	for k, n := range keys {
		if n != 1 {
			t.Errorf("key %s written %d times", k, n)
		}
	}
}

// A walk that failed after its first page was written reads that page
// again at the next run: its bookmarks are dropped as already archived,
// and so are their authors, media and referenced posts. No content row is
// written twice, and every bookmark has its content.
func TestExportWritesTheContentOfABookmarkOnce(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 400}}
	text := specYAML(sim.URL(), users, seed(sim, users), `["x_bookmark*s", "x_bookmark_media"]`) + "    retry_budget: 0s\n" + allContentYAML
	src, err := cqspec.Parse([]byte(text), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	sim.OnRequest(func(ri xsim.RequestInfo) {
		if ri.Operation == xsim.OpListBookmarks && ri.Query.Get("pagination_token") != "" {
			sim.SetFaults(xsim.Faults{Seed: 1, ServerErrorRate: 1, Operations: []string{xsim.OpListBookmarks}})
		}
	})
	clk.Advance(time.Hour)
	res, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed()) != 1 || res.Summary().Totals.BookmarksWritten == 0 {
		t.Fatalf("run 1: want a failed walk after a written page: %+v", res.Summary())
	}
	sim.OnRequest(nil)
	sim.SetFaults(xsim.Faults{})
	clk.Advance(time.Hour)
	res, err = export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk})
	if err != nil || len(res.Failed()) != 0 || res.Summary().Totals.AlreadyArchived == 0 {
		t.Fatalf("run 2: %v %+v", err, res.Summary())
	}
	checkArchive(t, dir, sim, users)
	for table, key := range map[string]string{"x_bookmark_authors": "", "x_bookmark_media": "media_key", "x_bookmark_referenced_posts": "referenced_post_id"} {
		seen := map[string]int{}
		posts := map[string]bool{}
		for _, r := range tableRows(t, dir, table) {
			seen[r["post_id"]+"/"+r[key]]++
			posts[r["post_id"]] = true
		}
		for k, n := range seen {
			if n != 1 {
				t.Errorf("%s: %s written %d times", table, k, n)
			}
		}
		if table == "x_bookmark_authors" && len(seen) != 400 {
			t.Errorf("%d authors for 400 bookmarks", len(seen))
		}
		if len(posts) == 0 {
			t.Errorf("%s is empty", table)
		}
	}
}

// The README's query of bookmarks with their authors and media, run by
// DuckDB on an export of the content examples: one row per media item of
// each bookmark (and one for a bookmark without media), with its author.
func TestREADMEBookmarksAuthorsMediaQuery(t *testing.T) {
	if os.Getenv("CQX_DUCKDB_DIR") == "" {
		t.Skip("DuckDB for Node.js not installed (CQX_DUCKDB_DIR unset; .ci/run sets it)")
	}
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var query string
	for _, m := range regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(readme), -1) {
		if strings.Contains(m[1], "x_bookmark_authors") && strings.Contains(m[1], "x_bookmark_media") {
			query = m[1]
		}
	}
	if query == "" {
		t.Fatal("README.md has no query joining x_bookmarks, x_bookmark_authors and x_bookmark_media")
	}
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	ex := sim.SeedContentExamples("1001")
	users := []demoUser{{id: "1001"}}
	src, err := cqspec.Parse([]byte(specYAML(sim.URL(), users, seed(sim, users), `["*"]`)+"    content: {authors: true}\n"), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	clk.Advance(time.Hour)
	if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk}); err != nil {
		t.Fatal(err)
	}
	rows := duckdb(t, strings.ReplaceAll(query, "'out/", "'"+dir+"/"))
	// 2 media of the long post, 2 of the article, 1 row each for the two
	// posts without media.
	if len(rows) != 6 {
		t.Fatalf("rows %v", rows)
	}
	var video map[string]any
	for _, r := range rows {
		if r["type"] == "video" {
			video = r
		}
	}
	if video == nil || video["username"] != "ada" || !strings.HasSuffix(fmt.Sprint(video["download_url"]), ".mp4") || !strings.HasPrefix(fmt.Sprint(video["text"]), ex.LongText[:40]) {
		t.Errorf("the long post's video: %v", video)
	}
}

// docs/cost.md's query of a month's bill, run by DuckDB over usage files
// of two runs: one row per month and account, the sum of the runs.
func TestCostDocMonthlyBillQuery(t *testing.T) {
	if os.Getenv("CQX_DUCKDB_DIR") == "" {
		t.Skip("DuckDB for Node.js not installed (CQX_DUCKDB_DIR unset; .ci/run sets it)")
	}
	doc, err := os.ReadFile("../docs/cost.md")
	if err != nil {
		t.Fatal(err)
	}
	var query string
	for _, m := range regexp.MustCompile("(?s)```sql\n(.*?)```").FindAllStringSubmatch(string(doc), -1) {
		if strings.Contains(m[1], "x_api_usage") {
			query = m[1]
		}
	}
	if query == "" {
		t.Fatal("docs/cost.md has no query of x_api_usage")
	}
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 40}}
	src, err := cqspec.Parse([]byte(specYAML(sim.URL(), users, seed(sim, users), `["*"]`)+"    content: {authors: true}\n"), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for range 2 {
		clk.Advance(24 * time.Hour)
		sim.SeedBookmarks("1001", 3)
		if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk}); err != nil {
			t.Fatal(err)
		}
	}
	rows := duckdb(t, strings.ReplaceAll(query, "'out/", "'"+dir+"/"))
	u := sim.Usage("1001")[xsim.OpListBookmarks]
	if len(rows) != 1 || rows[0]["user_id"] != "1001" || asInt(t, rows[0]["posts"]) != u.PostsBilled || asInt(t, rows[0]["users"]) != u.UsersBilled {
		t.Fatalf("rows %v; the simulator billed %d posts and %d users", rows, u.PostsBilled, u.UsersBilled)
	}
}
