package client

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

func asAPIError(err error, target **APIError) bool { return errors.As(err, target) }

var allSentinels = []error{ErrInvalidRequest, ErrUnauthorized, ErrCreditsDepleted, ErrForbidden, ErrAppOnlyToken,
	ErrClientNotEnrolled, ErrNotFound, ErrServer, ErrRateLimited, ErrMalformedResponse, ErrResponseTooLarge, ErrInvalidInput}

func TestAPIError_StatusesMatchSentinelsWithHints(t *testing.T) {
	cases := []struct {
		name    string
		status  int
		body    string
		is      []error
		title   string
		hint    string
		message []string // substrings of Error()
	}{
		{"400 invalid request", 400, bodyInvalid, []error{ErrInvalidRequest}, "Invalid Request", "",
			[]string{"list_bookmarks: 400 Bad Request: Invalid Request: One or more parameters", "max_results"}},
		{"401 unauthorized", 401, bodyUnauthorized, []error{ErrUnauthorized}, "Unauthorized", HintUnauthorized,
			[]string{"list_bookmarks: 401 Unauthorized (hint: "}},
		{"402 credits depleted", 402, bodyCredits, []error{ErrCreditsDepleted}, "CreditsDepleted", HintCreditsDepleted,
			[]string{"402 Payment Required: CreditsDepleted: Your enrolled account"}},
		{"403 app-only token", 403, bodyAppOnly, []error{ErrForbidden, ErrAppOnlyToken}, "Unsupported Authentication", HintAppOnlyToken,
			[]string{"403 Forbidden: Unsupported Authentication: Authenticating with OAuth 2.0 Application-Only", "run `cq-source-x login`"}},
		{"403 client not enrolled", 403, bodyNotEnrolled, []error{ErrForbidden, ErrClientNotEnrolled}, "Client Forbidden", HintClientNotEnrolled,
			[]string{"403 Forbidden: Client Forbidden", "attach it to a project"}},
		{"403 plain", 403, `{"title":"Forbidden","detail":"You are not permitted to use this resource.","type":"about:blank","status":403}`,
			[]error{ErrForbidden}, "Forbidden", "", []string{"403 Forbidden: You are not permitted"}},
		{"404 not found", 404, bodyNotFound, []error{ErrNotFound}, "Not Found Error", "", []string{"404 Not Found: Not Found Error: Could not find user"}},
		{"404 empty body", 404, ``, []error{ErrNotFound}, "", "", []string{"list_bookmarks: 404 Not Found"}},
		{"400 not JSON", 400, `<html>bad gateway</html>`, []error{ErrInvalidRequest}, "", "", []string{"list_bookmarks: 400 Bad Request"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, tc.status, tc.body) })
			c, _ := newTestClient(t, ts, nil)
			page, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
			if page != nil || err == nil {
				t.Fatalf("page %v err %v", page, err)
			}
			var apiErr *APIError
			if !errors.As(err, &apiErr) {
				t.Fatalf("%T %v is not an *APIError", err, err)
			}
			if apiErr.Status != tc.status || apiErr.Title != tc.title || apiErr.Hint != tc.hint || apiErr.Operation != OpListBookmarks || apiErr.Response == nil {
				t.Errorf("APIError %+v", apiErr)
			}
			for _, s := range allSentinels {
				want := false
				for _, w := range tc.is {
					want = want || w == s
				}
				if errors.Is(err, s) != want {
					t.Errorf("errors.Is(err, %v) = %v", s, !want)
				}
			}
			msg := err.Error()
			for _, sub := range tc.message {
				if !strings.Contains(msg, sub) {
					t.Errorf("message %q lacks %q", msg, sub)
				}
			}
			if strings.ContainsAny(msg, "\n\r") {
				t.Errorf("message is not one line: %q", msg)
			}
			if resp == nil || resp.StatusCode != tc.status || resp.Attempts != 1 {
				t.Errorf("resp %+v", resp)
			}
		})
	}
}

