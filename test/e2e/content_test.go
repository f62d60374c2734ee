package e2e

import (
	"context"
	"encoding/json"
	"io"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/message"
	sdkplugin "github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// contentSync is one gRPC sync of the content examples with the given
// content section: the rows of each table and the query of the first
// bookmarks request.
type contentSync struct {
	ex    xsim.ContentExamples
	sim   *xsim.Server
	rows  map[string][]map[string]string
	query url.Values
}

func syncContent(t *testing.T, content map[string]any) contentSync {
	t.Helper()
	return syncExamples(t, xsim.Options{}, map[string]any{"content": content})
}

// syncExamples is one gRPC sync of the content examples, served as opts say,
// with the given settings of the plugin spec, besides base_url and accounts.
func syncExamples(t *testing.T, opts xsim.Options, settings map[string]any) contentSync {
	t.Helper()
	dir, err := os.MkdirTemp("", "cqx") // unix socket paths must be short
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	clk, sim := startSim(t, opts)
	ex := sim.SeedContentExamples(user)
	var mu sync.Mutex
	var query url.Values
	sim.OnRequest(func(ri xsim.RequestInfo) {
		mu.Lock()
		defer mu.Unlock()
		if ri.Operation == xsim.OpListBookmarks && query == nil {
			query = ri.Query
		}
	})
	clk.Advance(time.Hour)
	_, backendConn := startStateBackend(t, dir)
	plugSpec := map[string]any{
		"base_url": sim.URL(),
		"accounts": []map[string]any{{"user_id": user, "access_token": sim.IssueToken(user)}},
	}
	maps.Copy(plugSpec, settings)
	specJSON, _ := json.Marshal(plugSpec)
	c, stop := servePlugin(t, dir, clk)
	rows := grpcSync(t, c, specJSON, backendConn)
	stop()
	return contentSync{ex: ex, sim: sim, rows: rows, query: query}
}

// byPost indexes a table's rows by post_id (and a second key column).
func byPost(rows []map[string]string, second string) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, r := range rows {
		k := r["post_id"]
		if second != "" {
			k += "/" + r[second]
		}
		out[k] = r
	}
	return out
}

var allKinds = map[string]any{"authors": true, "media": true, "referenced_posts": true, "long_text": true, "articles": true}

