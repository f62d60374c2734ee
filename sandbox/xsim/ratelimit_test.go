package xsim

import (
	"strconv"
	"testing"
	"time"
)

func rlHeaders(t *testing.T, r *resp) (limit, remaining int, reset int64) {
	t.Helper()
	var err error
	if limit, err = strconv.Atoi(r.hdr.Get("x-rate-limit-limit")); err != nil {
		t.Fatalf("x-rate-limit-limit %q (status %d)", r.hdr.Get("x-rate-limit-limit"), r.status)
	}
	if remaining, err = strconv.Atoi(r.hdr.Get("x-rate-limit-remaining")); err != nil {
		t.Fatalf("x-rate-limit-remaining %q (status %d)", r.hdr.Get("x-rate-limit-remaining"), r.status)
	}
	if reset, err = strconv.ParseInt(r.hdr.Get("x-rate-limit-reset"), 10, 64); err != nil {
		t.Fatalf("x-rate-limit-reset %q (status %d)", r.hdr.Get("x-rate-limit-reset"), r.status)
	}
	return
}

func TestEveryResponseCarriesRateLimitHeaders(t *testing.T) {
	clk := vclock()
	s, tok := newSimUser(t, Options{Clock: clk, Limits: map[string]int{OpListBookmarks: 3}})
	s.AddUser("2", "bob")
	s.SeedBookmarks("1", 20)
	s.CreateFolder("1", "f", "F")
	app := s.IssueAppOnlyToken()
	noScope := s.IssueToken("1", "tweet.read")
	other := s.IssueToken("2")
	rs := map[string]*resp{}
	rs["200 list"] = get(t, s, "/2/users/1/bookmarks", tok)
	rs["400"] = get(t, s, "/2/users/1/bookmarks?max_results=0", tok)
	rs["401"] = get(t, s, "/2/users/1/bookmarks", "nope")
	rs["401 me"] = get(t, s, "/2/users/me", "")
	rs["403 app"] = get(t, s, "/2/users/1/bookmarks", app)
	rs["403 scope"] = get(t, s, "/2/users/1/bookmarks/folders", noScope)
	rs["403 other"] = get(t, s, "/2/users/1/bookmarks/folders/f", other)
	rs["404 user"] = get(t, s, "/2/users/999/bookmarks/folders", tok)
	rs["404 folder"] = get(t, s, "/2/users/1/bookmarks/folders/zz", tok)
	rs["200 add"] = postJSON(t, s, "/2/users/1/bookmarks", tok, `{"tweet_id":"5"}`)
	rs["200 remove"] = doReq(t, "DELETE", s.URL()+"/2/users/1/bookmarks/5", tok, nil, nil)
	rs["200 me"] = get(t, s, "/2/users/me", tok)
	rs["200 folders"] = get(t, s, "/2/users/1/bookmarks/folders", tok)
	rs["200 folder"] = get(t, s, "/2/users/1/bookmarks/folders/f", tok)
	get(t, s, "/2/users/1/bookmarks", tok)
	rs["429"] = get(t, s, "/2/users/1/bookmarks", tok)
	s.SetCredits(0)
	rs["402"] = get(t, s, "/2/users/1/bookmarks/folders/f", tok)
	for name, r := range rs {
		limit, remaining, reset := rlHeaders(t, r)
		if limit <= 0 || remaining < 0 || remaining > limit || reset < clk.Now().Unix() {
			t.Fatalf("%s: limit %d remaining %d reset %d", name, limit, remaining, reset)
		}
	}
	if rs["429"].status != 429 || rs["402"].status != 402 {
		t.Fatalf("%d %d", rs["429"].status, rs["402"].status)
	}
}

func Test429BeyondPerUserLimit(t *testing.T) {
	clk := vclock()
	s, tok := newSimUser(t, Options{Clock: clk})
	s.SeedBookmarks("1", 10)
	for i := range 180 {
		r := get(t, s, "/2/users/1/bookmarks?max_results=1", tok)
		limit, remaining, _ := rlHeaders(t, r)
		if r.status != 200 || limit != 180 || remaining != 179-i {
			t.Fatalf("request %d: %d limit %d remaining %d", i+1, r.status, limit, remaining)
		}
	}
	r := get(t, s, "/2/users/1/bookmarks?max_results=1", tok)
	if r.status != 429 {
		t.Fatalf("%d", r.status)
	}
	jsonEqual(t, r.body, `{"title":"Too Many Requests","detail":"Too Many Requests","type":"about:blank","status":429}`)
	if _, rem, reset := rlHeaders(t, r); rem != 0 || reset != t0.Add(15*time.Minute).Unix() {
		t.Fatalf("remaining %d reset %d", rem, reset)
	}
	u := s.Usage("1")[OpListBookmarks]
	if u.RateLimited != 1 || u.PostsReturned != 180 || u.ByStatus[429] != 1 {
		t.Fatalf("%+v", u)
	}
	// Other operations have their own limits.
	if r := get(t, s, "/2/users/1/bookmarks/folders", tok); r.status != 200 {
		t.Fatalf("%d", r.status)
	}
	for op, want := range map[string]int{"/2/users/1/bookmarks/folders": 50, "/2/users/me": 75} {
		l, _, _ := rlHeaders(t, get(t, s, op, tok))
		if l != want {
			t.Fatalf("%s limit %d, want %d", op, l, want)
		}
	}
}

