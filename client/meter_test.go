package client

import (
	"context"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/rs/zerolog"
)

// x are X's rates.
var x = billing.DefaultRates()

func TestMeter_CountsRequestsPostsWaitsAndCostPerUserAndOperation(t *testing.T) {
	var clk *recClock
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch {
		case r.URL.Path == "/2/users/me":
			writeJSON(w, 200, `{"data":{"id":"1","name":"a","username":"a"}}`)
		case strings.HasSuffix(r.URL.Path, "/folders"):
			writeJSON(w, 200, `{"data":[{"id":"9","name":"f"}],"meta":{"result_count":1}}`)
		case strings.Contains(r.URL.Path, "/folders/"):
			writeJSON(w, 200, `{"data":[{"id":"5"},{"id":"6"}],"meta":{"result_count":2}}`)
		case r.Method == "POST":
			writeJSON(w, 200, `{"data":{"bookmarked":true}}`)
		case r.URL.Query().Get("pagination_token") == "AGAIN" && n%2 == 0:
			writeJSON(w, 503, bodyServer)
		case r.URL.Query().Get("pagination_token") == "LIMIT" && n%2 == 0:
			setRate(w, 180, 0, clk.Now().Add(time.Minute))
			writeJSON(w, 429, bodyTooMany)
		case r.URL.Query().Get("pagination_token") == "GONE":
			writeJSON(w, 404, bodyNotFound)
		default:
			writeJSON(w, 200, pageBody(100, 5, "NEXT"))
		}
	})
	rates := x
	rates.Post = 0.001
	m := billing.NewMeter(rates)
	c, clk0 := newTestClient(t, ts, nil, WithMeter(m))
	clk = clk0
	ctx := context.Background()
	mustOK := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := c.ListBookmarks(ctx, "2", ListOptions{}) // request 1: 5 posts
	mustOK(err)
	_, _, err = c.ListBookmarks(ctx, "2", ListOptions{PageOptions: PageOptions{PaginationToken: "AGAIN"}}) // 503 then 5 posts
	mustOK(err)
	_, _, err = c.ListBookmarks(ctx, "2", ListOptions{PageOptions: PageOptions{PaginationToken: "LIMIT"}}) // 429 then 5 posts
	mustOK(err)
	_, _, err = c.ListBookmarks(ctx, "2", ListOptions{PageOptions: PageOptions{PaginationToken: "GONE"}}) // 404
	if err == nil {
		t.Fatal("404 expected")
	}
	_, _, err = c.GetFolder(ctx, "2", "9", PageOptions{})
	mustOK(err)
	_, _, err = c.ListFolders(ctx, "2", PageOptions{})
	mustOK(err)
	_, _, err = c.AddBookmark(ctx, "1", "5")
	mustOK(err)
	_, _, err = c.Me(ctx)
	mustOK(err)

	rows := m.Snapshot()
	var keys []string
	for _, u := range rows {
		keys = append(keys, u.UserID+"/"+string(u.Operation))
	}
	if got := strings.Join(keys, " "); got != "/users_me 1/add_bookmark 2/get_folder 2/list_bookmarks 2/list_folders" {
		t.Errorf("snapshot order: %s", got)
	}
	lb := m.Usage("2", OpListBookmarks)
	backoff := clk.Sleeps()[0]
	// The three pages hold the same 5 posts: billed once in the UTC day.
	want := billing.Usage{UserID: "2", Operation: OpListBookmarks, Requests: 6, OK: 3, PostsReturned: 15, PostsBilled: 5, RateLimited: 1,
		RateLimitWaits: 1, Waited: lb.Waited, Retries: 1, Backoff: backoff, Errors: 2, PostsUSD: lb.PostsUSD, USD: lb.USD}
	// The reset header is in whole seconds, so the wait is the minute, the
	// margin and what was left of the second.
	if lb.Waited < time.Minute+DefaultResetMargin || lb.Waited >= time.Minute+DefaultResetMargin+time.Second {
		t.Errorf("Waited %s", lb.Waited)
	}
	if lb != want {
		t.Errorf("list_bookmarks usage\n got %+v\nwant %+v", lb, want)
	}
	if math.Abs(lb.USD-5*0.001) > 1e-12 {
		t.Errorf("USD %v", lb.USD)
	}
	if gf := m.Usage("2", OpGetFolder); gf.PostsReturned != 2 || gf.PostsBilled != 2 || gf.Requests != 1 || gf.OK != 1 {
		t.Errorf("get_folder usage %+v", gf)
	}
	if me := m.Usage("", OpUsersMe); me.UsersReturned != 1 || me.UsersBilled != 1 || me.USD != x.User {
		t.Errorf("users_me bills its user: %+v", me)
	}
	if lf := m.Usage("2", OpListFolders); lf.PostsReturned != 0 || lf.USD != 0 {
		t.Errorf("list_folders bills no posts: %+v", lf)
	}
	// X bills a bookmark write per request.
	if add := m.Usage("1", OpAddBookmark); add.WritesBilled != 1 || add.WritesUSD != x.Write || add.USD != x.Write {
		t.Errorf("add_bookmark bills its request: %+v", add)
	}
	tot := m.Total()
	if tot.Requests != 10 || tot.OK != 7 || tot.PostsReturned != 17 || tot.PostsBilled != 7 || tot.Errors != 2 ||
		math.Abs(tot.USD-(7*0.001+x.User+x.Write)) > 1e-12 || tot.UserID != "" {
		t.Errorf("total %+v", tot)
	}
}