// Every content kind through the plugin over gRPC, as the CloudQuery CLI
// runs it: authors with their profiles, photos and a video with variants,
// the long text, the article, the quoted post with its own author and
// photo, and the deleted and protected referenced posts recorded with X's
// partial errors. x_api_usage bills the expanded users and posts as the
// simulator does.
func TestGRPCSyncArchivesEveryContentKind(t *testing.T) {
	s := syncContent(t, allKinds)
	ex := s.ex
	bookmarks := byPost(s.rows["x_bookmarks"], "")
	if len(bookmarks) != 4 {
		t.Fatalf("x_bookmarks %v", s.rows["x_bookmarks"])
	}
	long := bookmarks[ex.LongPost]
	if long["full_text"] != ex.LongText || !strings.HasSuffix(long["text"], "…") || long["note_tweet"] == "" {
		t.Errorf("long post: full_text %q, text %q", long["full_text"], long["text"])
	}
	if a := bookmarks[ex.ArticlePost]; a["article_title"] != ex.ArticleTitle || a["article_text"] != ex.ArticleText || a["full_text"] != a["text"] {
		t.Errorf("article post %v", a)
	}

	authors := byPost(s.rows["x_bookmark_authors"], "")
	if len(authors) != 4 || authors[ex.LongPost]["username"] != "ada" || authors[ex.ArticlePost]["username"] != "bo" ||
		authors[ex.LongPost]["author_id"] != ex.Authors[0] || authors[ex.LongPost]["seen_at"] == "" || authors[ex.LongPost]["created_at"] == "" ||
		!strings.Contains(authors[ex.LongPost]["public_metrics"], "followers_count") || authors[ex.LongPost]["error"] != "" {
		t.Errorf("x_bookmark_authors %v", s.rows["x_bookmark_authors"])
	}

	media := byPost(s.rows["x_bookmark_media"], "media_key")
	photo, video := media[ex.LongPost+"/3_4101"], media[ex.LongPost+"/7_4102"]
	if len(media) != 4 || photo["type"] != "photo" || photo["download_url"] != photo["url"] || photo["position"] != "0" || photo["role"] != "attachment" ||
		video["type"] != "video" || !strings.HasSuffix(video["download_url"], ".mp4") || !strings.Contains(video["variants"], "bit_rate") ||
		video["duration_ms"] == "" || video["preview_image_url"] == "" || video["width"] == "" {
		t.Errorf("x_bookmark_media %v", s.rows["x_bookmark_media"])
	}
	if c, b := media[ex.ArticlePost+"/3_4103"], media[ex.ArticlePost+"/3_4104"]; c["role"] != "article_cover" || b["role"] != "article_media" || c["url"] == "" {
		t.Errorf("article media %v %v", c, b)
	}

	refs := byPost(s.rows["x_bookmark_referenced_posts"], "referenced_post_id")
	quoted := refs[ex.LongPost+"/"+ex.Quoted]
	if len(refs) != 3 || quoted["type"] != "quoted" || quoted["text"] == "" || quoted["author_username"] != "bo" ||
		!strings.Contains(quoted["media"], "3_4001") || quoted["error"] != "" {
		t.Errorf("quoted post %v", quoted)
	}
	if d := refs[ex.ReplyToDeleted+"/"+ex.Deleted]; d["type"] != "replied_to" || !strings.HasPrefix(d["error"], "Not Found Error") || d["text"] != "" {
		t.Errorf("deleted referenced post %v", d)
	}
	if p := refs[ex.QuoteOfProtected+"/"+ex.Protected]; !strings.HasPrefix(p["error"], "Authorization Error") {
		t.Errorf("protected referenced post %v", p)
	}

	// Billed: 4 bookmarks and the quoted post (the other two came back as
	// errors), the 2 authors once each; media free.
	var usage map[string]string
	for _, r := range s.rows["x_api_usage"] {
		if r["operation"] == "list_bookmarks" {
			usage = r
		}
	}
	su := s.sim.Usage(user)[xsim.OpListBookmarks]
	usd, _ := strconv.ParseFloat(usage["estimated_usd"], 64)
	if usage["posts_returned"] != "5" || usage["posts_billed"] != "5" || usage["users_billed"] != "2" || usage["media_returned"] != "5" ||
		math.Abs(usd-(5*0.005+2*0.01)) > 1e-9 || su.PostsBilled != 5 || su.UsersBilled != 2 || math.Abs(su.USD-usd) > 1e-9 {
		t.Errorf("usage %v; simulator %+v", usage, su)
	}
}

// A spec that asks for one more post field archives every column the
// default request fills: fields.tweet_fields adds to it.
func TestASpecAskingForOneMoreFieldArchivesEveryColumn(t *testing.T) {
	s := syncExamples(t, xsim.Options{}, map[string]any{"fields": map[string]any{"tweet_fields": []string{"context_annotations"}}})
	asked := strings.Split(s.query.Get("tweet.fields"), ",")
	for _, name := range []string{"context_annotations", "created_at", "author_id", "lang", "public_metrics", "entities", "note_tweet"} {
		if !slices.Contains(asked, name) {
			t.Errorf("tweet.fields=%s lacks %s", s.query.Get("tweet.fields"), name)
		}
	}
	if len(s.rows["x_bookmarks"]) != 4 {
		t.Fatalf("x_bookmarks %v", s.rows["x_bookmarks"])
	}
	for _, r := range s.rows["x_bookmarks"] {
		for _, column := range []string{"created_at", "author_id", "conversation_id", "public_metrics", "edit_history_tweet_ids"} {
			if r[column] == "" {
				t.Errorf("post %s archived without %s", r["post_id"], column)
			}
		}
	}
}

