package xsim

import (
	"cmp"
	"encoding/base32"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestListIsNewestBookmarkedFirst(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	a, b, c := s.NewPostID(), s.NewPostID(), s.NewPostID()
	for _, id := range []string{a, b, c} {
		if err := s.Bookmark("1", id); err != nil {
			t.Fatal(err)
		}
	}
	p, _ := listPage(t, s, "1", tok, nil)
	equalIDs(t, p.ids(), []string{c, b, a})
	equalIDs(t, s.Bookmarks("1"), []string{c, b, a})
}

func TestRebookmarkMovesPostToTop(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	a, b, c := s.NewPostID(), s.NewPostID(), s.NewPostID()
	for _, id := range []string{a, b, c} {
		_ = s.Bookmark("1", id)
	}
	_ = s.Bookmark("1", a) // in the app
	p, _ := listPage(t, s, "1", tok, nil)
	equalIDs(t, p.ids(), []string{a, c, b})
	// and over the API
	if r := postJSON(t, s, "/2/users/1/bookmarks", tok, `{"tweet_id":"`+b+`"}`); r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	p, _ = listPage(t, s, "1", tok, nil)
	equalIDs(t, p.ids(), []string{b, a, c})
}

func TestRemovalShiftsRestUp(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	ids := s.SeedBookmarks("1", 4) // newest first: d c b a
	if err := s.Unbookmark("1", ids[1]); err != nil {
		t.Fatal(err)
	}
	if err := s.Unbookmark("1", ids[1]); err != ErrNotBookmarked {
		t.Fatalf("second unbookmark: %v", err)
	}
	p, _ := listPage(t, s, "1", tok, q("max_results", "2"))
	equalIDs(t, p.ids(), []string{ids[0], ids[2]})
	p2, _ := listPage(t, s, "1", tok, q("max_results", "2", "pagination_token", p.Meta.NextToken))
	equalIDs(t, p2.ids(), []string{ids[3]})
}

func TestOrderIsByBookmarkTimeNotPostID(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	old := "20"                    // a post from 2006
	newer := "1900000000000000000" // a recent snowflake
	_ = s.Bookmark("1", newer)
	_ = s.Bookmark("1", old)
	p, _ := listPage(t, s, "1", tok, nil)
	equalIDs(t, p.ids(), []string{old, newer})

	// Seeded ids are not sorted in either direction.
	seeded := s.SeedBookmarks("1", 50)
	nums := make([]uint64, len(seeded))
	for i, id := range seeded {
		nums[i], _ = strconv.ParseUint(id, 10, 64)
	}
	if slices.IsSorted(nums) || slices.IsSortedFunc(nums, func(a, b uint64) int { return cmp.Compare(b, a) }) {
		t.Fatalf("seeded ids are sorted: %v", seeded)
	}
	// Bookmark times follow list order, strictly.
	list := s.Bookmarks("1")
	for i := 1; i < len(list); i++ {
		ti, _ := s.BookmarkedAt("1", list[i-1])
		tj, _ := s.BookmarkedAt("1", list[i])
		if !ti.After(tj) {
			t.Fatalf("bookmark times not strictly decreasing at %d: %v %v", i, ti, tj)
		}
	}
}

func TestMaxResultsOneAnswersIsThereAnythingNew(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	ids := s.SeedBookmarks("1", 50)
	p, _ := listPage(t, s, "1", tok, q("max_results", "1"))
	if *p.Meta.ResultCount != 1 || p.ids()[0] != ids[0] {
		t.Fatalf("got %v, want newest %s", p.ids(), ids[0])
	}
	if got := s.Usage("1")[OpListBookmarks].PostsReturned; got != 1 {
		t.Fatalf("billed %d posts, want 1", got)
	}
}

func TestMaxResultsDefaultIsTen(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	ids := s.SeedBookmarks("1", 25)
	p, _ := listPage(t, s, "1", tok, nil)
	equalIDs(t, p.ids(), ids[:10])
}

func TestMaxResultsOutOfRangeIs400(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 5)
	for _, v := range []string{"0", "101", "abc", "-1", "", "1.5"} {
		r := get(t, s, "/2/users/1/bookmarks?max_results="+v, tok)
		m := wantProblem(t, r, 400, "Invalid Request")
		if m["type"] != "https://api.x.com/2/problems/invalid-request" {
			t.Fatalf("type %v", m["type"])
		}
		if !strings.Contains(m["detail"].(string), "max_results") {
			t.Fatalf("detail does not name the parameter: %v", m["detail"])
		}
	}
	for _, v := range []string{"1", "100"} {
		if r := get(t, s, "/2/users/1/bookmarks?max_results="+v, tok); r.status != 200 {
			t.Fatalf("max_results=%s: %d", v, r.status)
		}
	}
	if u := s.Usage("1")[OpListBookmarks]; u.ByStatus[400] != 6 || u.PostsReturned != 6 {
		t.Fatalf("usage %+v", u)
	}
}

