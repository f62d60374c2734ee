package xsim

import (
	"encoding/json"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

var rfc3339ms = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func keys(m map[string]any) []string {
	var k []string
	for key := range m {
		k = append(k, key)
	}
	slices.Sort(k)
	return k
}

func TestDefaultPostHasIDTextAndEditHistoryOnly(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 20)
	p, _ := listPage(t, s, "1", tok, q("max_results", "20"))
	for _, d := range p.Data {
		if got := strings.Join(keys(d), ","); got != "edit_history_tweet_ids,id,text" {
			t.Fatalf("default fields: %s", got)
		}
		eh := d["edit_history_tweet_ids"].([]any)
		if len(eh) != 1 || eh[0] != d["id"] || d["text"] == "" {
			t.Fatalf("%v", d)
		}
	}
}

func TestTweetFieldsAddRequestedFields(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 50)
	p, _ := listPage(t, s, "1", tok, q("max_results", "50", "tweet.fields", "created_at,author_id,conversation_id,lang,public_metrics,possibly_sensitive"))
	for _, d := range p.Data {
		for _, f := range []string{"created_at", "author_id", "conversation_id", "lang", "public_metrics", "possibly_sensitive"} {
			if _, ok := d[f]; !ok {
				t.Fatalf("post lacks %s: %v", f, d)
			}
		}
		if !rfc3339ms.MatchString(d["created_at"].(string)) {
			t.Fatalf("created_at %q", d["created_at"])
		}
		pm := d["public_metrics"].(map[string]any)
		for _, f := range []string{"retweet_count", "reply_count", "like_count", "quote_count", "bookmark_count", "impression_count"} {
			if _, ok := pm[f].(float64); !ok {
				t.Fatalf("public_metrics lacks %s", f)
			}
		}
		if _, ok := d["entities"]; ok {
			t.Fatal("entities not asked for")
		}
	}
	// post.fields is not a parameter of this naming.
	if r := get(t, s, "/2/users/1/bookmarks?post.fields=lang", tok); r.status != 400 || !strings.Contains(string(r.body), "The query parameter [post.fields] is not one of") {
		t.Fatalf("post.fields in the tweets naming: %d %s", r.status, r.body)
	}
}

// In the posts naming (X's OpenAPI description 2.167) the bookmarks
// operation takes post.fields, not tweet.fields, and answers in its names:
// edit_history_post_ids, note_post, referenced_posts (with its expansion),
// repost_count, includes.posts; author_id comes with its expansion only.
func TestThePostsNamingIsServedInItsNames(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock(), Naming: "posts"})
	ex := s.SeedContentExamples("1")
	if r := get(t, s, "/2/users/1/bookmarks?tweet.fields=lang", tok); r.status != 400 || !strings.Contains(string(r.body), "The query parameter [tweet.fields] is not one of") {
		t.Fatalf("tweet.fields in the posts naming: %d %s", r.status, r.body)
	}
	p, r := listPage(t, s, "1", tok, q("post.fields", "created_at,note_post,public_metrics,article,article_title", "expansions", "referenced_posts"))
	posts := map[string]map[string]any{}
	for _, d := range p.Data {
		posts[d["id"].(string)] = d
	}
	long := posts[ex.LongPost]
	if long == nil || long["edit_history_post_ids"] == nil || long["note_post"] == nil || long["referenced_posts"] == nil ||
		long["author_id"] != nil || long["public_metrics"].(map[string]any)["repost_count"] == nil || posts[ex.ArticlePost]["article_title"] == nil {
		t.Fatalf("posts %v", posts)
	}
	for _, tweets := range []string{`"edit_history_tweet_ids"`, `"note_tweet"`, `"referenced_tweets"`, `"retweet_count"`, `"tweets":[`} {
		if strings.Contains(string(r.body), tweets) {
			t.Errorf("the posts naming answers with %s: %s", tweets, r.body)
		}
	}
	if !strings.Contains(string(r.body), `"posts":[`) || !strings.Contains(string(r.body), `"parameter":"referenced_posts"`) {
		t.Errorf("no includes.posts, or a partial error naming another expansion: %s", r.body)
	}
	p, _ = listPage(t, s, "1", tok, q("expansions", "author_id"))
	if p.Data[0]["author_id"] == nil {
		t.Errorf("expansions=author_id without author_id: %v", p.Data[0])
	}
}