func TestAPIError_LegacyBodyShape(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 401, `{"errors":[{"code":89,"message":"Invalid or expired token."}]}`)
	})
	c, _ := newTestClient(t, ts, nil)
	_, _, err := c.ListFolders(context.Background(), testUser, PageOptions{})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || len(apiErr.Errors) != 1 || apiErr.Errors[0].Code != 89 || apiErr.Errors[0].Message != "Invalid or expired token." {
		t.Fatalf("err %v (%+v)", err, apiErr)
	}
	if !errors.Is(err, ErrUnauthorized) || !strings.Contains(err.Error(), "list_folders: 401 Unauthorized: code 89: Invalid or expired token.") {
		t.Errorf("message %q", err)
	}
}

func TestAPIError_MatchesOnTitleNeverOnTypeHost(t *testing.T) {
	for _, typ := range []string{"https://api.twitter.com/2/problems/unsupported-authentication", "https://api.x.com/2/problems/unsupported-authentication", "about:blank", ""} {
		e := newAPIError(OpListBookmarks, &http.Response{StatusCode: 403}, []byte(`{"title":"Unsupported Authentication","type":"`+typ+`","status":403}`))
		if !errors.Is(e, ErrAppOnlyToken) || e.Hint != HintAppOnlyToken {
			t.Errorf("type %q: not classified as app-only", typ)
		}
	}
	// A type naming app-only auth does not make a 403 with another title one.
	e := newAPIError(OpListBookmarks, &http.Response{StatusCode: 403}, []byte(`{"title":"Forbidden","type":"https://api.x.com/2/problems/unsupported-authentication"}`))
	if errors.Is(e, ErrAppOnlyToken) {
		t.Error("classified by type")
	}
}

func TestMalformedJSON_ErrorNamesOperationAndSaysNotJSON(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, `{"data":[{"id":"1"},]}`) })
	c, _ := newTestClient(t, ts, nil, WithRetryPolicy(RetryPolicy{Budget: -1, MaxAttempts: 1}))
	_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{})
	var me *MalformedResponseError
	if !errors.As(err, &me) || !errors.Is(err, ErrMalformedResponse) || me.Status != 200 {
		t.Fatalf("err %T %v", err, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "list_bookmarks") || !strings.Contains(msg, "body was not valid JSON") || !strings.Contains(msg, "offset") {
		t.Errorf("message %q", msg)
	}
	if resp.Attempts != 1 {
		t.Errorf("attempts %d", resp.Attempts)
	}
	// Valid JSON of the wrong shape says so.
	ts.SetHandler(func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, `{"data":{"bookmarked":"yes"}}`)
	})
	_, _, err = c.AddBookmark(context.Background(), testUser, "1")
	if !errors.Is(err, ErrMalformedResponse) || !strings.Contains(err.Error(), "add_bookmark: 200 response: body was valid JSON but not what this operation returns") {
		t.Errorf("shape error %v", err)
	}
}

func TestResponseSizeLimit_CapsBodyAndIsNotRetried(t *testing.T) {
	body := string(realisticPage(100, ""))
	for _, chunked := range []bool{false, true} {
		ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) {
			if chunked {
				w.WriteHeader(200)
				for i := 0; i < len(body); i += 1000 {
					_, _ = w.Write([]byte(body[i:min(i+1000, len(body))]))
					w.(http.Flusher).Flush()
				}
				return
			}
			writeJSON(w, 200, body)
		})
		c, _ := newTestClient(t, ts, nil, WithMaxResponseBytes(64<<10))
		_, resp, err := c.ListBookmarks(context.Background(), testUser, ListOptions{PageOptions: PageOptions{MaxResults: 100}})
		if !errors.Is(err, ErrResponseTooLarge) || !errors.Is(err, ErrMalformedResponse) || !strings.Contains(err.Error(), "65536-byte cap") {
			t.Fatalf("chunked=%v: err %v", chunked, err)
		}
		if resp.Attempts != 1 || ts.Count() != 1 {
			t.Errorf("chunked=%v: a too-large body was retried (%d attempts)", chunked, resp.Attempts)
		}
		if u := c.Meter().Usage(testUser, OpListBookmarks); u.PostsUnread != 100 || u.Errors != 1 {
			t.Errorf("chunked=%v: usage %+v", chunked, u)
		}
	}
	// The default cap admits a realistic page.
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, body) })
	c, _ := newTestClient(t, ts, nil)
	if _, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Issue 13.3: a 400 shows what each element of "errors" says — the refused
