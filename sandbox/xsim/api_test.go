package xsim

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestFoldersListIDsAndNames(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.CreateFolder("1", "1146654567674912769", "Reading")
	s.CreateFolder("1", "1146654567674912770", "Recipes")
	r := get(t, s, "/2/users/1/bookmarks/folders", tok)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	jsonEqual(t, r.body, `{"data":[{"id":"1146654567674912769","name":"Reading"},{"id":"1146654567674912770","name":"Recipes"}],"meta":{"result_count":2}}`)
	u := s.Usage("1")[OpListFolders]
	if u.FoldersReturned != 2 || u.PostsReturned != 0 || s.TotalPostsReturned() != 0 {
		t.Fatalf("%+v", u)
	}
	// Paginated too.
	for i := range 12 {
		s.CreateFolder("1", "f"+strconv.Itoa(i), "F")
	}
	p := decodePage(t, get(t, s, "/2/users/1/bookmarks/folders?max_results=10", tok))
	p2 := decodePage(t, get(t, s, "/2/users/1/bookmarks/folders?max_results=10&pagination_token="+p.Meta.NextToken, tok))
	if len(p.Data) != 10 || len(p2.Data) != 4 || p2.Meta.NextToken != "" {
		t.Fatalf("%d %d", len(p.Data), len(p2.Data))
	}
	if got := s.Folders("1"); len(got) != 14 || got[0].Name != "Reading" {
		t.Fatalf("%v", got)
	}
	s.DeleteFolder("1", "f0")
	if len(s.Folders("1")) != 13 {
		t.Fatal("DeleteFolder")
	}
}

func TestFolderReadIsNewestAddedFirstPaginatedAndBilled(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.CreateFolder("1", "f1", "Reading")
	var added []string
	for range 15 {
		id := s.NewPostID()
		added = append([]string{id}, added...)
		s.AddToFolder("1", "f1", id)
	}
	s.AddToFolder("1", "f1", added[14]) // re-adding moves it to the top
	added = append([]string{added[14]}, added[:14]...)
	equalIDs(t, s.FolderPosts("1", "f1"), added)
	r := get(t, s, "/2/users/1/bookmarks/folders/f1?max_results=10", tok)
	p := decodePage(t, r)
	equalIDs(t, p.ids(), added[:10])
	for _, d := range p.Data {
		if len(d) != 1 {
			t.Fatalf("folder entries are ids only: %v", d)
		}
	}
	p2 := decodePage(t, get(t, s, "/2/users/1/bookmarks/folders/f1?max_results=10&pagination_token="+p.Meta.NextToken, tok))
	equalIDs(t, p2.ids(), added[10:])
	if p2.Meta.NextToken != "" || p2.Meta.PreviousToken == "" {
		t.Fatal("tokens")
	}
	if u := s.Usage("1")[OpGetFolder]; u.PostsReturned != 15 {
		t.Fatalf("%+v", u)
	}
	// Folders are independent of the main list.
	if len(s.Bookmarks("1")) != 0 {
		t.Fatal("AddToFolder bookmarked")
	}
	s.RemoveFromFolder("1", "f1", added[0])
	if len(s.FolderPosts("1", "f1")) != 14 {
		t.Fatal("RemoveFromFolder")
	}
	if r := get(t, s, "/2/users/1/bookmarks/folders/f1?max_results=0", tok); r.status != 400 {
		t.Fatalf("max_results=0 on folder: %d", r.status)
	}
}

func TestUnknownFolderIs404(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	r := get(t, s, "/2/users/1/bookmarks/folders/nope", tok)
	m := wantProblem(t, r, 404, "Not Found Error")
	if !strings.Contains(m["detail"].(string), "nope") {
		t.Fatal(m)
	}
}

func TestUnknownUserIs404(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	for _, p := range []string{"/2/users/999/bookmarks", "/2/users/999/bookmarks/folders", "/2/users/999/bookmarks/folders/x"} {
		wantProblem(t, get(t, s, p, tok), 404, "Not Found Error")
	}
}