// A client without WithMeter has a meter of its own, at X's rates.
func TestMeter_AClientHasOneAtXsRates(t *testing.T) {
	c, _ := New(nil)
	if c.Meter() == nil || c.Meter().Rates() != billing.DefaultRates() {
		t.Error("a client without WithMeter has no meter at X's rates")
	}
}

func TestMeter_IsSafeForConcurrentUseAcrossClients(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, pageBody(100, 2, "")) })
	m := billing.NewMeter(billing.DefaultRates())
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		c, _ := newTestClient(t, ts, nil, WithMeter(m))
		wg.Go(func() {
			for i := 0; i < 25; i++ {
				if _, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil {
					t.Error(err)
				}
				_ = m.Snapshot()
			}
		})
	}
	wg.Wait()
	if u := m.Usage(testUser, OpListBookmarks); u.Requests != 100 || u.PostsReturned != 200 || u.PostsBilled != 2 || math.Abs(u.USD-2*x.Post) > 1e-9 {
		t.Errorf("usage %+v", u)
	}
}

// Issue 13.3: estimated USD is the posts billed times the rate. A refused
// page with no posts costs nothing (it was priced as a full page before),
// and a page that could not be read is counted in PostsUnread, an upper
// bound, but not priced as billed.
func TestMeter_USDIsPostsBilledTimesTheRate(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.URL.Query().Get("pagination_token") {
		case "SHAPE":
			writeJSON(w, 200, `{"data":[]}`) // no meta: refused, no posts
		case "CUT":
			if n%2 == 1 {
				writeJSON(w, 200, `{"data":[{"id":"1","te`)
				return
			}
			writeJSON(w, 200, pageBody(200, 3, ""))
		default:
			writeJSON(w, 200, pageBody(100, 7, ""))
		}
	})
	c, _ := newTestClient(t, ts, nil)
	ctx := context.Background()
	page := func(token string) ListOptions {
		return ListOptions{PageOptions: PageOptions{MaxResults: 90, PaginationToken: token}}
	}
	_, _, _ = c.ListBookmarks(ctx, testUser, page(""))
	if _, _, err := c.ListBookmarks(ctx, testUser, page("SHAPE")); err == nil {
		t.Fatal("a page without meta was taken")
	}
	if _, _, err := c.ListBookmarks(ctx, testUser, page("CUT")); err != nil {
		t.Fatal(err)
	}
	u := c.Meter().Usage(testUser, OpListBookmarks)
	if u.PostsReturned != 10 || u.PostsBilled != 10 || u.PostsUnread != 90 || math.Abs(u.USD-10*x.Post) > 1e-12 {
		t.Errorf("usage %+v; want 10 posts billed, 90 unread, USD 10 × rate", u)
	}
}

