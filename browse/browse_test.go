package browse

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// htmlText is the text of a post, and the name of its author, that a page
// showing it as HTML would run.
const htmlText = `<img src=x onerror="document.title='pwned'"><script>alert(1)</script>`

// examples is an archive of the simulator's content examples and of a post
// whose text and author's name are HTML, bookmarked last, with a photo.
type examples struct {
	dir  string
	sim  *xsim.Server
	ex   xsim.ContentExamples
	html string // the HTML post's id
	// next exports again (a day later).
	next func()
}

// exportExamples exports the examples, every kind of content and the photos
// stored, in two runs: before the second, the author of the long post
// deletes it, and the second run's compliance check redacts it.
func exportExamples(t *testing.T) *examples {
	t.Helper()
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	e := &examples{dir: t.TempDir(), sim: sim, ex: sim.SeedContentExamples("1001"), html: "3201"}
	sim.AddUser("2099", htmlText)
	sim.PutPost(xsim.Post{ID: e.html, Text: htmlText, AuthorID: "2099", MediaKeys: []string{"3_4201"}, CreatedAt: time.Date(2024, 5, 6, 7, 0, 0, 0, time.UTC)})
	if err := sim.Bookmark("1001", e.html); err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf(`kind: source
spec:
  name: x
  path: ./cq-source-x
  registry: local
  version: v0.0.0
  tables: ["*"]
  destinations: ["file"]
  spec:
    base_url: %q
    content: {authors: true, referenced_posts: true}
    media_files: {}
    compliance: {bearer_token: %q}
    accounts:
      - {user_id: "1001", access_token: %q}
`, sim.URL(), sim.IssueAppOnlyToken(), sim.IssueToken("1001"))
	src, err := cqspec.Parse([]byte(spec), "spec.yml", os.LookupEnv, clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	e.next = func() {
		t.Helper()
		clk.Advance(24 * time.Hour)
		if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: e.dir, Clock: clk}); err != nil {
			t.Fatal(err)
		}
	}
	e.next()
	if err := sim.DeletePost(e.ex.LongPost); err != nil {
		t.Fatal(err)
	}
	e.next()
	return e
}

// served is a browse server of an archive, on a loopback port.
type served struct {
	URL, port string
}

// Served serves the archive in dir on a loopback port until the test ends
// (for the tests of package browse_test too).
func Served(t *testing.T, dir string) served {
	t.Helper()
	s, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return served{URL: "http://" + ln.Addr().String(), port: port}
}