func TestAddBookmarkOverHTTPPutsPostAtTop(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 5)
	r := postJSON(t, s, "/2/users/1/bookmarks", tok, `{"tweet_id":"1460323737035677698"}`)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	jsonEqual(t, r.body, `{"data":{"bookmarked":true}}`)
	if s.Bookmarks("1")[0] != "1460323737035677698" {
		t.Fatal("not at top")
	}
	for _, bad := range []string{`{}`, `{"tweet_id":123}`, `{"tweet_id":"abc"}`, `not json`} {
		wantProblem(t, postJSON(t, s, "/2/users/1/bookmarks", tok, bad), 400, "Invalid Request")
	}
}

func TestRemoveBookmarkOverHTTPShiftsRestUp(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	ids := s.SeedBookmarks("1", 5)
	r := doReq(t, "DELETE", s.URL()+"/2/users/1/bookmarks/"+ids[1], tok, nil, nil)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	jsonEqual(t, r.body, `{"data":{"bookmarked":false}}`)
	equalIDs(t, s.Bookmarks("1"), []string{ids[0], ids[2], ids[3], ids[4]})
	// Removing a post that is not bookmarked is still a 200.
	r = doReq(t, "DELETE", s.URL()+"/2/users/1/bookmarks/"+ids[1], tok, nil, nil)
	jsonEqual(t, r.body, `{"data":{"bookmarked":false}}`)
}

func TestUsersMeReturnsTheTokensUser(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	r := get(t, s, "/2/users/me", tok)
	jsonEqual(t, r.body, `{"data":{"id":"1","name":"alice","username":"alice"}}`)
	tok2 := s.IssueToken("2", "tweet.read", "users.read")
	r = get(t, s, "/2/users/me", tok2)
	jsonEqual(t, r.body, `{"data":{"id":"2","name":"User 2","username":"user_2"}}`)
}

func TestReadNeedsBookmarkReadScope(t *testing.T) {
	s, _ := newSimUser(t, Options{Clock: vclock()})
	s.CreateFolder("1", "f", "F")
	tok := s.IssueToken("1", "tweet.read", "users.read", "bookmark.write")
	for _, p := range []string{"/2/users/1/bookmarks", "/2/users/1/bookmarks/folders", "/2/users/1/bookmarks/folders/f"} {
		m := wantProblem(t, get(t, s, p, tok), 403, "Forbidden")
		if !strings.Contains(m["detail"].(string), "bookmark.read") {
			t.Fatalf("detail %v", m["detail"])
		}
	}
	tok = s.IssueToken("1", "bookmark.read", "users.read")
	m := wantProblem(t, get(t, s, "/2/users/1/bookmarks", tok), 403, "Forbidden")
	if !strings.Contains(m["detail"].(string), "tweet.read") {
		t.Fatalf("detail %v", m["detail"])
	}
}

func TestWriteNeedsBookmarkWriteScope(t *testing.T) {
	s, _ := newSimUser(t, Options{Clock: vclock()})
	ids := s.SeedBookmarks("1", 2)
	tok := s.IssueToken("1", "tweet.read", "users.read", "bookmark.read")
	m := wantProblem(t, postJSON(t, s, "/2/users/1/bookmarks", tok, `{"tweet_id":"5"}`), 403, "Forbidden")
	if !strings.Contains(m["detail"].(string), "bookmark.write") {
		t.Fatal(m)
	}
	wantProblem(t, doReq(t, "DELETE", s.URL()+"/2/users/1/bookmarks/"+ids[0], tok, nil, nil), 403, "Forbidden")
	if len(s.Bookmarks("1")) != 2 {
		t.Fatal("list changed")
	}
}

const appOnlyWant = `{"title":"Unsupported Authentication","detail":"Authenticating with OAuth 2.0 Application-Only is forbidden for this endpoint.  Supported authentication types are [OAuth 2.0 User Context].","type":"https://api.x.com/2/problems/unsupported-authentication","status":403}`