func TestOptionalFieldsAppearWhereThePostHasThem(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 400)
	all := "attachments,entities,referenced_tweets,in_reply_to_user_id,note_tweet,conversation_id"
	seen := map[string]int{}
	tokn := ""
	for {
		v := q("max_results", "100", "tweet.fields", all)
		if tokn != "" {
			v.Set("pagination_token", tokn)
		}
		p, _ := listPage(t, s, "1", tok, v)
		for _, d := range p.Data {
			for k := range d {
				seen[k]++
			}
			if rt, ok := d["referenced_tweets"].([]any); ok {
				r0 := rt[0].(map[string]any)
				if r0["type"] == "replied_to" {
					if d["conversation_id"] != r0["id"] || d["in_reply_to_user_id"] == nil {
						t.Fatalf("reply without conversation/in_reply_to: %v", d)
					}
					if !strings.HasPrefix(d["text"].(string), "@") {
						t.Fatalf("reply text does not start with a mention: %v", d["text"])
					}
				}
			} else if d["conversation_id"] != d["id"] {
				t.Fatalf("non-reply conversation_id %v != id %v", d["conversation_id"], d["id"])
			}
			if nt, ok := d["note_tweet"].(map[string]any); ok {
				if len(nt["text"].(string)) <= len(d["text"].(string)) {
					t.Fatal("note_tweet text is not the longer text")
				}
			}
		}
		if tokn = p.Meta.NextToken; tokn == "" {
			break
		}
	}
	for _, f := range []string{"attachments", "entities", "referenced_tweets", "in_reply_to_user_id", "note_tweet"} {
		if seen[f] == 0 || seen[f] == 400 {
			t.Fatalf("%s on %d of 400 posts: should be on some, not all", f, seen[f])
		}
	}
}

func TestExpansionAuthorIDAddsIncludesUsers(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.AddUser("777", "bob")
	s.PutPost(Post{ID: "1500000000000000000", Text: "mine", AuthorID: "777"})
	_ = s.Bookmark("1", "1500000000000000000")
	s.SeedBookmarks("1", 30)
	p, _ := listPage(t, s, "1", tok, q("max_results", "31", "tweet.fields", "author_id", "expansions", "author_id", "user.fields", "created_at,public_metrics,verified"))
	users := map[string]map[string]any{}
	for _, u := range p.Includes.Users {
		if users[u["id"].(string)] != nil {
			t.Fatalf("user %v included twice", u["id"])
		}
		users[u["id"].(string)] = u
		for _, f := range []string{"id", "name", "username", "created_at", "public_metrics", "verified"} {
			if _, ok := u[f]; !ok {
				t.Fatalf("user lacks %s: %v", f, u)
			}
		}
	}
	for _, d := range p.Data {
		if users[d["author_id"].(string)] == nil {
			t.Fatalf("author %v not in includes.users", d["author_id"])
		}
	}
	if users["777"]["username"] != "bob" {
		t.Fatalf("registered author: %v", users["777"])
	}
	// Without the expansion there are no includes.
	_, r := listPage(t, s, "1", tok, q("tweet.fields", "author_id"))
	if strings.Contains(string(r.body), "includes") {
		t.Fatal("includes without expansions")
	}
}

func TestExpansionMediaKeysAddsIncludesMedia(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 100)
	p, _ := listPage(t, s, "1", tok, q("max_results", "100", "tweet.fields", "attachments", "expansions", "attachments.media_keys", "media.fields", "url,width,height,preview_image_url,variants"))
	media := map[string]map[string]any{}
	for _, m := range p.Includes.Media {
		media[m["media_key"].(string)] = m
		if m["type"] == "photo" && m["url"] == nil || m["type"] == "video" && m["variants"] == nil {
			t.Fatalf("media fields missing: %v", m)
		}
	}
	n := 0
	for _, d := range p.Data {
		if a, ok := d["attachments"].(map[string]any); ok {
			for _, k := range a["media_keys"].([]any) {
				n++
				if media[k.(string)] == nil {
					t.Fatalf("media %v not included", k)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no post with media in 100")
	}
}

func TestExpansionReferencedTweetsAddsIncludesTweets(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 100)
	p, _ := listPage(t, s, "1", tok, q("max_results", "100", "tweet.fields", "referenced_tweets,author_id", "expansions", "referenced_tweets.id,referenced_tweets.id.author_id"))
	tw := map[string]bool{}
	us := map[string]bool{}
	for _, x := range p.Includes.Tweets {
		tw[x["id"].(string)] = true
	}
	for _, u := range p.Includes.Users {
		us[u["id"].(string)] = true
	}
	unavailable := map[string]bool{}
	for _, e := range p.Errors {
		unavailable[e["resource_id"].(string)] = true
	}
	n := 0
	for _, d := range p.Data {
		if rt, ok := d["referenced_tweets"].([]any); ok {
			n++
			id := rt[0].(map[string]any)["id"].(string)
			if !tw[id] && !unavailable[id] {
				t.Fatal("referenced tweet neither included nor a partial error")
			}
		}
	}
	for _, x := range p.Includes.Tweets {
		if !us[x["author_id"].(string)] {
			t.Fatal("referenced author not included")
		}
	}
	if n == 0 {
		t.Fatal("no references in 100 posts")
	}
}

func TestUnknownFieldIs400(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 3)
	for _, qs := range []string{
		"tweet.fields=created_at,bogus", "expansions=bogus", "user.fields=bogus",
		"media.fields=bogus", "poll.fields=bogus", "place.fields=bogus", "since_id=1",
	} {
		r := get(t, s, "/2/users/1/bookmarks?"+qs, tok)
		m := wantProblem(t, r, 400, "Invalid Request")
		param := strings.SplitN(qs, "=", 2)[0]
		if !strings.Contains(m["detail"].(string), param) {
			t.Fatalf("%s: detail %v", qs, m["detail"])
		}
	}
}

