package client

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
)

func TestInputValidation_RejectsBeforeSending(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, pageBody(0, 0, "")) })
	c, _ := newTestClient(t, ts, nil)
	ctx := context.Background()
	long := strings.Repeat("9", 300)
	cases := []struct {
		name  string
		call  func() error
		param string
		quote string // expected quoted value in the message
	}{
		{"empty user id", func() error { _, _, err := c.ListBookmarks(ctx, "", ListOptions{}); return err }, "user id", `""`},
		{"user id with letters", func() error { _, _, err := c.ListBookmarks(ctx, "12ab", ListOptions{}); return err }, "user id", `"12ab"`},
		{"user id as a handle", func() error { _, _, err := c.ListFolders(ctx, "@jack", PageOptions{}); return err }, "user id", `"@jack"`},
		{"user id with a path", func() error { _, _, err := c.ListBookmarks(ctx, "1/../../2", ListOptions{}); return err }, "user id", `"1/../../2"`},
		{"user id of 20 digits", func() error { _, _, err := c.ListBookmarks(ctx, "12345678901234567890", ListOptions{}); return err }, "user id", `"12345678901234567890"`},
		{"negative user id", func() error { _, _, err := c.ListBookmarks(ctx, "-1", ListOptions{}); return err }, "user id", `"-1"`},
		{"long user id is truncated", func() error { _, _, err := c.ListBookmarks(ctx, long, ListOptions{}); return err }, "user id", `(300 characters, not shown)`},
		{"folder id", func() error { _, _, err := c.GetFolder(ctx, testUser, "folder-1", PageOptions{}); return err }, "folder id", `"folder-1"`},
		{"post id to add", func() error { _, _, err := c.AddBookmark(ctx, testUser, "1.5"); return err }, "post id", `"1.5"`},
		{"post id to remove", func() error { _, _, err := c.RemoveBookmark(ctx, testUser, " 1"); return err }, "post id", `" 1"`},
		{"max_results 101", func() error {
			_, _, err := c.ListBookmarks(ctx, testUser, ListOptions{PageOptions: PageOptions{MaxResults: 101}})
			return err
		}, "max_results", `"101"`},
		{"max_results negative", func() error { _, _, err := c.ListFolders(ctx, testUser, PageOptions{MaxResults: -5}); return err }, "max_results", `"-5"`},
		{"token outside base32hex", func() error {
			_, _, err := c.ListBookmarks(ctx, testUser, ListOptions{PageOptions: PageOptions{PaginationToken: "7140dibdnow9c7btw"}})
			return err
		}, "pagination_token", `"7140dibdnow9c7btw"`},
		{"token with a query", func() error {
			_, _, err := c.GetFolder(ctx, testUser, "1", PageOptions{PaginationToken: "AB&max_results=100"})
			return err
		}, "pagination_token", `"AB&max_results=100"`},
		{"token only padding", func() error {
			_, _, err := c.ListFolders(ctx, testUser, PageOptions{PaginationToken: "=="})
			return err
		}, "pagination_token", `"=="`},
		{"token padding inside", func() error {
			_, _, err := c.ListFolders(ctx, testUser, PageOptions{PaginationToken: "AB=CD"})
			return err
		}, "pagination_token", `"AB=CD"`},
		{"empty field", func() error {
			_, _, err := c.ListBookmarks(ctx, testUser, ListOptions{Fields: Fields{TweetFields: []string{"created_at", ""}}})
			return err
		}, "tweet.fields element", `""`},
		{"field list in one element", func() error {
			_, _, err := c.ListBookmarks(ctx, testUser, ListOptions{Fields: Fields{Expansions: []string{"author_id,x&y=1"}}})
			return err
		}, "expansions element", `"author_id,x&y=1"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.call()
			var ie *InputError
			if !errors.As(err, &ie) || !errors.Is(err, ErrInvalidInput) {
				t.Fatalf("err %T %v", err, err)
			}
			msg := err.Error()
			if ie.Parameter != tc.param || !strings.Contains(msg, "invalid "+tc.param+" "+tc.quote+": ") {
				t.Errorf("message %q, want parameter %q and value %s", msg, tc.param, tc.quote)
			}
		})
	}
	if n := ts.Count(); n != 0 {
		t.Errorf("%d requests were sent for invalid input", n)
	}
	if u := c.Meter().Total(); u.Requests != 0 {
		t.Errorf("meter counted %d requests", u.Requests)
	}
}

func TestInputValidation_AcceptsValidValues(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, pageBody(0, 0, "")) })
	c, _ := newTestClient(t, ts, nil)
	ctx := context.Background()
	for _, tok := range []string{"", "0", "7140DIBDN0V9C7BT", "7140dibdn0v9c7bt", "0123456789abcdefghijklmnopqrstuv", "VVVV====", "AB="} {
		for _, size := range []int{0, 1, 100} {
			if _, _, err := c.ListBookmarks(ctx, "1234567890123456789", ListOptions{PageOptions: PageOptions{MaxResults: size, PaginationToken: tok}}); err != nil {
				t.Errorf("token %q size %d: %v", tok, size, err)
			}
		}
	}
}

func TestTokenOpaque_AcceptsRealXTokens(t *testing.T) {
	ts := newTestServer(t, func(w http.ResponseWriter, r *http.Request, n int) { writeJSON(w, 200, pageBody(0, 0, "")) })
	c, _ := newTestClient(t, ts, nil, WithTokenCheck(TokenOpaque))
	for _, tok := range []string{"7140dibdnow9c7btw3w29grvxfcgvpb9n9coehpk7xz5i", "DFEDBNRFT3MHCZZZ", "7140w9gefhslx3"} {
		if _, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{PageOptions: PageOptions{PaginationToken: tok}}); err != nil {
			t.Errorf("%q: %v", tok, err)
		}
	}
	for _, tok := range []string{"a b", "a&b", "a/b", strings.Repeat("a", 513)} {
		if _, _, err := c.ListBookmarks(context.Background(), testUser, ListOptions{PageOptions: PageOptions{PaginationToken: tok}}); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("%.20q accepted", tok)
		}
	}
}
