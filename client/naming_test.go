package client

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/rs/zerolog"
)

// A post of the tweets naming, the same post in the posts naming, and one
// that mixes them: one page of each, with a referenced post in includes.
const (
	tweetsNamed = `{"data":[{"id":"20","text":"long…","author_id":"7","edit_history_tweet_ids":["20"],
		"note_tweet":{"text":"long and whole"},"referenced_tweets":[{"type":"quoted","id":"11"}],
		"public_metrics":{"retweet_count":2,"reply_count":1,"like_count":9,"quote_count":0,"bookmark_count":3,"impression_count":90},
		"article":{"title":"On saving","plain_text":"body"}}],
		"includes":{"tweets":[{"id":"11","text":"quoted","edit_history_tweet_ids":["11"],"public_metrics":{"retweet_count":5}}],
			"users":[{"id":"7","name":"A","username":"a","public_metrics":{"followers_count":1,"following_count":2,"tweet_count":3,"listed_count":0}}]},
		"meta":{"result_count":1}}`
	postsNamed = `{"data":[{"id":"20","text":"long…","author_id":"7","edit_history_post_ids":["20"],
		"note_post":{"text":"long and whole"},"referenced_posts":[{"type":"quoted","id":"11"}],
		"public_metrics":{"repost_count":2,"reply_count":1,"like_count":9,"quote_count":0,"bookmark_count":3,"impression_count":90},
		"article":{"plain_text":"body"},"article_title":"On saving"}],
		"includes":{"posts":[{"id":"11","text":"quoted","edit_history_post_ids":["11"],"public_metrics":{"repost_count":5}}],
			"users":[{"id":"7","name":"A","username":"a","public_metrics":{"followers_count":1,"following_count":2,"post_count":3,"listed_count":0}}]},
		"meta":{"result_count":1}}`
	mixedNames = `{"data":[{"id":"20","text":"long…","author_id":"7","edit_history_post_ids":["20"],
		"note_tweet":{"text":"long and whole"},"referenced_posts":[{"type":"quoted","id":"11"}],
		"public_metrics":{"retweet_count":2,"reply_count":1,"like_count":9,"quote_count":0,"bookmark_count":3,"impression_count":90},
		"article":{"title":"On saving","plain_text":"body"}}],
		"includes":{"posts":[{"id":"11","text":"quoted","edit_history_tweet_ids":["11"],"public_metrics":{"repost_count":5}}],
			"users":[{"id":"7","name":"A","username":"a","public_metrics":{"followers_count":1,"following_count":2,"post_count":3,"listed_count":0}}]},
		"meta":{"result_count":1}}`
)

// A response in either naming, or one that mixes them, is read into the
// same post: the same fields, the same referenced post, public_metrics
// with X's older retweet_count, and an author's with tweet_count. Only Raw,
// each object as X returned it, differs.
func TestBothNamingsAreReadIntoTheSamePost(t *testing.T) {
	var want *Post
	var wantRef *Post
	for _, body := range []string{tweetsNamed, postsNamed, mixedNames} {
		page, res, err := decodePostPage([]byte(body))
		if err != nil {
			t.Fatalf("%v\n%s", err, body)
		}
		p := page.Data[0]
		p.Raw = nil
		ref := page.Expanded.Posts["11"]
		if ref == nil || len(res.Posts) != 2 {
			t.Fatalf("expanded posts %v, billed %v", page.Expanded.Posts, res.Posts)
		}
		r := *ref
		r.Raw = nil
		var metrics, author map[string]int
		if err := json.Unmarshal(p.PublicMetrics, &metrics); err != nil || metrics["retweet_count"] != 2 || len(metrics) != 6 {
			t.Errorf("public_metrics %s", p.PublicMetrics)
		}
		if err := json.Unmarshal(page.Expanded.Users["7"].PublicMetrics, &author); err != nil || author["tweet_count"] != 3 || len(author) != 4 {
			t.Errorf("author's public_metrics %s", page.Expanded.Users["7"].PublicMetrics)
		}
		if p.NoteText != "long and whole" || p.ArticleTitle != "On saving" || !slices.Equal(p.EditHistoryTweetIDs, []string{"20"}) ||
			len(p.References) != 1 || p.References[0] != (Reference{Type: "quoted", ID: "11"}) {
			t.Errorf("post %+v", p)
		}
		if want == nil {
			want, wantRef = &p, &r
			continue
		}
		p.Article, want.Article = nil, nil // the article object itself is X's, as returned
		if !reflect.DeepEqual(p, *want) || !reflect.DeepEqual(r, *wantRef) {
			t.Errorf("read differently:\n%+v\n%+v\nreferenced:\n%+v\n%+v", p, *want, r, *wantRef)
		}
	}
}