func TestPrivateMetricsGiveFieldAuthorizationErrors(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 10)
	p, _ := listPage(t, s, "1", tok, q("max_results", "3", "tweet.fields", "non_public_metrics,organic_metrics,lang"))
	if len(p.Data) != 3 || len(p.Errors) != 6 {
		t.Fatalf("data %d errors %d", len(p.Data), len(p.Errors))
	}
	for _, e := range p.Errors {
		if e["title"] != "Field Authorization Error" || e["resource_type"] != "tweet" {
			t.Fatalf("%v", e)
		}
	}
	if _, ok := p.Data[0]["non_public_metrics"]; ok {
		t.Fatal("private metrics returned")
	}
	if s.Usage("1")[OpListBookmarks].PostsReturned != 3 {
		t.Fatal("partial-error page must be billed")
	}
}

func TestGeneratedContentIsDeterministicFromTheID(t *testing.T) {
	a, ta := newSimUser(t, Options{Clock: vclock()})
	b, tb := newSimUser(t, Options{})
	ids := []string{"1234567890123456789", "20", "1700000000000000001"}
	for _, id := range ids {
		_ = a.Bookmark("1", id)
		_ = b.Bookmark("1", id)
	}
	v := q("tweet.fields", "created_at,author_id,conversation_id,lang,public_metrics,entities,referenced_tweets,attachments,in_reply_to_user_id,note_tweet,possibly_sensitive", "expansions", "author_id,attachments.media_keys", "user.fields", "description,created_at")
	pa, _ := listPage(t, a, "1", ta, v)
	pb, _ := listPage(t, b, "1", tb, v)
	ja, _ := json.Marshal(pa.Data)
	jb, _ := json.Marshal(pb.Data)
	ia, _ := json.Marshal(pa.Includes)
	ib, _ := json.Marshal(pb.Includes)
	if string(ja) != string(jb) || string(ia) != string(ib) {
		t.Fatalf("content differs:\n%s\n%s", ja, jb)
	}
	if a.PostContent(ids[0]).Text != pa.Data[2]["text"] {
		t.Fatal("PostContent disagrees with the wire")
	}
}

func TestCreatedAtComesFromTheSnowflake(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	id := s.NewPostID()
	_ = s.Bookmark("1", id)
	p, _ := listPage(t, s, "1", tok, q("tweet.fields", "created_at"))
	n, _ := strconv.ParseUint(id, 10, 64)
	want := time.UnixMilli(int64(n>>22) + 1288834974657).UTC().Format("2006-01-02T15:04:05.000Z")
	if p.Data[0]["created_at"] != want {
		t.Fatalf("created_at %v, want %s", p.Data[0]["created_at"], want)
	}
}