func TestAppOnlyTokenIsForbidden(t *testing.T) {
	s, _ := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 3)
	s.CreateFolder("1", "f", "F")
	app := s.IssueAppOnlyToken()
	for _, r := range []*resp{
		get(t, s, "/2/users/1/bookmarks", app),
		get(t, s, "/2/users/1/bookmarks/folders", app),
		get(t, s, "/2/users/1/bookmarks/folders/f", app),
		postJSON(t, s, "/2/users/1/bookmarks", app, `{"tweet_id":"5"}`),
		doReq(t, "DELETE", s.URL()+"/2/users/1/bookmarks/5", app, nil, nil),
		get(t, s, "/2/users/me", app),
	} {
		if r.status != 403 {
			t.Fatalf("%d %s", r.status, r.body)
		}
		jsonEqual(t, r.body, appOnlyWant)
	}
}

func TestTokenForAnotherUserIsForbidden(t *testing.T) {
	s, tokA := newSimUser(t, Options{Clock: vclock()})
	s.AddUser("2", "bob")
	s.SeedBookmarks("2", 3)
	wantProblem(t, get(t, s, "/2/users/2/bookmarks", tokA), 403, "Forbidden")
	wantProblem(t, postJSON(t, s, "/2/users/2/bookmarks", tokA, `{"tweet_id":"5"}`), 403, "Forbidden")
	if len(s.Bookmarks("2")) != 3 {
		t.Fatal("list changed")
	}
}

const unauthorizedWant = `{"title":"Unauthorized","type":"about:blank","status":401,"detail":"Unauthorized"}`

func TestMissingOrUnknownTokenIs401(t *testing.T) {
	s, _ := newSimUser(t, Options{Clock: vclock()})
	for _, tok := range []string{"", "nope"} {
		for _, p := range []string{"/2/users/1/bookmarks", "/2/users/me"} {
			r := get(t, s, p, tok)
			if r.status != 401 {
				t.Fatalf("%d", r.status)
			}
			jsonEqual(t, r.body, unauthorizedWant)
		}
	}
	// A refresh token is not an access token.
	_, refresh, _ := s.IssueTokenPair("c", "1")
	jsonEqual(t, get(t, s, "/2/users/1/bookmarks", refresh).body, unauthorizedWant)
}

func TestExpiredAccessTokenIs401(t *testing.T) {
	clk := vclock()
	s, _ := newSimUser(t, Options{Clock: clk})
	access, _, ttl := s.IssueTokenPair("c", "1")
	if ttl != 2*time.Hour {
		t.Fatalf("ttl %v", ttl)
	}
	short := s.IssueTokenWithExpiry("1", time.Minute)
	clk.Advance(2*time.Hour - time.Second)
	if r := get(t, s, "/2/users/1/bookmarks", access); r.status != 200 {
		t.Fatalf("%d before expiry", r.status)
	}
	jsonEqual(t, get(t, s, "/2/users/1/bookmarks", short).body, unauthorizedWant)
	clk.Advance(time.Second)
	if r := get(t, s, "/2/users/1/bookmarks", access); r.status != 401 {
		t.Fatalf("%d after expiry", r.status)
	}
	// IssueToken tokens do not expire.
	long := s.IssueToken("1")
	clk.Advance(1000 * time.Hour)
	if r := get(t, s, "/2/users/1/bookmarks", long); r.status != 200 {
		t.Fatalf("%d", r.status)
	}
}

func TestRevokedTokenIs401(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.RevokeToken(tok)
	jsonEqual(t, get(t, s, "/2/users/1/bookmarks", tok).body, unauthorizedWant)
}

const creditsWant = `{"title":"CreditsDepleted","detail":"Your enrolled account does not have any credits to fulfill this request.","type":"https://api.x.com/2/problems/credits","status":402}`