// X bills a resource once per UTC day: the same posts read again that day
// are not billed again, and are again after midnight UTC.
func TestMeter_BillsAResourceOncePerUTCDay(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, pageBody(100, 3, "")) })
	c, clk := newTestClient(t, ts, nil)
	clk.Set(time.Date(2026, 1, 15, 23, 0, 0, 0, time.UTC))
	read := func() billing.Usage {
		t.Helper()
		if _, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil {
			t.Fatal(err)
		}
		return c.Meter().Usage(testUser, OpListBookmarks)
	}
	read()
	clk.Advance(59 * time.Minute)
	if u := read(); u.PostsReturned != 6 || u.PostsBilled != 3 {
		t.Fatalf("same UTC day: %d returned, %d billed; want 6, 3", u.PostsReturned, u.PostsBilled)
	}
	clk.Advance(2 * time.Minute) // 00:01 the next day
	if u := read(); u.PostsReturned != 9 || u.PostsBilled != 6 {
		t.Fatalf("next UTC day: %d returned, %d billed; want 9, 6", u.PostsReturned, u.PostsBilled)
	}
	day, posts, _ := c.Meter().BilledToday(testUser)
	if day != "2026-01-16" || posts.Len() != 3 {
		t.Errorf("ledger %s %v", day, posts.IDs())
	}
}

// Expanded objects of billed types are billed (X's own simulator bills
// them; X does not say): referenced posts at the post rate, authors at the
// user rate. Media are not a billed type.
func TestMeter_BillsExpandedPostsAndUsersAtTheirRates(t *testing.T) {
	body := `{"data":[{"id":"10","author_id":"7","referenced_tweets":[{"type":"quoted","id":"11"}],"attachments":{"media_keys":["3_1"]}},{"id":"12","author_id":"7"}],
		"includes":{"users":[{"id":"7","name":"A","username":"a"},{"id":"8","name":"B","username":"b"}],"media":[{"media_key":"3_1","type":"photo"}],
		"tweets":[{"id":"11","author_id":"8","text":"quoted"}]},"meta":{"result_count":2}}`
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, body) })
	m := billing.NewMeter(billing.Rates{Post: 0.005, OwnedPost: 0.001, User: 0.01})
	c, _ := newTestClient(t, ts, nil, WithMeter(m))
	page, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.PostsReturned != 3 || page.Expanded.Posts["11"] == nil || page.Expanded.Users["8"].Username != "b" || page.Expanded.Media["3_1"].Type != "photo" {
		t.Fatalf("PostsReturned %d, expanded %+v", resp.PostsReturned, page.Expanded)
	}
	u := m.Usage(testUser, OpListBookmarks)
	if u.PostsReturned != 3 || u.PostsBilled != 3 || u.UsersReturned != 2 || u.UsersBilled != 2 || u.MediaReturned != 1 {
		t.Fatalf("usage %+v", u)
	}
	if math.Abs(u.PostsUSD-0.015) > 1e-12 || math.Abs(u.UsersUSD-0.02) > 1e-12 || math.Abs(u.USD-0.035) > 1e-12 {
		t.Errorf("USD %v + %v = %v; want 0.015 + 0.02", u.PostsUSD, u.UsersUSD, u.USD)
	}
}

// Owned reads: the app owner's own bookmarks are priced at the owned-read
// rate; a folder read is not an owned-read endpoint.
func TestMeter_OwnedReadsPriceTheOwnersBookmarkPostsOnly(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		if strings.Contains(r.URL.Path, "/folders/") {
			writeJSON(w, 200, `{"data":[{"id":"50"},{"id":"51"}],"meta":{"result_count":2}}`)
			return
		}
		writeJSON(w, 200, pageBody(100, 4, ""))
	})
	m := billing.NewMeter(billing.DefaultRates())
	m.SetOwnedReads(testUser, true)
	c, _ := newTestClient(t, ts, nil, WithMeter(m))
	if _, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.GetFolder(context.Background(), testUser, "9", PageOptions{}); err != nil {
		t.Fatal(err)
	}
	if u := m.Usage(testUser, OpListBookmarks); !u.OwnedReads || math.Abs(u.USD-4*x.OwnedPost) > 1e-12 {
		t.Errorf("list_bookmarks %+v; want 4 posts at the owned rate", u)
	}
	if u := m.Usage(testUser, OpGetFolder); u.OwnedReads || math.Abs(u.USD-2*x.Post) > 1e-12 {
		t.Errorf("get_folder %+v; want 2 posts at the post rate", u)
	}
}

