package xsim

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

func vclock() *clock.Virtual { return clock.NewVirtual(t0) }

func newSim(t testing.TB, opts Options) *Server {
	t.Helper()
	s := New(opts)
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// newSimUser starts a server with user "1" (alice) and a token for her.
func newSimUser(t testing.TB, opts Options) (*Server, string) {
	s := newSim(t, opts)
	s.AddUser("1", "alice")
	return s, s.IssueToken("1")
}

type resp struct {
	status int
	hdr    http.Header
	body   []byte
}

func (r *resp) obj(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(r.body, &m); err != nil {
		t.Fatalf("body is not a JSON object: %v: %s", err, r.body)
	}
	return m
}

var testClient = &http.Client{
	CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	Timeout:       30 * time.Second,
}

func doReq(t testing.TB, method, u, token string, body io.Reader, hdr map[string]string) *resp {
	t.Helper()
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	res, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return &resp{res.StatusCode, res.Header, b}
}

func get(t testing.TB, s *Server, path, token string) *resp {
	t.Helper()
	return doReq(t, "GET", s.URL()+path, token, nil, nil)
}

type page struct {
	Data     []map[string]any `json:"data"`
	Includes struct {
		Users  []map[string]any `json:"users"`
		Media  []map[string]any `json:"media"`
		Tweets []map[string]any `json:"tweets"`
	} `json:"includes"`
	Errors []map[string]any `json:"errors"`
	Meta   *struct {
		ResultCount   *int   `json:"result_count"`
		NextToken     string `json:"next_token"`
		PreviousToken string `json:"previous_token"`
	} `json:"meta"`
}

func (p *page) ids() []string {
	var out []string
	for _, d := range p.Data {
		out = append(out, d["id"].(string))
	}
	return out
}

// listPage fetches one page of the bookmark list and checks the invariants
// every 200 page has.
func listPage(t testing.TB, s *Server, user, token string, q url.Values) (*page, *resp) {
	t.Helper()
	path := "/2/users/" + user + "/bookmarks"
	if len(q) > 0 {
		path += "?" + q.Encode()
	}
	r := get(t, s, path, token)
	if r.status != 200 {
		t.Fatalf("GET %s: status %d: %s", path, r.status, r.body)
	}
	p := decodePage(t, r)
	return p, r
}

func decodePage(t testing.TB, r *resp) *page {
	t.Helper()
	var p page
	if err := json.Unmarshal(r.body, &p); err != nil {
		t.Fatalf("bad JSON: %v: %s", err, r.body)
	}
	if p.Meta == nil || p.Meta.ResultCount == nil {
		t.Fatalf("meta.result_count missing: %s", r.body)
	}
	if *p.Meta.ResultCount != len(p.Data) {
		t.Fatalf("result_count %d != len(data) %d", *p.Meta.ResultCount, len(p.Data))
	}
	if len(p.Data) == 0 && bytes.Contains(r.body, []byte(`"data"`)) {
		t.Fatalf("empty page carries data: %s", r.body)
	}
	return &p
}

func q(kv ...string) url.Values {
	v := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

// walk reads the whole list with page size max and returns the ids and the pages.
func walk(t testing.TB, s *Server, user, token string, max int) ([]string, []*page) {
	t.Helper()
	var ids []string
	var pages []*page
	tok := ""
	for range 100000 {
		v := q("max_results", itoa(max))
		if tok != "" {
			v.Set("pagination_token", tok)
		}
		p, _ := listPage(t, s, user, token, v)
		pages = append(pages, p)
		ids = append(ids, p.ids()...)
		if p.Meta.NextToken == "" {
			return ids, pages
		}
		tok = p.Meta.NextToken
	}
	t.Fatal("walk did not end")
	return nil, nil
}

func itoa(n int) string { return strconv.Itoa(n) }

func postJSON(t testing.TB, s *Server, path, token, body string) *resp {
	t.Helper()
	return doReq(t, "POST", s.URL()+path, token, strings.NewReader(body), map[string]string{"Content-Type": "application/json"})
}

func postForm(t testing.TB, u string, form url.Values, basicUser, basicPass string) *resp {
	t.Helper()
	req, err := http.NewRequest("POST", u, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basicUser != "" {
		req.SetBasicAuth(url.QueryEscape(basicUser), url.QueryEscape(basicPass))
	}
	res, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return &resp{res.StatusCode, res.Header, b}
}

func jsonEqual(t testing.TB, got []byte, want string) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("bad JSON %v: %s", err, got)
	}
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatal(err)
	}
	gb, _ := json.Marshal(g)
	wb, _ := json.Marshal(w)
	if !bytes.Equal(gb, wb) {
		t.Fatalf("body:\n got %s\nwant %s", got, want)
	}
}

func equalIDs(t testing.TB, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d ids %v, want %d %v", len(got), got, len(want), want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("id %d: got %v, want %v", i, got, want)
		}
	}
}

func wantProblem(t testing.TB, r *resp, status int, title string) map[string]any {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d: %s", r.status, status, r.body)
	}
	m := r.obj(t)
	if m["title"] != title {
		t.Fatalf("title %v, want %q: %s", m["title"], title, r.body)
	}
	if int(m["status"].(float64)) != status {
		t.Fatalf("status field %v: %s", m["status"], r.body)
	}
	if _, ok := m["type"].(string); !ok {
		t.Fatalf("no type: %s", r.body)
	}
	if _, ok := m["detail"].(string); !ok {
		t.Fatalf("no detail: %s", r.body)
	}
	return m
}