// A server that answers in X's posts naming (OpenAPI 2.167) refuses the
// tweets naming: api_naming auto switches once, bills each post once, and
// archives the rows a server of the tweets naming gives, but for what the
// posts naming has no post field for (in_reply_to_user_id) or no nested
// expansion (the referenced posts' authors and media); api_naming posts asks
// so from the start.
func TestEitherNamingArchivesTheSameRows(t *testing.T) {
	tweets := syncExamples(t, xsim.Options{}, map[string]any{"content": allKinds})
	for _, setting := range []string{"auto", "posts"} {
		posts := syncExamples(t, xsim.Options{Naming: "posts"}, map[string]any{"content": allKinds, "api_naming": setting})
		u := posts.sim.Usage(user)[xsim.OpListBookmarks]
		if want := map[string]int{"auto": 2, "posts": 1}[setting]; u.Requests != want || u.PostsReturned != 5 {
			t.Errorf("%s: %d requests, %d posts billed; want %d requests, 5 posts", setting, u.Requests, u.PostsReturned, want)
		}
		// post, author and user are the objects exactly as X returned them.
		for table, unlike := range map[string][]string{
			"x_bookmarks":                 {"post", "author", "in_reply_to_user_id"},
			"x_bookmark_authors":          {"user"},
			"x_bookmark_media":            nil,
			"x_bookmark_referenced_posts": {"post", "author", "author_username", "media", "error"}, // X's errors name its expansion
		} {
			want, got := tweets.rows[table], posts.rows[table]
			if len(got) != len(want) || len(got) == 0 {
				t.Fatalf("%s: %s has %d rows, the tweets naming %d", setting, table, len(got), len(want))
			}
			key := func(r map[string]string) string { return r["post_id"] + "/" + r["media_key"] + r["referenced_post_id"] }
			byKey := map[string]map[string]string{}
			for _, r := range want {
				byKey[key(r)] = r
			}
			for _, r := range got {
				w := byKey[key(r)]
				for column, v := range w {
					if slices.Contains(unlike, column) || column == "_cq_id" || column == "_cq_parent_id" || column == "seen_at" || column == "first_seen_at" {
						continue
					}
					// Each simulator's media host has a port of its own.
					if strings.ReplaceAll(r[column], posts.sim.MediaURL(), "") != strings.ReplaceAll(v, tweets.sim.MediaURL(), "") {
						t.Errorf("%s: %s %s: %s is %.60q, the tweets naming's %.60q", setting, table, key(r), column, r[column], v)
					}
				}
			}
		}
	}
}

// Each kind turned off leaves its part out of the request and its rows out
// of the archive; the others are unchanged.
func TestGRPCSyncEachContentKindOffLeavesItsPartOut(t *testing.T) {
	for _, tc := range []struct {
		kind     string
		param    string // the request parameter value it adds
		table    string // the table that stays empty, or x_bookmarks.<column> that stays null
		otherRow string // a table the other kinds still fill
	}{
		{"authors", "expansions=author_id", "x_bookmark_authors", "x_bookmark_media"},
		{"media", "expansions=attachments.media_keys", "x_bookmark_media", "x_bookmark_authors"},
		{"referenced_posts", "expansions=referenced_tweets.id", "x_bookmark_referenced_posts", "x_bookmark_media"},
		{"long_text", "tweet.fields=note_tweet", "x_bookmarks.note_tweet", "x_bookmark_media"},
		{"articles", "tweet.fields=article", "x_bookmarks.article_title", "x_bookmark_media"},
	} {
		content := map[string]any{}
		for k, v := range allKinds {
			content[k] = v
		}
		content[tc.kind] = false
		s := syncContent(t, content)
		param, value, _ := strings.Cut(tc.param, "=")
		if got := strings.Split(s.query.Get(param), ","); slices.Contains(got, value) {
			t.Errorf("%s off: the request still asks for %s (%s=%s)", tc.kind, value, param, s.query.Get(param))
		}
		if table, column, ok := strings.Cut(tc.table, "."); ok {
			for _, r := range s.rows[table] {
				if r[column] != "" {
					t.Errorf("%s off: %s holds %.40q", tc.kind, tc.table, r[column])
				}
			}
		} else if n := len(s.rows[tc.table]); n != 0 {
			t.Errorf("%s off: %s has %d rows", tc.kind, tc.table, n)
		}
		if len(s.rows[tc.otherRow]) == 0 || len(s.rows["x_bookmarks"]) != 4 {
			t.Errorf("%s off: %s has no rows, x_bookmarks %d", tc.kind, tc.otherRow, len(s.rows["x_bookmarks"]))
		}
	}
}

