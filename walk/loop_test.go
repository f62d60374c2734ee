package walk

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// loopServer answers every request with the top page of l and a next_token
// of its own making; it fails the test's walk (rather than hang it) past
// 50 requests.
func loopServer(l *list, token func(n int) string) FetchFunc[string] {
	n := 0
	return func(ctx context.Context, maxResults int, _ string) (Page[string], error) {
		if n++; n > 50 {
			return Page[string]{}, errors.New("the walk did not stop: 50 requests to a server that loops")
		}
		page, err := l.fetch(ctx, 90, "")
		page.Next = token(n)
		return page, err
	}
}

func loopWalk(t *testing.T, fetch FetchFunc[string], prev *Memory) (*Result, error) {
	t.Helper()
	var emitted []string
	w := &Walker[string]{Fetch: fetch, ID: func(s string) string { return s },
		Emit: func(_ context.Context, items []string) error { emitted = append(emitted, items...); return nil }}
	res, err := w.Run(context.Background(), prev)
	if len(emitted) != len(slices.Compact(slices.Sorted(slices.Values(emitted)))) {
		t.Errorf("a post was emitted twice")
	}
	return res, err
}

// A next_token that leads back to a page already read billed the same
// posts without end (issue 15: 16,200 posts in 10 seconds, then every
// window after). A walk never sends the same token twice.
func TestATokenSentTwiceStopsTheWalk(t *testing.T) {
	l := newList(1000)
	n := 0
	next := func(ctx context.Context, maxResults int, _ string) (Page[string], error) {
		if n++; n > 50 {
			return Page[string]{}, errors.New("the walk did not stop: 50 requests to a server that loops")
		}
		page, err := l.fetch(ctx, 90, strconv.Itoa(90*(n-1))) // the next page, whatever was asked for
		page.Next = "T"                                       // and always the same token
		return page, err
	}
	res, err := loopWalk(t, next, nil)
	if !errors.Is(err, ErrLoop) || res.Outcome != Failed || res.Memory != nil {
		t.Fatalf("%v, %+v", err, res)
	}
	if res.Requests != 2 || res.Billed != 180 {
		t.Errorf("%d requests, %d billed; want the walk to stop before sending the token again", res.Requests, res.Billed)
	}
	want := "the API led the walk back to posts it had already read: the next_token of page 2 is the one that asked for page 2; stopped after 180 posts read (180 distinct)"
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("message %q, want %q", err, want)
	}
}

// The same, with a new token every time: a page of nothing but posts the
// walk has read, more of them than the list can have moved down.
func TestAPageOfPostsAlreadyReadStopsTheWalk(t *testing.T) {
	for _, prev := range []*Memory{nil, {Held: NewIDList("1", "2")}} {
		l := newList(1000)
		res, err := loopWalk(t, loopServer(l, func(n int) string { return "TOP" + strconv.Itoa(n) }), prev)
		if !errors.Is(err, ErrLoop) || res.Outcome != Failed || res.Memory != nil || res.Requests != 2 || res.Billed != 180 {
			t.Fatalf("%v, %+v", err, res)
		}
		if !strings.Contains(err.Error(), "page 2 held nothing but posts read earlier in this walk (90 of them, more than the list could have moved down between requests); stopped after 180 posts read (90 distinct)") {
			t.Errorf("message %q", err)
		}
	}
}

// A server that goes back to the top after pages the walk has not read
// twice is caught as soon as it does: the walk remembers every post it
// read, not only the last pages.
func TestAPageFromTheTopOfALongWalkStopsIt(t *testing.T) {
	l := newList(2000)
	var sent []string
	fetch := func(ctx context.Context, maxResults int, token string) (Page[string], error) {
		sent = append(sent, token)
		if len(sent) > 50 {
			return Page[string]{}, errors.New("did not stop")
		}
		if len(sent) == 10 {
			token = "" // the server's token for page 10 leads to the top
		}
		page, err := l.fetch(ctx, maxResults, token)
		if page.Next != "" {
			page.Next = fmt.Sprintf("%s.%d", page.Next, len(sent)) // a new token every time
		}
		return page, err
	}
	res, err := loopWalk(t, func(ctx context.Context, n int, token string) (Page[string], error) {
		off, _, _ := strings.Cut(token, ".")
		return fetch(ctx, n, off)
	}, nil)
	if !errors.Is(err, ErrLoop) || res.Requests != 10 || !strings.Contains(err.Error(), "page 10 held nothing but posts read earlier") {
		t.Fatalf("%v, %+v", err, res)
	}
}

// The list moving down between requests repeats, at the page boundary, as
// many posts as were saved meanwhile: with pages of one post, each save
// repeats a whole page. That is not a loop, also a few pages in a row.
func TestSavesBetweenRequestsRepeatingWholePagesAreNotALoop(t *testing.T) {
	for _, saves := range []int{1, 5, maxShift} {
		l := newList(40)
		l.onRequest = func(n int) {
			if n >= 2 && n < 2+saves {
				l.bookmark(strconv.Itoa(8_000_000 + n))
			}
		}
		a := newArchive()
		res := a.sync(t, l, Settings{MaxPageSize: 1})
		mustClean(t, res, ReachedEnd)
		if res.Duplicates != saves {
			t.Errorf("%d saves: %d duplicates", saves, res.Duplicates)
		}
		l.onRequest = nil
		mustClean(t, a.sync(t, l, Settings{}), MetHeld)
		if m := a.missing(l); len(m) > 0 {
			t.Fatalf("%d saves: lost %v", saves, m)
		}
	}
}