func TestPutPostOverridesGeneratedContent(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	created := time.Date(2019, 5, 6, 7, 8, 9, 123e6, time.UTC)
	s.PutPost(Post{
		ID: "42", Text: "東京 #golang @bob see https://example.com/x \"q\"\n\x01 \xff", AuthorID: "9",
		CreatedAt: created, Lang: "ja", PublicMetrics: PublicMetrics{LikeCount: 7},
		ReferencedTweets: []ReferencedTweet{{Type: "quoted", ID: "41"}}, MediaKeys: []string{"3_5"},
		NoteText: "long", EditHistoryTweetIDs: []string{"40", "42"},
	})
	_ = s.Bookmark("1", "42")
	p, _ := listPage(t, s, "1", tok, q("tweet.fields", "created_at,lang,public_metrics,entities,referenced_tweets,attachments,note_tweet,author_id,conversation_id"))
	d := p.Data[0]
	if d["text"] != "東京 #golang @bob see https://example.com/x \"q\"\n\x01 \uFFFD" {
		t.Fatalf("text %q", d["text"])
	}
	if d["created_at"] != "2019-05-06T07:08:09.123Z" || d["lang"] != "ja" || d["author_id"] != "9" || d["conversation_id"] != "42" {
		t.Fatalf("%v", d)
	}
	ents := d["entities"].(map[string]any)
	h := ents["hashtags"].([]any)[0].(map[string]any)
	if h["tag"] != "golang" || h["start"].(float64) != 3 || h["end"].(float64) != 10 {
		t.Fatalf("hashtag %v (offsets are code points)", h)
	}
	m := ents["mentions"].([]any)[0].(map[string]any)
	if m["username"] != "bob" || m["start"].(float64) != 11 || m["end"].(float64) != 15 {
		t.Fatalf("mention %v", m)
	}
	u := ents["urls"].([]any)[0].(map[string]any)
	if u["url"] != "https://example.com/x" || u["start"].(float64) != 20 {
		t.Fatalf("url %v", u)
	}
	if eh := d["edit_history_tweet_ids"].([]any); len(eh) != 2 {
		t.Fatalf("edit history %v", eh)
	}
	if d["note_tweet"].(map[string]any)["text"] != "long" || d["public_metrics"].(map[string]any)["like_count"].(float64) != 7 {
		t.Fatalf("%v", d)
	}
	if got := s.PostContent("42"); got.Lang != "ja" || !got.CreatedAt.Equal(created) {
		t.Fatalf("PostContent %+v", got)
	}
}

func TestNewPostIDsAreUniqueUnorderedDecimals(t *testing.T) {
	s := New(Options{})
	seen := map[string]bool{}
	var prev uint64
	up, down := 0, 0
	for range 100000 {
		id := s.NewPostID()
		if seen[id] {
			t.Fatalf("duplicate id %s", id)
		}
		seen[id] = true
		if len(id) < 15 || len(id) > 19 {
			t.Fatalf("id %s has %d digits", id, len(id))
		}
		n, err := strconv.ParseUint(id, 10, 64)
		if err != nil || n > 1<<63-1 {
			t.Fatalf("id %s", id)
		}
		if n > prev {
			up++
		} else {
			down++
		}
		prev = n
	}
	if up < 40000 || down < 40000 {
		t.Fatalf("ids look ordered: %d up, %d down", up, down)
	}
}

func TestEveryFieldAndExpansionTogetherIsValidJSON(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock(), DisableRateLimits: true})
	s.SeedBookmarks("1", 1000)
	s.PutPost(Post{ID: "5", Text: "tab\there \\ \"quoted\" \u2028 end", MediaKeys: []string{"7_1", "16_2", "3_3"}, ReferencedTweets: []ReferencedTweet{{"quoted", "6"}}})
	_ = s.Bookmark("1", "5")
	v := q("max_results", "100",
		"tweet.fields", sortedNames(tweetFields),
		"expansions", sortedNames(expansionNames),
		"user.fields", sortedNames(userFields),
		"media.fields", sortedNames(mediaFields),
		"poll.fields", sortedNames(pollFields),
		"place.fields", sortedNames(placeFields))
	tokn := ""
	n := 0
	for {
		if tokn != "" {
			v.Set("pagination_token", tokn)
		}
		p, r := listPage(t, s, "1", tok, v)
		if !json.Valid(r.body) {
			t.Fatalf("invalid JSON: %s", r.body)
		}
		n += len(p.Data)
		if len(p.Data) == 100 && (len(p.Includes.Users) == 0 || len(p.Includes.Media) == 0 || len(p.Includes.Tweets) == 0) {
			t.Fatal("includes missing")
		}
		fieldErrors := 0
		for _, e := range p.Errors {
			if e["title"] == "Field Authorization Error" {
				fieldErrors++
			}
		}
		if fieldErrors != 3*len(p.Data) {
			t.Fatalf("%d field authorization errors for %d posts", fieldErrors, len(p.Data))
		}
		if tokn = p.Meta.NextToken; tokn == "" {
			break
		}
	}
	if n != 1001 {
		t.Fatal(n)
	}
	if p := s.PostContent("5"); p.Text != "tab\there \\ \"quoted\" \u2028 end" {
		t.Fatalf("%q", p.Text)
	}
}

func TestUsersMeHonoursUserFields(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	r := get(t, s, "/2/users/me?user.fields=created_at,public_metrics,description", tok)
	d := r.obj(t)["data"].(map[string]any)
	for _, f := range []string{"id", "name", "username", "created_at", "public_metrics", "description"} {
		if _, ok := d[f]; !ok {
			t.Fatalf("no %s: %s", f, r.body)
		}
	}
	wantProblem(t, get(t, s, "/2/users/me?max_results=5", tok), 400, "Invalid Request")
}
