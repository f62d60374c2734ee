package xsim

import (
	"errors"
	"io"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// freshClient uses a new connection per request, so an injected reset
// reaches the caller instead of being retried by the Transport.
var freshClient = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 10 * time.Second}

// outcome performs one request and describes what the client saw.
func outcome(t *testing.T, s *Server, path, tok string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", s.URL()+path, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := freshClient.Do(req)
	if err != nil {
		return "reset"
	}
	defer res.Body.Close()
	if _, err := io.ReadAll(res.Body); err != nil {
		return strconv.Itoa(res.StatusCode) + " truncated"
	}
	return strconv.Itoa(res.StatusCode)
}

func faultRun(t *testing.T, f Faults, n int) []string {
	s, tok := newSimUser(t, Options{Clock: vclock(), Faults: f, DisableRateLimits: true})
	s.SeedBookmarks("1", 30)
	var out []string
	for range n {
		out = append(out, outcome(t, s, "/2/users/1/bookmarks", tok))
	}
	return out
}

func TestFaultsAreDeterministicBySeed(t *testing.T) {
	f := Faults{Seed: 42, ServerErrorRate: 0.15, RateLimitRate: 0.15, ConnResetRate: 0.15, TruncateRate: 0.15}
	a := faultRun(t, f, 80)
	b := faultRun(t, f, 80)
	kinds := map[string]int{}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("request %d: %s vs %s", i+1, a[i], b[i])
		}
		kinds[a[i]]++
	}
	if kinds["200"] == 0 || kinds["429"] == 0 || kinds["reset"] == 0 || kinds["200 truncated"] == 0 {
		t.Fatalf("kinds %v", kinds)
	}
	f.Seed = 43
	c := faultRun(t, f, 80)
	same := 0
	for i := range a {
		if a[i] == c[i] {
			same++
		}
	}
	if same == 80 {
		t.Fatal("a different seed gave the same faults")
	}
	// Decide is a pure function of (seed, n).
	for n := 1; n < 1000; n++ {
		if f.Decide(n) != f.Decide(n) {
			t.Fatal("Decide is not pure")
		}
	}
	// SetFaults restarts the sequence.
	s, tok := newSimUser(t, Options{Clock: vclock(), DisableRateLimits: true})
	s.SeedBookmarks("1", 30)
	f.Seed = 42
	s.SetFaults(f)
	outcome(t, s, "/2/users/1/bookmarks", tok)
	s.SetFaults(f)
	for i := range 20 {
		if got := outcome(t, s, "/2/users/1/bookmarks", tok); got != a[i] {
			t.Fatalf("after SetFaults, request %d: %s, want %s", i+1, got, a[i])
		}
	}
}

func TestInjectedServerErrorHasProblemBody(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock(), Faults: Faults{Seed: 1, ServerErrorRate: 1}})
	s.SeedBookmarks("1", 5)
	seen := map[int]bool{}
	for range 40 {
		r := get(t, s, "/2/users/1/bookmarks", tok)
		wantProblem(t, r, r.status, http.StatusText(r.status))
		rlHeaders(t, r)
		seen[r.status] = true
	}
	for _, st := range []int{500, 502, 503, 504} {
		if !seen[st] {
			t.Fatalf("no %d in 40 injected errors: %v", st, seen)
		}
	}
	s.SetFaults(Faults{ServerErrorRate: 1, Operations: []string{OpListBookmarks}})
	for {
		r := get(t, s, "/2/users/1/bookmarks", tok)
		if r.status == 503 {
			jsonEqual(t, r.body, `{"title":"Service Unavailable","detail":"Service Unavailable","type":"about:blank","status":503}`)
			break
		}
	}
	if u := s.Usage("1")[OpListBookmarks]; u.PostsReturned != 0 || u.OK != 0 {
		t.Fatalf("injected errors billed: %+v", u)
	}
}