func TestLastPageHasNoNextToken(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	ids := s.SeedBookmarks("1", 25)
	got, pages := walk(t, s, "1", tok, 10)
	equalIDs(t, got, ids)
	if len(pages) != 3 || len(pages[2].Data) != 5 || pages[2].Meta.NextToken != "" || pages[1].Meta.NextToken == "" {
		t.Fatalf("pages: %d", len(pages))
	}
	// An exact multiple ends without an empty extra page.
	s2, tok2 := newSimUser(t, Options{Clock: vclock()})
	ids2 := s2.SeedBookmarks("1", 20)
	got2, pages2 := walk(t, s2, "1", tok2, 10)
	equalIDs(t, got2, ids2)
	if len(pages2) != 2 {
		t.Fatalf("%d pages for 20 posts at 10", len(pages2))
	}
}

func TestPreviousTokenWalksBackTowardNewest(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	ids := s.SeedBookmarks("1", 30)
	p1, _ := listPage(t, s, "1", tok, q("max_results", "10"))
	if p1.Meta.PreviousToken != "" {
		t.Fatal("first page has a previous_token")
	}
	p2, _ := listPage(t, s, "1", tok, q("max_results", "10", "pagination_token", p1.Meta.NextToken))
	if p2.Meta.PreviousToken == "" {
		t.Fatal("second page has no previous_token")
	}
	back, _ := listPage(t, s, "1", tok, q("max_results", "10", "pagination_token", p2.Meta.PreviousToken))
	equalIDs(t, back.ids(), ids[:10])
	equalIDs(t, p2.ids(), ids[10:20])
}

func TestPaginationTokenIsOpaqueBase32Hex(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 30)
	p, _ := listPage(t, s, "1", tok, q("max_results", "5"))
	nt := p.Meta.NextToken
	if !regexp.MustCompile(`^[0-9A-V]+$`).MatchString(nt) {
		t.Fatalf("token %q is not base32hex", nt)
	}
	if _, err := base32.HexEncoding.WithPadding(base32.NoPadding).DecodeString(nt); err != nil {
		t.Fatal(err)
	}
	// Consecutive positions do not give visibly related tokens.
	p2, _ := listPage(t, s, "1", tok, q("max_results", "5", "pagination_token", nt))
	if p2.Meta.NextToken[:4] == nt[:4] {
		t.Fatalf("tokens %s and %s look sequential", nt, p2.Meta.NextToken)
	}
}

func TestGarbagePaginationTokenIs400(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 30)
	s.SeedBookmarks("2", 30)
	tok2 := s.IssueToken("2")
	p2, _ := listPage(t, s, "2", tok2, q("max_results", "5"))
	s.CreateFolder("1", "f1", "F")
	for i := range 20 {
		s.AddToFolder("1", "f1", strconv.Itoa(1000+i))
	}
	fr := get(t, s, "/2/users/1/bookmarks/folders/f1?max_results=5", tok)
	folderTok := decodePage(t, fr).Meta.NextToken
	for _, bad := range []string{"zzz", "AAAA", "0123456789ABCDEFGHIJ", p2.Meta.NextToken, folderTok} {
		r := get(t, s, "/2/users/1/bookmarks?pagination_token="+bad, tok)
		m := wantProblem(t, r, 400, "Invalid Request")
		if !strings.Contains(m["detail"].(string), "pagination_token") {
			t.Fatalf("detail: %v", m["detail"])
		}
	}
}

