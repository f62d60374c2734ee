package xsim

import (
	"math"
	"slices"
	"testing"
	"time"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// Expanded users are billed at the user rate and expanded posts at the post
// rate; media are not billed.
func TestBillingCountsExpandedUsersAndPostsMediaFree(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.PutPost(Post{ID: "10", Text: "a", AuthorID: "7", MediaKeys: []string{"3_1", "7_2"}, ReferencedTweets: []ReferencedTweet{{"quoted", "11"}}})
	s.PutPost(Post{ID: "11", Text: "b", AuthorID: "8"})
	_ = s.Bookmark("1", "10")
	p, _ := listPage(t, s, "1", tok, q("tweet.fields", "author_id,attachments,referenced_tweets",
		"expansions", "author_id,attachments.media_keys,referenced_tweets.id,referenced_tweets.id.author_id"))
	if len(p.Includes.Users) != 2 || len(p.Includes.Media) != 2 || len(p.Includes.Tweets) != 1 {
		t.Fatalf("includes %+v", p.Includes)
	}
	u := s.Usage("1")[OpListBookmarks]
	if u.PostsReturned != 2 || u.PostsBilled != 2 || u.UsersReturned != 2 || u.UsersBilled != 2 || u.MediaReturned != 2 || !near(u.USD, 2*0.005+2*0.01) {
		t.Fatalf("usage %+v", u)
	}
}

// Each resource is billed once per UTC day per app, on the server's clock.
func TestBillingDeduplicatesPerAppPerUTCDay(t *testing.T) {
	clk := vclock()
	s, tok := newSimUser(t, Options{Clock: clk})
	s.SeedBookmarks("1", 5)
	fields := q("tweet.fields", "author_id", "expansions", "author_id")
	listPage(t, s, "1", tok, fields)
	listPage(t, s, "1", tok, fields)
	u := s.Usage("1")[OpListBookmarks]
	if u.PostsReturned != 10 || u.PostsBilled != 5 || u.UsersReturned != 2*u.UsersBilled {
		t.Fatalf("same day: %+v", u)
	}
	clk.Set(time.Date(2026, 3, 2, 0, 0, 1, 0, time.UTC))
	listPage(t, s, "1", tok, fields)
	if u := s.Usage("1")[OpListBookmarks]; u.PostsBilled != 10 {
		t.Fatalf("next UTC day: %+v", u)
	}
	// Another app reads them again: billed to it.
	other := s.IssueAppToken("other-app", "1")
	listPage(t, s, "1", other, fields)
	if u := s.Usage("1")[OpListBookmarks]; u.PostsBilled != 15 {
		t.Fatalf("another app: %+v", u)
	}
}

// The app owner's own bookmarks are owned reads; folder reads and other
// users' reads are not.
func TestBillingOwnedReadsOfTheAppsOwner(t *testing.T) {
	s := newSim(t, Options{Clock: vclock()})
	s.SetAppOwner("app", "1")
	owner, other := s.IssueAppToken("app", "1"), s.IssueAppToken("app", "2")
	s.SeedBookmarks("1", 4)
	s.SeedBookmarks("2", 4)
	s.CreateFolder("1", "9", "f")
	s.AddToFolder("1", "9", s.NewPostID())
	listPage(t, s, "1", owner, nil)
	listPage(t, s, "2", other, nil)
	get(t, s, "/2/users/1/bookmarks/folders/9", owner)
	if u := s.Usage("1")[OpListBookmarks]; !u.OwnedReads || !near(u.USD, 4*0.001) {
		t.Errorf("owner: %+v", u)
	}
	if u := s.Usage("2")[OpListBookmarks]; u.OwnedReads || !near(u.USD, 4*0.005) {
		t.Errorf("other user: %+v", u)
	}
	if u := s.Usage("1")[OpGetFolder]; u.OwnedReads || u.PostsBilled != 1 || !near(u.USD, 0.005) {
		t.Errorf("folder: %+v", u)
	}
}

// users/me returns a user: billed as a user read.
func TestBillingUsersMeIsAUserRead(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	get(t, s, "/2/users/me", tok)
	if u := s.Usage("1")[OpUsersMe]; u.UsersBilled != 1 || !near(u.USD, 0.01) {
		t.Errorf("users_me %+v", u)
	}
}

// A referenced post that was deleted, or whose author is protected or
// suspended, comes back as a partial error beside the data, not in
// includes, and is not billed.
func TestUnavailableReferencedPostsArePartialErrors(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.PutPost(Post{ID: "10", Text: "quotes", ReferencedTweets: []ReferencedTweet{{"quoted", "11"}, {"replied_to", "12"}, {"quoted", "13"}}})
	for _, id := range []string{"11", "12", "13"} {
		s.PutPost(Post{ID: id, Text: "ref " + id})
	}
	_ = s.Bookmark("1", "10")
	_ = s.DeletePost("11")
	_ = s.SetPostCompliance("12", "protected")
	p, _ := listPage(t, s, "1", tok, q("tweet.fields", "referenced_tweets", "expansions", "referenced_tweets.id"))
	if len(p.Data) != 1 || len(p.Includes.Tweets) != 1 || p.Includes.Tweets[0]["id"] != "13" {
		t.Fatalf("data %v, includes %v", p.Data, p.Includes.Tweets)
	}
	var got []string
	for _, e := range p.Errors {
		got = append(got, e["resource_id"].(string)+" "+e["title"].(string)+" "+e["parameter"].(string))
	}
	want := []string{"11 Not Found Error referenced_tweets.id", "12 Authorization Error referenced_tweets.id"}
	if !slices.Equal(got, want) {
		t.Fatalf("errors %v, want %v", got, want)
	}
	if u := s.Usage("1")[OpListBookmarks]; u.PostsBilled != 2 {
		t.Errorf("billed %d posts, want the bookmark and the one shown", u.PostsBilled)
	}
	// Generated content has unavailable references too.
	s.SeedBookmarks("1", 2000)
	seen := 0
	for tok2 := ""; ; {
		v := q("max_results", "100", "tweet.fields", "referenced_tweets", "expansions", "referenced_tweets.id")
		if tok2 != "" {
			v.Set("pagination_token", tok2)
		}
		p, _ := listPage(t, s, "1", tok, v)
		seen += len(p.Errors)
		if tok2 = p.Meta.NextToken; tok2 == "" {
			break
		}
	}
	if seen == 0 {
		t.Error("no unavailable referenced post among 2000 generated posts")
	}
}

// The article field carries an X Article's title and whole body, and its
// media expand with article.cover_media and article.media_entities.
func TestArticleFieldAndItsMediaExpansions(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.PutPost(Post{ID: "10", Text: "https://x.com/i/article/10", Article: &Article{Title: "T", PlainText: "Body", CoverMedia: "3_5", MediaEntities: []string{"3_6"}}})
	_ = s.Bookmark("1", "10")
	p, _ := listPage(t, s, "1", tok, q("tweet.fields", "article", "expansions", "article.cover_media,article.media_entities", "media.fields", "url"))
	a, ok := p.Data[0]["article"].(map[string]any)
	if !ok || a["title"] != "T" || a["plain_text"] != "Body" || a["cover_media"] != "3_5" {
		t.Fatalf("article %v", p.Data[0])
	}
	if len(p.Includes.Media) != 2 || p.Includes.Media[0]["media_key"] != "3_5" || p.Includes.Media[0]["url"] == nil {
		t.Fatalf("media %v", p.Includes.Media)
	}
	// Generated posts hold articles now and then, with long bodies.
	s.SeedBookmarks("1", 1000)
	found := 0
	for tok2 := ""; ; {
		v := q("max_results", "100", "tweet.fields", "article")
		if tok2 != "" {
			v.Set("pagination_token", tok2)
		}
		p, _ := listPage(t, s, "1", tok, v)
		for _, d := range p.Data {
			if a, ok := d["article"].(map[string]any); ok && len(a["plain_text"].(string)) > 1000 {
				found++
			}
		}
		if tok2 = p.Meta.NextToken; tok2 == "" {
			break
		}
	}
	if found == 0 {
		t.Error("no article among 1000 generated posts")
	}
}

// X bills a bookmark write per request ("Bookmark", $0.005 per request):
// each add and each removal X answers, the same post again too; a request
// refused is not billed.
func TestBillingWritesPerRequest(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	ids := s.SeedBookmarks("1", 3)
	for _, id := range []string{ids[0], ids[0], ids[1]} {
		if r := doReq(t, "DELETE", s.URL()+"/2/users/1/bookmarks/"+id, tok, nil, nil); r.status != 200 {
			t.Fatalf("%d %s", r.status, r.body)
		}
	}
	postJSON(t, s, "/2/users/1/bookmarks", tok, `{"tweet_id":"`+ids[0]+`"}`)
	postJSON(t, s, "/2/users/1/bookmarks", tok, `{"tweet_id":"abc"}`) // 400
	if u := s.Usage("1")[OpRemoveBookmark]; u.WritesBilled != 3 || u.PostsBilled != 0 || !near(u.USD, 3*0.005) {
		t.Errorf("remove_bookmark %+v", u)
	}
	if u := s.Usage("1")[OpAddBookmark]; u.WritesBilled != 1 || !near(u.USD, 0.005) {
		t.Errorf("add_bookmark %+v", u)
	}
}