// get requests path (sent as it is, not cleaned) with the Host header
// host ("" for the server's address) and returns the status and body.
func (s served) get(t *testing.T, host, path string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, s.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.URL.Opaque = path
	if host != "" {
		req.Host = host
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// page gets a page of the view and fails unless it is served.
func (s served) page(t *testing.T, query string) string {
	t.Helper()
	code, body := s.get(t, "", "/"+query)
	if code != http.StatusOK {
		t.Fatalf("/%s: %d %s", query, code, body)
	}
	return body
}

var articleRE = regexp.MustCompile(`(?s)<article class="bookmark[^"]*" id="post-(\d+)">.*?</article>`)

// articles are the bookmarks a page shows, by post id, in order.
func articles(page string) (ids []string, html map[string]string) {
	html = map[string]string{}
	for _, m := range articleRE.FindAllStringSubmatch(page, -1) {
		ids = append(ids, m[1])
		html[m[1]] = m[0]
	}
	return ids, html
}

// The page lists the bookmarks newest bookmarked first, the newest with its
// photo, served from DIR/media as it is stored there.
func TestTheNewestBookmarkComesFirstWithItsPhotoFromTheArchive(t *testing.T) {
	e := exportExamples(t)
	s := Served(t, e.dir)
	ids, html := articles(s.page(t, ""))
	want := []string{e.html, e.ex.QuoteOfProtected, e.ex.ReplyToDeleted, e.ex.ArticlePost, e.ex.LongPost}
	if strings.Join(ids, " ") != strings.Join(want, " ") {
		t.Fatalf("bookmarks %v, want %v", ids, want)
	}
	src := regexp.MustCompile(`<img src="/media/([^"]+)"`).FindStringSubmatch(html[e.html])
	if src == nil {
		t.Fatalf("the newest bookmark shows no photo:\n%s", html[e.html])
	}
	code, body := s.get(t, "", "/media/"+src[1])
	stored, err := os.ReadFile(filepath.Join(e.dir, "media", src[1]))
	if err != nil || code != http.StatusOK || body != string(stored) {
		t.Errorf("/media/%s: %d, %d bytes; stored: %d bytes (%v)", src[1], code, len(body), len(stored), err)
	}
	// The article's text, the quoted post with its photo, the reply to a
	// post X did not return.
	for id, want := range map[string][]string{
		e.ex.ArticlePost:    {"Article: " + e.ex.ArticleTitle, e.ex.ArticleText[:60], `<img src="/media/`},
		e.ex.ReplyToDeleted: {"Replies to", "X did not return it"},
	} {
		for _, w := range want {
			if !strings.Contains(html[id], w) {
				t.Errorf("post %s shows no %q:\n%s", id, w, html[id])
			}
		}
	}
}

// A post's text and its author's name are shown as the characters they
// are, never as HTML; so is a search.
func TestEveryStringFromXIsShownAsText(t *testing.T) {
	e := exportExamples(t)
	s := Served(t, e.dir)
	escaped := `&lt;img src=x onerror=&#34;document.title=&#39;pwned&#39;&#34;&gt;&lt;script&gt;alert(1)&lt;/script&gt;`
	for _, q := range []string{"", "?q=" + url.QueryEscape(htmlText)} {
		page := s.page(t, q)
		_, html := articles(page)
		if n := strings.Count(html[e.html], escaped); n != 3 { // its text, its author's name and username
			t.Errorf("%q: the HTML post shows its text as text %d times, want 3:\n%s", q, n, html[e.html])
		}
		if strings.Contains(page, "<script") || strings.Contains(page, "<img src=x") {
			t.Errorf("%q: the page holds the HTML of a post:\n%s", q, page)
		}
	}
}

// A bookmark X reported withdrawn shows as such, with when and why, and
// none of its content.
func TestAWithdrawnBookmarkShowsWhatRemainsOfIt(t *testing.T) {
	e := exportExamples(t)
	s := Served(t, e.dir)
	_, html := articles(s.page(t, ""))
	got := html[e.ex.LongPost]
	for _, want := range []string{`class="bookmark withdrawn"`, "Withdrawn: X reported this post deleted", "no longer in the archive"} {
		if !strings.Contains(got, want) {
			t.Errorf("no %q in\n%s", want, got)
		}
	}
	for _, gone := range []string{e.ex.LongText[:40], "<img", "Quotes"} {
		if strings.Contains(got, gone) {
			t.Errorf("the withdrawn bookmark still shows %q:\n%s", gone, got)
		}
	}
}

// A search finds bookmarks by words of their text, their author's name or
// username and their article's title, case aside; by the dates they were
// posted; and those with media. Its address is the search.
func TestSearchFindsByTextAuthorTitleDateAndMedia(t *testing.T) {
	e := exportExamples(t)
	s := Served(t, e.dir)
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"?q=DISAGREE", []string{e.ex.ReplyToDeleted}},
		{"?q=worth+reading", []string{e.ex.QuoteOfProtected}},
		{"?q=keeping+save", []string{e.ex.ArticlePost}}, // the article's title
		{"?q=%40bo", []string{e.ex.ReplyToDeleted, e.ex.ArticlePost}},
		{"?q=bo+https", []string{e.ex.ArticlePost}},
		{"?q=onerror", []string{e.html}},
		{"?q=nowhere-to-be-found", nil},
		{"?media=1", []string{e.html, e.ex.ArticlePost}},
		{"?from=2024-05-06&to=2024-05-06", []string{e.html}},
		{"?q=disagree&from=2024-05-07", nil},
	} {
		ids, _ := articles(s.page(t, tc.query))
		if strings.Join(ids, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%s: %v, want %v", tc.query, ids, tc.want)
		}
	}
	if code, body := s.get(t, "", "/?from=May"); code != http.StatusBadRequest || !strings.Contains(body, "from=May: want a date as YYYY-MM-DD") {
		t.Errorf("/?from=May: %d %s", code, body)
	}
}