func TestStaleTokenReturnsShiftedPostsWithoutError(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	ids := s.SeedBookmarks("1", 30)
	p1, _ := listPage(t, s, "1", tok, q("max_results", "10"))
	// The user saves three posts; a token kept from before now points into a
	// list shifted down by three: the last three posts of page 1 come again.
	for range 3 {
		_ = s.Bookmark("1", s.NewPostID())
	}
	p2, _ := listPage(t, s, "1", tok, q("max_results", "10", "pagination_token", p1.Meta.NextToken))
	equalIDs(t, p2.ids(), ids[7:17])
	if got := s.Usage("1")[OpListBookmarks].PostsReturned; got != 20 {
		t.Fatalf("billed %d, want 20 (duplicates are billed)", got)
	}
}

func TestStaleTokenAfterRemovalSkipsPosts(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	ids := s.SeedBookmarks("1", 30)
	p1, _ := listPage(t, s, "1", tok, q("max_results", "10"))
	for _, id := range ids[:3] {
		_ = s.Unbookmark("1", id)
	}
	p2, _ := listPage(t, s, "1", tok, q("max_results", "10", "pagination_token", p1.Meta.NextToken))
	equalIDs(t, p2.ids(), ids[13:23]) // ids[10:13] are never seen
}

func TestStaleTokenPastTheEndIsAnEmptyPage(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	ids := s.SeedBookmarks("1", 30)
	p, _ := listPage(t, s, "1", tok, q("max_results", "25"))
	for _, id := range ids[:20] {
		_ = s.Unbookmark("1", id)
	}
	p2, r := listPage(t, s, "1", tok, q("max_results", "25", "pagination_token", p.Meta.NextToken))
	if len(p2.Data) != 0 || p2.Meta.NextToken != "" || strings.Contains(string(r.body), `"data"`) {
		t.Fatalf("%s", r.body)
	}
}

func TestEmptyListHasNoDataAndZeroCount(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	p, r := listPage(t, s, "1", tok, nil)
	if len(p.Data) != 0 || p.Meta.NextToken != "" || p.Meta.PreviousToken != "" {
		t.Fatalf("%s", r.body)
	}
	jsonEqual(t, r.body, `{"meta":{"result_count":0}}`)
}

func TestResultCountEqualsPostsBilled(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 47)
	_, pages := walk(t, s, "1", tok, 20)
	sum := 0
	for _, p := range pages {
		sum += *p.Meta.ResultCount
	}
	u := s.Usage("1")[OpListBookmarks]
	if sum != 47 || u.PostsReturned != 47 || u.Requests != 3 || u.OK != 3 || s.TotalPostsReturned() != 47 {
		t.Fatalf("sum %d usage %+v total %d", sum, u, s.TotalPostsReturned())
	}
	if u.USD < 0.2349 || u.USD > 0.2351 {
		t.Fatalf("USD %v, want 47 x 0.005", u.USD)
	}
	s.ResetUsage()
	if s.TotalPostsReturned() != 0 || len(s.Usage("1")) != 0 {
		t.Fatal("ResetUsage did not reset")
	}
}

func TestPageSizeScheduleBillsFloorKOverPPlusOneTimesP(t *testing.T) {
	// Document Part 4.1 rule 4: collecting k new posts in pages of p, stopping
	// at the first known id, bills (floor(k/p)+1) x p.
	s, tok := newSimUser(t, Options{Clock: vclock()})
	s.SeedBookmarks("1", 100)
	known := s.Bookmarks("1")[0]
	s.SeedBookmarks("1", 23) // k = 23 new
	p := 5
	tokn := ""
	for {
		v := q("max_results", strconv.Itoa(p))
		if tokn != "" {
			v.Set("pagination_token", tokn)
		}
		pg, _ := listPage(t, s, "1", tok, v)
		if slices.Contains(pg.ids(), known) {
			break
		}
		tokn = pg.Meta.NextToken
	}
	if got := s.Usage("1")[OpListBookmarks].PostsReturned; got != (23/p+1)*p {
		t.Fatalf("billed %d, want %d", got, (23/p+1)*p)
	}
}
