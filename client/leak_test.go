package client

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// lineWriter hands each log line to a function.
type lineWriter func(line string)

func (w lineWriter) Write(p []byte) (int, error) {
	w(string(p))
	return len(p), nil
}

func TestToken_NeverInErrorsLogsOrStrings(t *testing.T) {
	const token = "SECRET-ACCESS-TOKEN-7f3a9c21e4b84d0f9a6e5c3b2a1d0e9f"
	var clk *recClock
	var seen sync.Map
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		seen.Store(r.Header.Get("Authorization"), true)
		parts := strings.Split(r.URL.Path, "/") // /2/users/<case>/...
		switch parts[3] {
		case "400":
			writeJSON(w, 400, bodyInvalid)
		case "401":
			writeJSON(w, 401, bodyUnauthorized)
		case "402":
			writeJSON(w, 402, bodyCredits)
		case "403":
			writeJSON(w, 403, bodyAppOnly)
		case "4030":
			writeJSON(w, 403, bodyNotEnrolled)
		case "404":
			writeJSON(w, 404, bodyNotFound)
		case "500":
			writeJSON(w, 500, bodyServer)
		case "429":
			setRate(w, 180, 0, clk.Now().Add(time.Hour))
			writeJSON(w, 429, bodyTooManyOld)
		case "4291":
			if n%2 == 1 {
				setRate(w, 180, 0, clk.Now().Add(time.Minute))
				writeJSON(w, 429, bodyTooMany)
				return
			}
			writeJSON(w, 200, pageBody(100, 1, ""))
		case "1":
			writeJSON(w, 200, `{"data":[{"id":"1"`)
		case "2":
			w.Header().Set("Content-Length", "1000")
			w.WriteHeader(200)
			_, _ = w.Write([]byte(`{"data":[`))
		case "3":
			writeJSON(w, 200, string(realisticPage(100, "")))
		case "4":
			kill(t, w, true)
		case "5":
			http.Redirect(w, r, "http://127.0.0.1:1/elsewhere", http.StatusTemporaryRedirect)
		default:
			writeJSON(w, 200, pageBody(100, 1, ""))
		}
	})
	var logMu sync.Mutex
	var logs []string
	hc := StaticTokenWithTransport(token, &http.Transport{DisableKeepAlives: true})
	c, clk0 := newTestClient(t, ts, hc, WithMaxResponseBytes(32<<10), WithLimits(map[Operation]int{OpListFolders: 1}),
		WithLogger(zerolog.New(lineWriter(func(line string) {
			logMu.Lock()
			logs = append(logs, line)
			logMu.Unlock()
		}))))
	clk = clk0
	ctx := context.Background()
	canceled, cancel := context.WithCancel(ctx)
	cancel()

	var errs []error
	var resps []*Response
	list := func(user string, o ListOptions) {
		_, resp, err := c.ListBookmarks(ctx, user, o)
		errs, resps = append(errs, err), append(resps, resp)
	}
	for _, user := range []string{"400", "401", "402", "403", "4030", "404", "500", "429", "4291", "1", "2", "3", "4", "5"} {
		list(user, ListOptions{})
	}
	list("12x", ListOptions{})
	list("7", ListOptions{PageOptions: PageOptions{PaginationToken: token}})
	list("7", ListOptions{PageOptions: PageOptions{MaxResults: 1000}})
	list("7", ListOptions{Fields: Fields{TweetFields: []string{token}}})
	_, _, err := c.ListBookmarks(canceled, "7", ListOptions{})
	errs = append(errs, err)
	_, _, err = c.ListFolders(ctx, "8", PageOptions{})
	errs = append(errs, err)
	_, _, err = c.ListFolders(ctx, "8", PageOptions{}) // refused by the budget
	errs = append(errs, err)
	_, _, err = c.AddBookmark(ctx, "7", token)
	errs = append(errs, err)
	_, _, err = c.Me(canceled)
	errs = append(errs, err)

	if _, ok := seen.Load("Bearer " + token); !ok {
		t.Fatal("the server never received the token")
	}
	nErr := 0
	var texts []string
	for _, err := range errs {
		if err == nil {
			continue
		}
		nErr++
		texts = append(texts, err.Error(), fmt.Sprintf("%v|%+v|%#v|%s|%q", err, err, err, err, err))
	}
	if nErr < 18 {
		t.Errorf("only %d of the error paths failed: %v", nErr, errs)
	}
	for _, r := range resps {
		if r == nil {
			continue
		}
		texts = append(texts, fmt.Sprintf("%v|%+v|%#v", r, r, r))
		if r.Response != nil && r.Request != nil {
			texts = append(texts, fmt.Sprint(r.Request.Header), r.Request.URL.String())
		}
	}
	logMu.Lock()
	texts = append(texts, logs...)
	if len(logs) == 0 {
		t.Error("nothing was logged")
	}
	logMu.Unlock()
	texts = append(texts, fmt.Sprintf("%v|%+v|%#v", hc, hc, hc), fmt.Sprintf("%v|%+v|%#v|%s|%x", hc.Transport, hc.Transport, hc.Transport, hc.Transport, hc.Transport), c.String())
	for _, s := range texts {
		for _, needle := range []string{token, token[:20], token[len(token)-20:]} {
			if strings.Contains(s, needle) {
				t.Errorf("token fragment %q leaked in: %.300s", needle, s)
			}
		}
		if strings.Contains(s, strconv.Quote(token)) {
			t.Errorf("quoted token leaked")
		}
	}
}
