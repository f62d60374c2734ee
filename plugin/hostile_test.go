package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cloudquery/plugin-sdk/v4/message"
	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/spec"
)

// A broken or hostile API (issue 15): each test serves one misbehaviour to
// a whole sync, and checks that the walk fails with a clear error and that
// the account's state is not written, so that the next sync reads the list
// again from the same place.

// hostileAPI serves the bookmarks of user 1001 with page, called with the
// request's number (from 1), pagination token and max_results; folders are
// an empty list. Past 50 bookmark requests it answers 500, so that a
// sync that does not stop by itself fails rather than hang the test.
type hostileAPI struct {
	page func(n int, token string, size int) (status int, body string)
	// folders, when set, serves the folder list (request n from 1).
	folders  func(n int) string
	mu       sync.Mutex
	requests int
}

func (h *hostileAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	h.mu.Lock()
	h.requests++
	n := h.requests
	h.mu.Unlock()
	if strings.HasSuffix(r.URL.Path, "/folders") && h.folders != nil && n <= 50 {
		_, _ = w.Write([]byte(h.folders(n)))
		return
	}
	if !strings.HasSuffix(r.URL.Path, "/bookmarks") {
		_, _ = w.Write([]byte(`{"meta":{"result_count":0}}`))
		return
	}
	if n > 50 {
		w.WriteHeader(500)
		return
	}
	size, _ := strconv.Atoi(r.URL.Query().Get("max_results"))
	status, body := h.page(n, r.URL.Query().Get("pagination_token"), size)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(body))
}

func (h *hostileAPI) Requests() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.requests
}

// postsPage is a bookmarks page of ids, with next as its next_token.
func postsPage(ids []string, next string) string {
	posts := make([]map[string]any, len(ids))
	for i, id := range ids {
		posts[i] = map[string]any{"id": id, "text": "post " + id, "edit_history_tweet_ids": []string{id}}
	}
	meta := map[string]any{"result_count": len(ids)}
	if next != "" {
		meta["next_token"] = next
	}
	b, _ := json.Marshal(map[string]any{"data": posts, "meta": meta})
	return string(b)
}

// listIDs are n post ids, newest first.
func listIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = strconv.Itoa(1880000000000000000 + n - i)
	}
	return ids
}

// servedList serves ids with offset tokens ("o<offset>"), letting edit
// change each page.
func servedList(ids []string, edit func(n int, page []string) []string) func(n int, token string, size int) (int, string) {
	return func(n int, token string, size int) (int, string) {
		off, _ := strconv.Atoi(strings.TrimPrefix(token, "o"))
		end := min(off+size, len(ids))
		page := append([]string(nil), ids[off:end]...)
		next := ""
		if end < len(ids) {
			next = "o" + strconv.Itoa(end)
		}
		if edit != nil {
			page = edit(n, page)
		}
		return 200, postsPage(page, next)
	}
}

type hostileResult struct {
	failure string            // x_api_usage.failure of list_bookmarks
	state   map[string]string // the committed state
	rows    []string          // x_bookmarks post ids
}

// hostileSync runs one sync of user 1001's bookmarks against h; extra is
// added to the spec.
func hostileSync(t *testing.T, h *hostileAPI, store *memstate.Store, extra map[string]any) hostileResult {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	spec := map[string]any{"base_url": ts.URL, "max_attempts": 1, "retry_budget": "0s",
		"accounts": []map[string]any{{"user_id": "1001", "access_token": "token-of-user-1001"}}}
	for k, v := range extra {
		spec[k] = v
	}
	specJSON, _ := json.Marshal(spec)
	p := New(WithState(store), WithClock(clock.NewVirtual(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))))
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"x_bookmarks", "x_api_usage"}})
	if err != nil {
		t.Fatal(err)
	}
	res := hostileResult{state: store.Committed()}
	for _, m := range msgs {
		ins, ok := m.(*message.SyncInsert)
		if !ok {
			continue
		}
		rec := ins.Record
		col := func(name string) *array.String { return rec.Column(rec.Schema().FieldIndices(name)[0]).(*array.String) }
		switch ins.GetTable().Name {
		case "x_api_usage":
			ops, failures := col("operation"), col("failure")
			for i := range int(rec.NumRows()) {
				if ops.Value(i) == "list_bookmarks" && failures.IsValid(i) {
					res.failure = failures.Value(i)
				}
			}
		case "x_bookmarks":
			ids := col("post_id")
			for i := range ids.Len() {
				res.rows = append(res.rows, ids.Value(i))
			}
		}
	}
	return res
}