// An expansion the API refuses fails the walk with an error naming the
// refused value and the spec's content kinds that ask for it: no post is
// archived without what the spec asks for, nothing is billed or stored.
// Once the kind is off, the posts are read.
func TestRefusedContentExpansionFailsTheWalkNamingTheKind(t *testing.T) {
	h := newHarness(t, 30)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.Contains(r.URL.Query().Get("expansions"), "article.cover_media") {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_, _ = io.WriteString(w, `{"errors":[{"parameters":{"expansions":["article.cover_media"]},"message":"The `+"`expansions`"+` query parameter value [article.cover_media] is not one of [author_id,attachments.media_keys]"}],"title":"Invalid Request","detail":"One or more parameters to your request was invalid.","type":"https://api.x.com/2/problems/invalid-request"}`)
			return
		}
		h.sim.Handler().ServeHTTP(w, r)
	}))
	defer refusing.Close()
	h.spec["base_url"] = refusing.URL
	r := h.sync()
	failure := r.usage["list_bookmarks"]["failure"]
	for _, want := range []string{"expansions=[article.cover_media]", "asked for by content.media or content.articles;", "state not advanced"} {
		if !strings.Contains(failure, want) {
			t.Errorf("failure %q does not say %q", failure, want)
		}
	}
	if strings.Contains(failure, "fields.expansions") {
		t.Errorf("failure %q names fields.expansions, which the spec does not have", failure)
	}
	if len(r.newRows) != 0 || r.billed != 0 || r.outcome() != "failed" {
		t.Fatalf("sync with a refused expansion: %v", r)
	}
	h.spec["content"] = map[string]any{"articles": false}
	if r := h.sync(); len(r.newRows) != 30 || r.outcome() != "reached_end" {
		t.Fatalf("with articles off: %v", r)
	}
}