func TestRateLimitWindowIsFixedFromTheFirstRequest(t *testing.T) {
	clk := vclock()
	clk.Advance(250 * time.Millisecond)
	s, tok := newSimUser(t, Options{Clock: clk, Limits: map[string]int{OpListBookmarks: 2}})
	start := clk.Now()
	wantReset := start.Add(15*time.Minute).Unix() + 1 // rounded up
	_, _, reset := rlHeaders(t, get(t, s, "/2/users/1/bookmarks", tok))
	if reset != wantReset {
		t.Fatalf("reset %d, want %d", reset, wantReset)
	}
	clk.Advance(10 * time.Minute)
	get(t, s, "/2/users/1/bookmarks", tok)
	r := get(t, s, "/2/users/1/bookmarks", tok)
	if _, _, reset := rlHeaders(t, r); r.status != 429 || reset != wantReset {
		t.Fatalf("%d reset %d", r.status, reset)
	}
	clk.Set(time.Unix(wantReset, 0))
	r = get(t, s, "/2/users/1/bookmarks", tok)
	_, rem, reset := rlHeaders(t, r)
	if r.status != 200 || rem != 1 || reset != wantReset+15*60 {
		t.Fatalf("new window: %d remaining %d reset %d", r.status, rem, reset)
	}
	// A window starts at the first request after the previous one ended, not on a grid.
	clk.Advance(47 * time.Minute)
	_, _, reset = rlHeaders(t, get(t, s, "/2/users/1/bookmarks", tok))
	if reset != clk.Now().Add(15*time.Minute).Unix() {
		t.Fatalf("reset %d", reset)
	}
	// Configurable window.
	s2, tok2 := newSimUser(t, Options{Clock: clk, Window: time.Minute})
	_, _, reset = rlHeaders(t, get(t, s2, "/2/users/1/bookmarks", tok2))
	if reset != clk.Now().Add(time.Minute).Unix() {
		t.Fatalf("reset %d", reset)
	}
}

func TestOneUsersRequestsDoNotConsumeAnothers(t *testing.T) {
	clk := vclock()
	s, tokA := newSimUser(t, Options{Clock: clk, Limits: map[string]int{OpListBookmarks: 3}})
	s.AddUser("2", "bob")
	tokB := s.IssueToken("2")
	for range 3 {
		get(t, s, "/2/users/1/bookmarks", tokA)
	}
	if r := get(t, s, "/2/users/1/bookmarks", tokA); r.status != 429 {
		t.Fatalf("A: %d", r.status)
	}
	r := get(t, s, "/2/users/2/bookmarks", tokB)
	if _, rem, _ := rlHeaders(t, r); r.status != 200 || rem != 2 {
		t.Fatalf("B: %d remaining %d", r.status, rem)
	}
	// A second token of user A shares A's allowance.
	if r := get(t, s, "/2/users/1/bookmarks", s.IssueToken("1")); r.status != 429 {
		t.Fatalf("A's second token: %d", r.status)
	}
}

func TestPerAppLimitOnFolderOperations(t *testing.T) {
	clk := vclock()
	s, tokA := newSimUser(t, Options{Clock: clk, AppLimits: map[string]int{OpListFolders: 3}})
	s.AddUser("2", "bob")
	tokB := s.IssueToken("2")
	get(t, s, "/2/users/1/bookmarks/folders", tokA)
	get(t, s, "/2/users/1/bookmarks/folders", tokA)
	if r := get(t, s, "/2/users/2/bookmarks/folders", tokB); r.status != 200 {
		t.Fatalf("%d", r.status)
	}
	r := get(t, s, "/2/users/2/bookmarks/folders", tokB)
	if l, rem, _ := rlHeaders(t, r); r.status != 429 || l != 3 || rem != 0 {
		t.Fatalf("app limit: %d limit %d rem %d", r.status, l, rem)
	}
	// A different app (client) has its own allowance; the list has no app limit.
	accessC, _, _ := s.IssueTokenPair("other-app", "2")
	if r := get(t, s, "/2/users/2/bookmarks/folders", accessC); r.status != 200 {
		t.Fatalf("%d", r.status)
	}
	// Default per-app limit is 50 for both folder operations.
	s2, tok := newSimUser(t, Options{Clock: clk})
	s2.CreateFolder("1", "f", "F")
	var last *resp
	for range 51 {
		last = get(t, s2, "/2/users/1/bookmarks/folders/f", tok)
	}
	if last.status != 429 {
		t.Fatalf("%d", last.status)
	}
}

func TestLegacyRateLimitBody(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock(), LegacyRateLimitBody: true, Limits: map[string]int{OpListBookmarks: 1}})
	get(t, s, "/2/users/1/bookmarks", tok)
	r := get(t, s, "/2/users/1/bookmarks", tok)
	if r.status != 429 {
		t.Fatal(r.status)
	}
	jsonEqual(t, r.body, `{"errors":[{"code":88,"message":"Rate limit exceeded"}]}`)
}

// With rate limits off, the headers advertise a limit no client will reach,
// so that a client budgeting from the headers never waits either.
func TestDisableRateLimits(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock(), DisableRateLimits: true, Limits: map[string]int{OpListBookmarks: 2}})
	for range 10 {
		r := get(t, s, "/2/users/1/bookmarks", tok)
		if l, rem, _ := rlHeaders(t, r); r.status != 200 || l != unlimited || rem != unlimited {
			t.Fatalf("%d %d %d", r.status, l, rem)
		}
	}
	s.ResetRateLimits()
}

func TestMaxPageSizeReads18000PostsPerWindow(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 20000)
	got, _ := func() ([]string, int) {
		var ids []string
		tokn := ""
		for {
			v := q("max_results", "100")
			if tokn != "" {
				v.Set("pagination_token", tokn)
			}
			r := get(t, s, "/2/users/1/bookmarks?"+v.Encode(), tok)
			if r.status == 429 {
				return ids, 0
			}
			p := decodePage(t, r)
			ids = append(ids, p.ids()...)
			tokn = p.Meta.NextToken
		}
	}()
	if len(got) != 18000 {
		t.Fatalf("read %d posts before 429", len(got))
	}
}