func mustNotAdvance(t *testing.T, r hostileResult, want string) {
	t.Helper()
	if !strings.Contains(r.failure, "bookmarks walk failed (state not advanced): ") || !strings.Contains(r.failure, want) {
		t.Errorf("failure %q, want it to contain %q", r.failure, want)
	}
	if v, ok := r.state["x_bookmarks/1001"]; ok {
		t.Errorf("the walk's state was written: %.80s", v)
	}
}

// Every page returns the same 90 posts and a next_token that leads to the
// top: the walk stops at the second page, where it billed without end.
func TestSyncStopsAnAPIThatLeadsBackToTheTop(t *testing.T) {
	top := listIDs(90)
	h := &hostileAPI{page: func(n int, _ string, _ int) (int, string) { return 200, postsPage(top, fmt.Sprintf("TOP%d", n)) }}
	r := hostileSync(t, h, memstate.New(), nil)
	mustNotAdvance(t, r, "the API led the walk back to posts it had already read: page 2 held nothing but posts read earlier in this walk (90 of them")
	if n := h.Requests(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
	if len(r.rows) != 90 {
		t.Errorf("%d rows, want the 90 posts once", len(r.rows))
	}
}

// A page that holds a post twice is broken, not the list shifting: taken
// for a shift, its walk's state was committed and three syncs later the
// archive held 125 of 250 posts.
func TestSyncRefusesAPageThatRepeatsAPost(t *testing.T) {
	h := &hostileAPI{page: servedList(listIDs(250), func(n int, page []string) []string {
		if n == 2 && len(page) > 3 {
			page[3] = page[1]
		}
		return page
	})}
	store := memstate.New()
	r := hostileSync(t, h, store, nil)
	mustNotAdvance(t, r, "x api: list_bookmarks: 200 response: body was valid JSON but not what this operation returns: data[3].id "+listIDs(250)[91]+" repeats data[1]")
	h.page = servedList(listIDs(250), nil)
	if r = hostileSync(t, h, store, nil); r.failure != "" || len(r.rows) != 250 {
		t.Errorf("the next sync, served well: failure %q, %d rows", r.failure, len(r.rows))
	}
}

// Ids that are not X ids are refused with their page: none is written.
func TestSyncRefusesIDsThatAreNotXIDs(t *testing.T) {
	for _, bad := range []string{"abc", "-1", "../../etc/passwd", strings.Repeat("9", 200), "007"} {
		h := &hostileAPI{page: servedList(listIDs(20), func(n int, page []string) []string {
			page[5] = bad
			return page
		})}
		r := hostileSync(t, h, memstate.New(), nil)
		mustNotAdvance(t, r, "data[5]: id ")
		if !strings.Contains(r.failure, "is not an X id (must be a decimal string of 1 to 19 digits without a leading zero)") {
			t.Errorf("%q: failure %q", bad, r.failure)
		}
		if len(r.rows) != 0 {
			t.Errorf("%q: rows written: %v", bad, r.rows)
		}
	}
}

// A server that accepts the request and never answers holds the walk for
// header_timeout, not until the sync is killed.
func TestSyncEndsWhenTheAPINeverAnswers(t *testing.T) {
	h := &hostileAPI{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/bookmarks") {
			<-r.Context().Done()
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	specJSON, _ := json.Marshal(map[string]any{"base_url": ts.URL, "max_attempts": 1, "retry_budget": "0s", "header_timeout": "1s",
		"accounts": []map[string]any{{"user_id": "1001", "access_token": "token-of-user-1001"}}})
	p := New(WithState(memstate.New()))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"x_bookmarks"}})
	if err != nil || ctx.Err() != nil {
		t.Fatalf("%v %v", err, ctx.Err())
	}
	errs := syncErrors(msgs)
	if len(errs) != 1 || !strings.Contains(errs[0], "x api: list_bookmarks: request failed after 1 attempt(s)") ||
		!strings.Contains(errs[0], "no response within 1s of sending the request (header timeout)") {
		t.Errorf("sync errors %q", errs)
	}
}

// The folder list is read whole at every sync: a server whose next_token
// leads back to folders already listed would keep it reading (and waiting
// for the window) for ever.
func TestSyncStopsAFolderListThatGoesRoundInCircles(t *testing.T) {
	h := &hostileAPI{folders: func(n int) string {
		return fmt.Sprintf(`{"data":[{"id":"77","name":"reading"}],"meta":{"result_count":1,"next_token":"F%d"}}`, n)
	}}
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	specJSON, _ := json.Marshal(map[string]any{"base_url": ts.URL, "max_attempts": 1,
		"accounts": []map[string]any{{"user_id": "1001", "access_token": "token-of-user-1001"}}})
	p := New(WithState(memstate.New()), WithClock(clock.NewVirtual(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))))
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"x_bookmark_folders"}})
	if err != nil {
		t.Fatal(err)
	}
	errs := syncErrors(msgs)
	if len(errs) != 1 || !strings.Contains(errs[0], "listing bookmark folders: the API led the folder list round in circles: page 2 holds only folders already listed") {
		t.Errorf("sync errors %q", errs)
	}
	if n := h.Requests(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}