// A request for another host than the loopback address the server listens
// on is refused: a page of another site whose name it points at 127.0.0.1
// (DNS rebinding) cannot read the archive.
func TestARequestForAnotherHostIsRefused(t *testing.T) {
	e := exportExamples(t)
	s := Served(t, e.dir)
	for host, want := range map[string]int{
		"":                       http.StatusOK,
		"localhost:" + s.port:    http.StatusOK,
		"evil.example:" + s.port: http.StatusMisdirectedRequest,
		"evil.example":           http.StatusMisdirectedRequest,
		"127.0.0.1:1":            http.StatusMisdirectedRequest,
	} {
		for _, path := range []string{"/", "/assets/style.css"} {
			if code, body := s.get(t, host, path); code != want {
				t.Errorf("Host %q, %s: %d, want %d: %.80s", host, path, code, want, body)
			}
		}
	}
}

// Only files under DIR/media are served: a name that leaves it (.., an
// absolute path, a link out of it) is refused.
func TestOnlyTheFilesOfDIRMediaAreServed(t *testing.T) {
	e := exportExamples(t)
	if err := os.Symlink(filepath.Join(e.dir, ".state", "state.json"), filepath.Join(e.dir, "media", "link.json")); err != nil {
		t.Fatal(err)
	}
	s := Served(t, e.dir)
	for _, path := range []string{"/media/../.state/state.json", "/media/%2e%2e/.state/state.json", "/media/..%2f.state%2fstate.json",
		"/media//etc/passwd", "/media/" + url.PathEscape(filepath.Join(e.dir, ".state", "state.json")), `/media/..\.state\state.json`,
		"/media/link.json", "/media/", "/media/nothing.jpg", "/.state/state.json", "/x_bookmarks/"} {
		code, body := s.get(t, "", path)
		if code != http.StatusBadRequest && code != http.StatusNotFound || strings.Contains(body, "format") {
			t.Errorf("%s: %d %.80s", path, code, body)
		}
	}
}

// Serving reads the archive and writes nothing to it.
func TestNothingIsWrittenToDIR(t *testing.T) {
	e := exportExamples(t)
	before := tree(t, e.dir)
	s := Served(t, e.dir)
	page := s.page(t, "?q=bo")
	s.page(t, "?media=1&page=1")
	for _, m := range regexp.MustCompile(`src="(/media/[^"]+)"`).FindAllStringSubmatch(page, -1) {
		s.get(t, "", m[1])
	}
	if after := tree(t, e.dir); after != before {
		t.Errorf("DIR changed:\nbefore:\n%s\nafter:\n%s", before, after)
	}
}

// tree lists every entry under dir with its size and modification time.
func tree(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %v %d %s\n", path, fi.Mode(), fi.Size(), fi.ModTime())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// An export beside the server changes what the next page shows: the
// archive is read again.
func TestTheNextPageShowsWhatAnExportAdded(t *testing.T) {
	e := exportExamples(t)
	s := Served(t, e.dir)
	s.page(t, "")
	added := e.sim.SeedBookmarks("1001", 1)[0]
	e.next()
	if ids, _ := articles(s.page(t, "")); len(ids) == 0 || ids[0] != added {
		t.Errorf("after an export, the page shows %v first, want %s", ids, added)
	}
}
