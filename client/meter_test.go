package client

import (
	"context"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

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
	m := NewMeter(0.001)
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
	want := Usage{UserID: "2", Operation: OpListBookmarks, Requests: 6, OK: 3, PostsReturned: 15, RateLimited: 1,
		RateLimitWaits: 1, Waited: lb.Waited, Retries: 1, Backoff: backoff, Errors: 2, USD: lb.USD}
	// The reset header is in whole seconds, so the wait is the minute, the
	// margin and what was left of the second.
	if lb.Waited < time.Minute+DefaultResetMargin || lb.Waited >= time.Minute+DefaultResetMargin+time.Second {
		t.Errorf("Waited %s", lb.Waited)
	}
	if lb != want {
		t.Errorf("list_bookmarks usage\n got %+v\nwant %+v", lb, want)
	}
	if math.Abs(lb.USD-15*0.001) > 1e-12 {
		t.Errorf("USD %v", lb.USD)
	}
	if gf := m.Usage("2", OpGetFolder); gf.PostsReturned != 2 || gf.Requests != 1 || gf.OK != 1 {
		t.Errorf("get_folder usage %+v", gf)
	}
	if lf := m.Usage("2", OpListFolders); lf.PostsReturned != 0 || lf.USD != 0 {
		t.Errorf("list_folders bills no posts: %+v", lf)
	}
	tot := m.Total()
	if tot.Requests != 10 || tot.OK != 7 || tot.PostsReturned != 17 || tot.Errors != 2 || math.Abs(tot.USD-17*0.001) > 1e-12 || tot.UserID != "" {
		t.Errorf("total %+v", tot)
	}
}

func TestMeter_DefaultRate(t *testing.T) {
	for _, r := range []float64{0, -1, math.NaN(), math.Inf(1)} {
		if got := NewMeter(r).USDPerPost(); got != DefaultUSDPerPost {
			t.Errorf("NewMeter(%v) rate %v", r, got)
		}
	}
	c, _ := New(nil)
	if c.Meter() == nil || c.Meter().USDPerPost() != 0.005 {
		t.Error("a client without WithMeter has no default meter")
	}
}

func TestMeter_IsSafeForConcurrentUseAcrossClients(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, pageBody(100, 2, "")) })
	m := NewMeter(DefaultUSDPerPost)
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
	if u := m.Usage(testUser, OpListBookmarks); u.Requests != 100 || u.PostsReturned != 200 || math.Abs(u.USD-1.0) > 1e-9 {
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
			writeJSON(w, 200, pageBody(100, 3, ""))
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
	if u.PostsReturned != 10 || u.PostsUnread != 90 || math.Abs(u.USD-10*DefaultUSDPerPost) > 1e-12 {
		t.Errorf("usage %+v; want 10 posts billed, 90 unread, USD 10 × rate", u)
	}
}