// A later meter of the same user continues the day an earlier one recorded
// (a second sync the same day); a ledger of an earlier day is ignored.
func TestMeter_RestoreBilledContinuesTheSameUTCDay(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, pageBody(100, 3, "")) })
	c, clk := newTestClient(t, ts, nil)
	c.Meter().RestoreBilled(testUser, clk.Now().UTC().Format(time.DateOnly), []string{"100", "99", "5"}, []string{"7"})
	if _, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if u := c.Meter().Usage(testUser, OpListBookmarks); u.PostsReturned != 3 || u.PostsBilled != 1 {
		t.Errorf("restored today: %+v; want 1 of 3 billed", u)
	}
	c2, clk2 := newTestClient(t, ts, nil)
	c2.Meter().RestoreBilled(testUser, clk2.Now().AddDate(0, 0, -1).UTC().Format(time.DateOnly), []string{"100", "99", "98"}, nil)
	if _, _, err := c2.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil {
		t.Fatal(err)
	}
	if u := c2.Meter().Usage(testUser, OpListBookmarks); u.PostsBilled != 3 {
		t.Errorf("restored yesterday: %+v; want all 3 billed", u)
	}
}

// Issue 15: what is billed is what the body holds, never meta.result_count
// (-5 gave negative posts and USD, a huge count 9.2e18 posts); a count that
// disagrees is reported.
func TestMeter_BillsWhatTheBodyHoldsNotItsResultCount(t *testing.T) {
	for _, count := range []string{"-5", "9223372036854775807", "0", "100"} {
		body := `{"data":[{"id":"1"},{"id":"2"}],"meta":{"result_count":` + count + `}}`
		ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, body) })
		var logs strings.Builder
		c, _ := newTestClient(t, ts, nil, WithLogger(zerolog.New(&logs)))
		_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
		if err != nil {
			t.Fatalf("result_count %s: %v", count, err)
		}
		u := c.Meter().Usage(testUser, OpListBookmarks)
		if resp.PostsReturned != 2 || u.PostsReturned != 2 || u.PostsBilled != 2 || u.CountMismatches != 1 || math.Abs(u.USD-2*x.Post) > 1e-12 {
			t.Errorf("result_count %s: usage %+v", count, u)
		}
		if !strings.Contains(logs.String(), "meta.result_count is "+count+" but the page holds 2 posts") {
			t.Errorf("result_count %s: no warning: %s", count, logs.String())
		}
	}
}

// A folder page is billed for the ids it holds too, and a result_count
// that disagrees is reported; a folder page without one is not a mismatch.
func TestMeter_FolderPagesBillTheirIDsNotTheirResultCount(t *testing.T) {
	for body, mismatches := range map[string]int{
		`{"data":[{"id":"5"},{"id":"6"}],"meta":{"result_count":-5}}`: 1,
		`{"data":[{"id":"5"},{"id":"6"}],"meta":{"result_count":2}}`:  0,
		`{"data":[{"id":"5"},{"id":"6"}],"meta":{}}`:                  0,
	} {
		ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, body) })
		c, _ := newTestClient(t, ts, nil)
		if _, _, err := c.GetFolder(context.Background(), testUser, "9", PageOptions{}); err != nil {
			t.Fatal(err)
		}
		if u := c.Meter().Usage(testUser, OpGetFolder); u.PostsReturned != 2 || u.PostsBilled != 2 || u.CountMismatches != mismatches {
			t.Errorf("%s: usage %+v", body, u)
		}
	}
}