// A request in the posts naming says every field in its names, and leaves
// out what that naming has no name for.
func TestARequestIsMadeInTheNamingOfItsPolicy(t *testing.T) {
	f := Fields{
		TweetFields: []string{"created_at", "author_id", "referenced_tweets", "edit_history_tweet_ids", "note_tweet", "article"},
		Expansions:  []string{"author_id", "referenced_tweets.id", "referenced_tweets.id.author_id"},
		UserFields:  []string{"username", "pinned_tweet_id"},
	}
	for _, tc := range []struct {
		setting string
		want    map[string]string
	}{
		{"tweets", map[string]string{"tweet.fields": "created_at,author_id,referenced_tweets,edit_history_tweet_ids,note_tweet,article",
			"expansions": "author_id,referenced_tweets.id,referenced_tweets.id.author_id", "user.fields": "username,pinned_tweet_id"}},
		{"posts", map[string]string{"post.fields": "created_at,note_post,article,article_title",
			"expansions": "author_id,referenced_posts", "user.fields": "username"}},
	} {
		ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, pageBody(30, 1, "")) })
		policy, err := NewNamingPolicy(tc.setting)
		if err != nil {
			t.Fatal(err)
		}
		c, _ := newTestClient(t, ts, nil, WithNamingPolicy(policy))
		_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{Fields: f})
		if err != nil || resp.Naming != Naming(tc.setting) {
			t.Fatalf("%s: %v, naming %q", tc.setting, err, resp.Naming)
		}
		q := ts.Requests()[0].Query
		for param, want := range tc.want {
			if got := strings.Join(q[param], ""); got != want {
				t.Errorf("%s: %s=%s, want %s", tc.setting, param, got, want)
			}
		}
		if len(q) != len(tc.want) {
			t.Errorf("%s: query %v", tc.setting, q)
		}
	}
}

// refusingTweets answers like X's 2.167 description: 400 to tweet.fields,
// a page to post.fields.
func refusingTweets(w http.ResponseWriter, r *http.Request, _ int) {
	if v := r.URL.Query().Get("tweet.fields"); v != "" {
		writeJSON(w, 400, `{"errors":[{"parameters":{"tweet.fields":["`+v+`"]},"message":"The query parameter [tweet.fields] is not one of [expansions,max_results,pagination_token,post.fields]"}],`+
			`"title":"Invalid Request","detail":"One or more parameters to your request was invalid.","type":"https://api.x.com/2/problems/invalid-request"}`)
		return
	}
	writeJSON(w, 200, pageBody(30, 2, ""))
}

// Under auto, the first 400 that refuses the tweets naming switches the
// sync (every client of its policy) to the posts naming, once, and says so
// once; the page is asked for again, and the refused request billed
// nothing, so no post is billed twice.
func TestAutoSwitchesToThePostsNamingOnceXRefusesTheTweetsNaming(t *testing.T) {
	ts := newTestServer(t, refusingTweets)
	policy, err := NewNamingPolicy("auto")
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	meter := billing.NewMeter(billing.DefaultRates())
	f := Fields{TweetFields: []string{"created_at", "author_id", "note_tweet"}, Expansions: []string{"referenced_tweets.id"}}
	for _, user := range []string{"1001", "1002", "1001"} {
		c, _ := newTestClient(t, ts, nil, WithNamingPolicy(policy), WithMeter(meter), WithLogger(zerolog.New(&log)))
		page, resp, err := c.ListBookmarks(context.Background(), user, ListOptions{Fields: f})
		if err != nil || len(page.Data) != 2 || resp.Naming != NamingPosts {
			t.Fatalf("user %s: %v, naming %q", user, err, resp.Naming)
		}
	}
	reqs := ts.Requests()
	if len(reqs) != 4 || reqs[0].Query["tweet.fields"] == nil || reqs[1].Query["post.fields"] == nil || reqs[2].Query["tweet.fields"] != nil {
		t.Fatalf("requests %v", reqs)
	}
	if n := strings.Count(log.String(), "asking in its posts naming"); n != 1 || !strings.Contains(log.String(), `"not_asked":["tweet.fields=author_id"]`) {
		t.Errorf("said %d times:\n%s", n, log.String())
	}
	if u := meter.Usage("1001", OpListBookmarks); u.PostsBilled != 2 || u.PostsReturned != 4 || u.Errors != 1 {
		t.Errorf("user 1001 billed %+v", u)
	}
}

// The naming is not switched for a 400 that is not about it (a field
// neither naming has), under a fixed naming, or back from the posts naming.
func TestTheNamingIsNotSwitchedForOther400s(t *testing.T) {
	typo := func(w http.ResponseWriter, r *http.Request, _ int) {
		writeJSON(w, 400, `{"errors":[{"parameters":{"tweet.fields":["no_such_field"]},"message":"The `+"`tweet.fields`"+` query parameter value [no_such_field] is not one of [...]"}],"title":"Invalid Request","type":"https://api.x.com/2/problems/invalid-request"}`)
	}
	refusingPosts := func(w http.ResponseWriter, r *http.Request, _ int) {
		writeJSON(w, 400, `{"errors":[{"parameters":{"post.fields":["created_at"]},"message":"The query parameter [post.fields] is not one of [tweet.fields]"}],"title":"Invalid Request","type":"https://api.x.com/2/problems/invalid-request"}`)
	}
	for _, tc := range []struct {
		setting string
		handler func(http.ResponseWriter, *http.Request, int)
	}{{"auto", typo}, {"tweets", refusingTweets}, {"posts", refusingPosts}} {
		ts := newTestServer(t, tc.handler)
		policy, _ := NewNamingPolicy(tc.setting)
		c, _ := newTestClient(t, ts, nil, WithNamingPolicy(policy))
		_, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{Fields: Fields{TweetFields: []string{"created_at", "no_such_field"}}})
		if err == nil || ts.Count() != 1 || policy.Current() != Naming(strings.Replace(tc.setting, "auto", "tweets", 1)) {
			t.Errorf("%s: %v after %d requests, naming now %s", tc.setting, err, ts.Count(), policy.Current())
		}
	}
	if _, err := NewNamingPolicy("post"); err == nil || !strings.Contains(err.Error(), "auto, tweets, posts") {
		t.Errorf("a bad setting: %v", err)
	}
}
