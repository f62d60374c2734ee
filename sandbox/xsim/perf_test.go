package xsim

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

func TestSeedMillionBookmarksIsFast(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates ~60 MB")
	}
	s, tok := newSimUser(t, Options{Clock: vclock(), DisableRateLimits: true})
	start := time.Now()
	ids := s.SeedBookmarks("1", 1_000_000)
	if d := time.Since(start); d > 3*time.Second && !raceEnabled { // typically ~0.1 s; generous for busy machines
		t.Fatalf("SeedBookmarks(1e6) took %v", d)
	}
	if len(ids) != 1_000_000 {
		t.Fatal(len(ids))
	}
	p, _ := listPage(t, s, "1", tok, q("max_results", "100", "tweet.fields", "created_at,author_id,public_metrics,entities"))
	equalIDs(t, p.ids(), ids[:100])
	// A token deep in the list works like any other.
	_ = s.Bookmark("1", ids[999_999]) // the oldest moves to the top
	if got := s.Bookmarks("1"); got[0] != ids[999_999] || got[1] != ids[0] || len(got) != 1_000_000 {
		t.Fatal("re-bookmark in a 1M list")
	}
}

func TestConcurrentRequestsAreSafe(t *testing.T) {
	s, tok := newSimUser(t, Options{DisableRateLimits: true})
	s.SeedBookmarks("1", 500)
	s.CreateFolder("1", "f", "F")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				walk(t, s, "1", tok, 50)
			}
		})
	}
	wg.Go(func() {
		for range 200 {
			_ = s.Bookmark("1", s.NewPostID())
			s.AddToFolder("1", "f", s.NewPostID())
			_ = s.Usage("1")
		}
	})
	wg.Go(func() {
		for range 50 {
			get(t, s, "/2/users/1/bookmarks/folders/f", tok)
			postJSON(t, s, "/2/users/1/bookmarks", tok, `{"tweet_id":"77"}`)
		}
	})
	wg.Wait()
	if len(s.Bookmarks("1")) != 701 {
		t.Fatal(len(s.Bookmarks("1")))
	}
}

// BenchmarkListPage100 measures serving one page of 100 posts with many
// fields and expansions (the pipeline benchmark's hot path), without the network.
func BenchmarkListPage100(b *testing.B) {
	for _, c := range []struct{ name, query string }{
		{"default", "max_results=100"},
		{"fields", "max_results=100&tweet.fields=created_at,author_id,conversation_id,lang,public_metrics,entities,referenced_tweets,attachments,in_reply_to_user_id,note_tweet,possibly_sensitive&expansions=author_id,attachments.media_keys&user.fields=created_at,description&media.fields=url,width,height"},
	} {
		b.Run(c.name, func(b *testing.B) {
			s := New(Options{DisableRateLimits: true})
			s.SeedBookmarks("1", 100_000)
			tok := s.IssueToken("1")
			h := s.Handler()
			req := httptest.NewRequest("GET", "/2/users/1/bookmarks?"+c.query, nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				clear(w.h)
				h.ServeHTTP(w, req)
			}
			b.SetBytes(int64(w.n))
		})
	}
}

type discardWriter struct {
	h http.Header
	n int
}

func (d *discardWriter) Header() http.Header { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) {
	d.n = len(p)
	return io.Discard.Write(p)
}
func (d *discardWriter) WriteHeader(int) {}
