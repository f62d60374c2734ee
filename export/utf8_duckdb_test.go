package export_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// invalidUTF8 puts bytes that are not UTF-8, and an escaped lone
// surrogate, into the strings of every bookmarks and folders page the
// simulator sends: a post's text, entities and note, a folder's name.
type invalidUTF8 struct{ base http.RoundTripper }

func (t invalidUTF8) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	if err != nil || !strings.Contains(req.URL.Path, "/bookmarks") || resp.StatusCode != 200 {
		return resp, err
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	for _, field := range []string{`"text":"`, `"name":"`, `"tag":"`, `"username":"`, `"url":"`} {
		body = bytes.ReplaceAll(body, []byte(field), []byte(field+"\xff\xfe\xc3 "+`\ud800 `))
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Del("Content-Length")
	return resp, nil
}

// Invalid UTF-8 in a post was written raw into the post JSON column (text
// was cleaned), and DuckDB then refused every query that read it ("Invalid
// string encoding found in Parquet file"); a lone surrogate, every query
// that read it as JSON. Every string column holds valid UTF-8 and valid
// JSON Unicode, U+FFFD where the server sent neither: DuckDB reads every
// column of every table, and the post's JSON.
func TestDuckDBReadsEveryTableWhenTheAPISendsInvalidUTF8(t *testing.T) {
	if os.Getenv("CQX_DUCKDB_DIR") == "" {
		t.Skip("DuckDB for Node.js not installed (CQX_DUCKDB_DIR unset; .ci/run sets it)")
	}
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 120, folders: 2}}
	tokens := seed(sim, users)
	// Every kind of content on, so that every table has files to read.
	everyKind := strings.Replace(specYAML(sim.URL(), users, tokens, `["*"]`), "    accounts:\n",
		"    content: {authors: true, media: true, referenced_posts: true, long_text: true, articles: true}\n    accounts:\n", 1)
	src, err := cqspec.Parse([]byte(everyKind), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	res, err := export.Run(context.Background(), export.Options{Spec: src, Out: dir, Clock: clk, Transport: invalidUTF8{http.DefaultTransport}})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Summary(); !s.OK {
		t.Fatalf("the export failed: %+v", s.Accounts)
	}
	for table := range duckDBTypes {
		files := "'" + filepath.Join(dir, table, "*.parquet") + "'"
		var cols []string
		for _, c := range duckDBTypes[table] {
			if c[1] == "VARCHAR" {
				cols = append(cols, "max(length("+c[0]+")) AS "+c[0])
			}
		}
		duckdb(t, "SELECT count(*) AS n, "+strings.Join(cols, ", ")+" FROM "+files)
	}
	files := "'" + filepath.Join(dir, "x_bookmarks", "*.parquet") + "'"
	got := duckdb(t, `SELECT count(*) AS n, bool_and(contains(text, '`+"\uFFFD\uFFFD\uFFFD "+`')) AS text_replaced,
		bool_and(post->>'$.text' = text) AS post_says_text, bool_and(contains(entities::VARCHAR, '`+"\uFFFD"+`')) AS entities_replaced
		FROM `+files+` WHERE entities IS NOT NULL`)[0]
	if asInt(t, got["n"]) == 0 {
		t.Fatal("no post with entities")
	}
	for _, k := range []string{"text_replaced", "post_says_text", "entities_replaced"} {
		if got[k] != true {
			t.Errorf("%s = %v", k, got[k])
		}
	}
	if names := duckdb(t, "SELECT count(*) AS n FROM '"+filepath.Join(dir, "x_bookmark_folders", "*.parquet")+"' WHERE contains(name, '\uFFFD')"); asInt(t, names[0]["n"]) != 2 {
		t.Errorf("folder names: %v", names)
	}
}