func TestCreditsDepletedIs402(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 100)
	s.SetCredits(25)
	p1, _ := listPage(t, s, "1", tok, q("max_results", "10"))
	p2, _ := listPage(t, s, "1", tok, q("max_results", "10", "pagination_token", p1.Meta.NextToken))
	r := get(t, s, "/2/users/1/bookmarks?max_results=10&pagination_token="+p2.Meta.NextToken, tok)
	if r.status != 402 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	jsonEqual(t, r.body, creditsWant)
	if s.Credits() != 5 {
		t.Fatalf("credits %d", s.Credits())
	}
	listPage(t, s, "1", tok, q("max_results", "5", "pagination_token", p2.Meta.NextToken))
	r = get(t, s, "/2/users/1/bookmarks?max_results=1", tok)
	jsonEqual(t, r.body, creditsWant)
	if s.TotalPostsReturned() != 25 {
		t.Fatalf("billed %d", s.TotalPostsReturned())
	}
	u := s.Usage("1")[OpListBookmarks]
	if u.ByStatus[402] != 2 || u.PostsReturned != 25 {
		t.Fatalf("%+v", u)
	}
	// Operations that return no posts still work.
	if r := get(t, s, "/2/users/1/bookmarks/folders", tok); r.status != 200 {
		t.Fatalf("%d", r.status)
	}
	s.SetCredits(-1)
	listPage(t, s, "1", tok, nil)
}

func TestOnRequestHookSeesOperationUserAndSeqAndMayMutate(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	ids := s.SeedBookmarks("1", 30)
	var infos []RequestInfo
	var added string
	s.OnRequest(func(ri RequestInfo) {
		infos = append(infos, ri)
		if ri.Operation == OpListBookmarks && ri.Seq == 2 {
			added = s.NewPostID()
			_ = s.Bookmark(ri.UserID, added) // the user saves a post mid-walk
		}
	})
	got, _ := walk(t, s, "1", tok, 10)
	// The post saved mid-walk is not seen, and ids[9] comes twice.
	if len(got) != 31 || got[10] != ids[9] || got[9] != ids[9] {
		t.Fatalf("walk %v", got)
	}
	get(t, s, "/2/users/me", tok)
	if len(infos) != 5 {
		t.Fatalf("%d infos", len(infos))
	}
	for i, ri := range infos[:4] {
		if ri.Operation != OpListBookmarks || ri.UserID != "1" || ri.Seq != i+1 || ri.Query.Get("max_results") != "10" {
			t.Fatalf("%+v", ri)
		}
	}
	if infos[4].Operation != OpUsersMe || infos[4].UserID != "1" || infos[4].Seq != 1 {
		t.Fatalf("%+v", infos[4])
	}
	if s.Bookmarks("1")[0] != added {
		t.Fatal("hook's bookmark missing")
	}
}

// The hook sees the post a bookmark is added or removed for, and the add
// is served as without the hook.
func TestOnRequestHookSeesThePostOfAnAddOrARemove(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	ids := s.SeedBookmarks("1", 2)
	var posts []string
	s.OnRequest(func(ri RequestInfo) { posts = append(posts, ri.Operation+" "+ri.PostID) })
	if r := postJSON(t, s, "/2/users/1/bookmarks", tok, `{"tweet_id":"1460323737035677698"}`); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	doReq(t, "DELETE", s.URL()+"/2/users/1/bookmarks/"+ids[1], tok, nil, nil)
	if want := []string{OpAddBookmark + " 1460323737035677698", OpRemoveBookmark + " " + ids[1]}; !slices.Equal(posts, want) {
		t.Errorf("the hook saw %q, want %q", posts, want)
	}
	equalIDs(t, s.Bookmarks("1"), []string{"1460323737035677698", ids[0]})
}

func TestMeterCountsRequestsOKAndStatuses(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 15)
	listPage(t, s, "1", tok, nil)
	get(t, s, "/2/users/1/bookmarks?max_results=0", tok)
	get(t, s, "/2/users/1/bookmarks", "bad")
	u := s.Usage("1")[OpListBookmarks]
	if u.Requests != 3 || u.OK != 1 || u.PostsReturned != 10 || u.ByStatus[200] != 1 || u.ByStatus[400] != 1 || u.ByStatus[401] != 1 {
		t.Fatalf("%+v", u)
	}
}

func TestUnknownRouteIsProblem404(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	wantProblem(t, get(t, s, "/2/tweets", tok), 404, "Not Found Error")
}