// X leaves expanded objects out of a page with no error saying why (a
// suspended author, media still processing, a post deleted between the list
// and its hydration), and does so at every sync. The walk goes on: each post
// is archived with what X returned, the missing part recorded as missing in
// its row with the setting that asked for it, and counted in x_api_usage;
// the next sync finds the next bookmark.
func TestAnIncludeXLeavesOutDoesNotStallTheAccount(t *testing.T) {
	h := newHarness(t, 0)
	ex := h.sim.SeedContentExamples(user)
	h.spec["content"] = allKinds
	leftOut := map[string]bool{ex.Authors[0]: true, "3_4101": true, ex.Quoted: true}
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := httptest.NewRecorder()
		h.sim.Handler().ServeHTTP(rec, r)
		body := rec.Body.Bytes()
		var page map[string]any
		if strings.HasSuffix(r.URL.Path, "/bookmarks") && json.Unmarshal(body, &page) == nil {
			if includes, ok := page["includes"].(map[string]any); ok {
				for section, key := range map[string]string{"users": "id", "media": "media_key", "tweets": "id"} {
					objs, _ := includes[section].([]any)
					includes[section] = slices.DeleteFunc(objs, func(o any) bool { return leftOut[o.(map[string]any)[key].(string)] })
				}
			}
			body, _ = json.Marshal(page)
		}
		maps.Copy(w.Header(), rec.Header())
		w.Header().Set("Content-Length", strconv.Itoa(len(body)))
		w.WriteHeader(rec.Code)
		_, _ = w.Write(body)
	}))
	defer proxy.Close()
	h.spec["base_url"] = proxy.URL
	tables := []string{"x_bookmarks", "x_bookmark_authors", "x_bookmark_media", "x_bookmark_referenced_posts", "x_api_usage"}

	r := h.sync(tables...)
	if r.outcome() != "reached_end" || len(r.newRows) != 4 || r.usage["list_bookmarks"]["includes_missing"] != "4" || r.usage["list_bookmarks"]["failure"] != "" {
		t.Fatalf("first sync: %v", r)
	}
	missing := func(table, post, second, value string) string {
		for _, row := range r.tables[table] {
			if row["post_id"] == post && (second == "" || row[second] == value) {
				return row["error"]
			}
		}
		return "(no row)"
	}
	for _, tc := range []struct{ got, want string }{
		{missing("x_bookmark_authors", ex.LongPost, "", ""), "Missing: X returned no author " + ex.Authors[0] + ", which content.authors asks for (expansions=author_id), and no error saying why"},
		{missing("x_bookmark_authors", ex.QuoteOfProtected, "", ""), "Missing: X returned no author " + ex.Authors[0]},
		{missing("x_bookmark_media", ex.LongPost, "media_key", "3_4101"), "Missing: X returned no media 3_4101, which content.media asks for (expansions=attachments.media_keys)"},
		{missing("x_bookmark_media", ex.LongPost, "media_key", "7_4102"), ""},
		{missing("x_bookmark_referenced_posts", ex.LongPost, "referenced_post_id", ex.Quoted), "Missing: X returned no referenced post " + ex.Quoted + ", which content.referenced_posts asks for"},
		{missing("x_bookmark_authors", ex.ArticlePost, "", ""), ""},
	} {
		if tc.want == "" && tc.got != "" || !strings.HasPrefix(tc.got, tc.want) {
			t.Errorf("error %q, want %q", tc.got, tc.want)
		}
	}

	h.sim.SeedBookmarks(user, 1)
	if r := h.sync(tables...); r.outcome() != "met_held" || len(r.newRows) != 1 {
		t.Fatalf("next sync: %v", r)
	}
}

// A bookmark read again (its walk failed after emitting it) is emitted
// again with its content rows under the same keys: a destination that
// upserts on the primary key holds each once.
func TestContentRowsOfABookmarkReadAgainKeepTheirKeys(t *testing.T) {
	h := newHarness(t, 0)
	h.sim.SeedContentExamples(user)
	h.spec["content"] = allKinds
	keys := func() map[string]int {
		p := plugin.New(plugin.WithClock(h.clk), plugin.WithState(h.store))
		specJSON, _ := json.Marshal(h.spec)
		if err := p.Init(context.Background(), specJSON, sdkplugin.NewClientOptions{}); err != nil {
			t.Fatal(err)
		}
		msgs, err := p.SyncAll(context.Background(), sdkplugin.SyncOptions{Tables: []string{"x_bookmarks"}})
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]int{}
		for _, m := range msgs {
			if ins, ok := m.(*message.SyncInsert); ok {
				table := ins.GetTable()
				for _, r := range rows(ins.Record) {
					k := table.Name
					for _, c := range table.PrimaryKeys() {
						k += "/" + r[c]
					}
					out[k]++
				}
			}
		}
		return out
	}
	first := keys()
	h.store = memstate.New() // the state is lost: every bookmark is read again
	second := keys()
	if len(first) != 4+4+4+3 || !maps.Equal(first, second) {
		t.Fatalf("first sync's keys %v, second's %v", first, second)
	}
}