// parameters and values, the message, the detail — not only the generic
// "One or more parameters to your request was invalid."
func TestAPIError_400ShowsWhatEachErrorSays(t *testing.T) {
	body := `{"errors":[` +
		`{"parameters":{"expansions":["author_id"]},"message":"The ` + "`expansions`" + ` query parameter value [author_id] is not one of [attachments.media_keys]"},` +
		`{"parameters":{"id":["12x"]},"detail":"The ` + "`id`" + ` path parameter value [12x] is not valid"}],` +
		`"title":"Invalid Request","detail":"One or more parameters to your request was invalid.","type":"https://api.x.com/2/problems/invalid-request"}`
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 400, body) })
	c, _ := newTestClient(t, ts, nil)
	_, _, err := c.GetFolder(context.Background(), testUser, "77", PageOptions{})
	var apiErr *APIError
	if !errors.As(err, &apiErr) || !errors.Is(err, ErrInvalidRequest) || len(apiErr.Errors) != 2 {
		t.Fatalf("err %v (%+v)", err, apiErr)
	}
	if got := apiErr.Errors[0].Parameters["expansions"]; len(got) != 1 || got[0] != "author_id" {
		t.Errorf("parameters %v", apiErr.Errors[0].Parameters)
	}
	for _, want := range []string{
		"get_folder: 400 Bad Request: Invalid Request: One or more parameters",
		"expansions=[author_id]: The `expansions` query parameter value [author_id] is not one of",
		"id=[12x]: The `id` path parameter value [12x] is not valid",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
}

// Issue 13.3: a 200 that carries only "errors" (X's OpenAPI makes data and
// meta optional; X answers an unknown user id so) reports the server's
// title and detail as an *ErrorsOnlyError, for every operation. It is not
// retried, bills nothing, and is not an empty page (a folder list read as
// empty would drop every folder).
func TestA200WithOnlyErrorsReportsTheirTitleAndDetail(t *testing.T) {
	const body = `{"errors":[{"value":"123","detail":"Could not find user with id: [123].","title":"Not Found Error","resource_type":"user","parameter":"id","resource_id":"123","type":"https://api.twitter.com/2/problems/resource-not-found"}]}`
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, body) })
	c, _ := newTestClient(t, ts, nil)
	ctx := context.Background()
	calls := map[Operation]func() (*Response, error){
		OpListBookmarks: func() (*Response, error) { _, r, err := c.ListBookmarks(ctx, "123", ListOptions{}); return r, err },
		OpListFolders:   func() (*Response, error) { _, r, err := c.ListFolders(ctx, "123", PageOptions{}); return r, err },
		OpGetFolder:     func() (*Response, error) { _, r, err := c.GetFolder(ctx, "123", "9", PageOptions{}); return r, err },
		OpUsersMe:       func() (*Response, error) { _, r, err := c.Me(ctx); return r, err },
		OpAddBookmark:   func() (*Response, error) { _, r, err := c.AddBookmark(ctx, "123", "5"); return r, err },
	}
	for op, call := range calls {
		resp, err := call()
		var eo *ErrorsOnlyError
		if !errors.As(err, &eo) || eo.Operation != op || eo.Status != 200 || eo.Response == nil || len(eo.Errors) != 1 {
			t.Errorf("%s: err %T %v", op, err, err)
			continue
		}
		want := string(op) + ": 200 response with errors and no data: Not Found Error: Could not find user with id: [123]."
		if !strings.Contains(err.Error(), want) || !errors.Is(err, ErrNotFound) || errors.Is(err, ErrMalformedResponse) {
			t.Errorf("%s: message %q, want %q", op, err, want)
		}
		if resp.Attempts != 1 {
			t.Errorf("%s: %d attempts", op, resp.Attempts)
		}
	}
	if u := c.Meter().Usage("123", OpListBookmarks); u.Errors != 1 || u.PostsReturned != 0 || u.PostsUnread != 0 || u.USD != 0 {
		t.Errorf("usage %+v", u)
	}
	// Beside data or meta, errors are partial errors of a good page.
	ts.SetHandler(func(w http.ResponseWriter, r *http.Request, n int) {
		writeJSON(w, 200, `{"errors":[{"title":"Not Found Error"}],"meta":{"result_count":0}}`)
	})
	if p, _, err := c.ListBookmarks(ctx, "123", ListOptions{}); err != nil || len(p.Errors) != 1 {
		t.Errorf("errors beside meta: %v", err)
	}
}