func TestInjectedRateLimitHasHonestHeaders(t *testing.T) {
	clk := vclock()
	s, tok := newSimUser(t, Options{Clock: clk, Faults: Faults{Seed: 7, RateLimitRate: 1}})
	s.SeedBookmarks("1", 5)
	for range 10 {
		r := get(t, s, "/2/users/1/bookmarks", tok)
		if r.status != 429 {
			t.Fatalf("%d", r.status)
		}
		limit, rem, reset := rlHeaders(t, r)
		now := clk.Now().Unix()
		if limit != 180 || rem != 0 || reset < now+1 || reset > now+5 {
			t.Fatalf("limit %d remaining %d reset %d (now %d)", limit, rem, reset, now)
		}
	}
	u := s.Usage("1")[OpListBookmarks]
	if u.RateLimited != 10 || u.PostsReturned != 0 {
		t.Fatalf("%+v", u)
	}
	// Injected 429s do not use up the real allowance.
	s.SetFaults(Faults{})
	r := get(t, s, "/2/users/1/bookmarks", tok)
	if _, rem, _ := rlHeaders(t, r); rem != 179 {
		t.Fatalf("remaining %d", rem)
	}
}

func TestConnResetFault(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock(), Faults: Faults{ConnResetRate: 1}})
	req, _ := http.NewRequest("GET", s.URL()+"/2/users/1/bookmarks", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if _, err := freshClient.Do(req); err == nil {
		t.Fatal("no error from a reset connection")
	}
	if u := s.Usage("1")[OpListBookmarks]; u.ByStatus[0] != 1 || u.OK != 0 {
		t.Fatalf("%+v", u)
	}
}

func TestTruncatedResponseIsBilled(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock(), Faults: Faults{TruncateRate: 1}})
	s.SeedBookmarks("1", 30)
	req, _ := http.NewRequest("GET", s.URL()+"/2/users/1/bookmarks", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	res, err := freshClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != 200 || res.Header.Get("x-rate-limit-remaining") == "" {
		t.Fatalf("%d %v", res.StatusCode, res.Header)
	}
	b, err := io.ReadAll(res.Body)
	if !errors.Is(err, io.ErrUnexpectedEOF) || len(b) == 0 {
		t.Fatalf("err %v, %d bytes", err, len(b))
	}
	if u := s.Usage("1")[OpListBookmarks]; u.PostsReturned != 10 || u.OK != 1 {
		t.Fatalf("%+v", u)
	}
	// Only 200s are truncated: errors go out whole.
	r := get(t, s, "/2/users/1/bookmarks?max_results=0", tok)
	wantProblem(t, r, 400, "Invalid Request")
}

func TestFaultsLimitedToOperations(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock(), Faults: Faults{ServerErrorRate: 1, Operations: []string{OpListFolders}}})
	for range 5 {
		if r := get(t, s, "/2/users/1/bookmarks", tok); r.status != 200 {
			t.Fatalf("%d", r.status)
		}
		if r := get(t, s, "/2/users/1/bookmarks/folders", tok); r.status < 500 {
			t.Fatalf("%d", r.status)
		}
	}
}

func TestLatencyFault(t *testing.T) {
	s, tok := newSimUser(t, Options{Clock: vclock(), Faults: Faults{Latency: 30 * time.Millisecond}})
	start := time.Now()
	if r := get(t, s, "/2/users/1/bookmarks", tok); r.status != 200 {
		t.Fatal(r.status)
	}
	if d := time.Since(start); d < 30*time.Millisecond {
		t.Fatalf("took %v", d)
	}
}

func TestFaultsApplyToTheTokenEndpoint(t *testing.T) {
	s := oauthSim(t, vclock())
	_, rt, _ := s.IssueTokenPair("pub", "1")
	s.SetFaults(Faults{ServerErrorRate: 1, Operations: []string{OpToken}})
	r := refresh(t, s, "pub", rt)
	if r.status < 500 {
		t.Fatalf("%d", r.status)
	}
	s.SetFaults(Faults{})
	decodeToken(t, refresh(t, s, "pub", rt)) // a failed request did not spend the token
}