// A server that sends one new folder per page, each with a fresh
// next_token, is never caught going round in circles, and folder requests
// bill no post: the folder list stops at its page bound and fails, emitting
// the folders of the last sync, and its memory stays as it was.
func TestSyncStopsAFolderListThatNeverEnds(t *testing.T) {
	var mu sync.Mutex
	requests := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !strings.HasSuffix(r.URL.Path, "/folders") { // a folder's posts: none
			_, _ = w.Write([]byte(`{"meta":{"result_count":0}}`))
			return
		}
		mu.Lock()
		requests++
		n := requests
		mu.Unlock()
		if n > 10*resources.MaxFolderPages { // a listing that does not stop fails the test rather than hang it
			w.WriteHeader(500)
			return
		}
		fmt.Fprintf(w, `{"data":[{"id":"%d","name":"folder %d"}],"meta":{"result_count":1,"next_token":"F%d"}}`, 1000+n, n, n)
	}))
	t.Cleanup(ts.Close)
	remembered := `[{"id":"77","name":"reading"}]`
	store := memstate.NewWith(map[string]string{account.FoldersKey("1001"): remembered})
	specJSON, _ := json.Marshal(map[string]any{"base_url": ts.URL, "max_attempts": 1,
		"accounts": []map[string]any{{"user_id": "1001", "access_token": "token-of-user-1001"}}})
	p := New(WithState(store), WithClock(clock.NewVirtual(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))))
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	msgs, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"x_bookmark_folders"}})
	if err != nil {
		t.Fatal(err)
	}
	var errs, folders []string
	for _, m := range msgs {
		switch m := m.(type) {
		case *message.SyncError:
			errs = append(errs, m.Error)
		case *message.SyncInsert:
			ids := m.Record.Column(m.Record.Schema().FieldIndices("folder_id")[0]).(*array.String)
			for i := range ids.Len() {
				folders = append(folders, ids.Value(i))
			}
		}
	}
	want := fmt.Sprintf("listing bookmark folders: the API sent a folder list that did not end within %d pages (%d folders listed)", resources.MaxFolderPages, resources.MaxFolderPages)
	if len(errs) != 1 || !strings.Contains(errs[0], want) {
		t.Errorf("sync errors %q, want one saying %q", errs, want)
	}
	mu.Lock()
	defer mu.Unlock()
	if requests != resources.MaxFolderPages {
		t.Errorf("%d requests for the folder list, want %d", requests, resources.MaxFolderPages)
	}
	if strings.Join(folders, ",") != "77" {
		t.Errorf("emitted folders %v, want those of the last sync", folders)
	}
	if got := store.Committed()[account.FoldersKey("1001")]; got != remembered {
		t.Errorf("the folder memory changed: %.80s", got)
	}
}

// A base_url that accepts no connection (a firewall dropping packets) is
// told as one that nothing answers, after connect_timeout, not after the
// operating system gives up.
func TestAnAPIThatAcceptsNoConnectionIsToldToCheckBaseURL(t *testing.T) {
	blackhole := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	specJSON, _ := json.Marshal(map[string]any{"base_url": "https://api.x.com", "max_attempts": 2,
		"accounts": []map[string]any{{"user_id": "1001", "access_token": "token-of-user-1001"}}})
	var set *account.Set
	p := New(WithState(memstate.New()), WithTransport(blackhole), WithObserver(ObserverFunc(func(s *account.Set, _ *compliance.Check) { set = s })),
		WithClock(clock.NewVirtual(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))),
		WithClientOptions(client.WithTimeouts(client.Timeouts{Connect: 50 * time.Millisecond})))
	ctx := context.Background()
	if err := p.Init(ctx, specJSON, plugin.NewClientOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.SyncAll(ctx, plugin.SyncOptions{Tables: []string{"x_bookmarks"}}); err != nil {
		t.Fatal(err)
	}
	s, _ := spec.Parse(specJSON)
	got := AccountFailure(s, set.Sessions[0])
	want := "none of 2 requests to https://api.x.com got an answer from the X API (no connection to the server within 50ms (connect timeout)): check base_url"
	if len(got) != 1 || got[0] != want {
		t.Errorf("%q, want %q", got, want)
	}
}
