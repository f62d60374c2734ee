package browse_test

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/browse"
	"github.com/cq-source-x/cq-source-x/cli"
)

// The page of the sandbox demo's archive in a real browser: headless
// Chromium (Debian's chromium), driven over the DevTools protocol on a pipe
// (--remote-debugging-pipe: JSON messages ended by a NUL, no library).
//
//	go test ./browse -run TestTheDemosPageInABrowser -screenshot ../docs/browse.png
//
// writes the screenshot of docs/browse.png.
var screenshot = flag.String("screenshot", "", "write a PNG screenshot of the demo's page to this file")

// The demo's page lists the newest bookmark first with its text, and the
// photos of the first bookmarks loaded from DIR/media; a search typed in
// the page finds an older bookmark by a word of it; the bookmark whose
// author deleted it shows no content.
func TestTheDemosPageInABrowser(t *testing.T) {
	chrome := startChromium(t)
	dir := filepath.Join(t.TempDir(), "out")
	if code := cli.Run(context.Background(), []string{"export", "--sandbox", "--out", dir, "--quiet"}, strings.NewReader(""), io.Discard, io.Discard); code != 0 {
		t.Fatalf("export --sandbox: exit %d", code)
	}
	url := browse.Served(t, dir).URL

	chrome.open(t, url+"/")
	// Photos load lazily: those in view, after the page.
	chrome.waitFor(t, `[...document.querySelectorAll("article .media img")].slice(0, 3).every(img => img.complete)`)
	var first struct {
		ID, Text string
		Photos   []bool // loaded, of each photo of the page's bookmarks, in order
		FirstHas bool   // the first bookmark has a photo
	}
	chrome.eval(t, `(() => {
		const a = document.querySelector("article");
		return {ID: a.id, Text: a.querySelector(".text").textContent, FirstHas: !!a.querySelector(".media img"),
			Photos: [...document.querySelectorAll("article .media img")].slice(0, 3).map(img =>
				img.complete && img.naturalWidth > 0 && img.getAttribute("src").startsWith("/media/"))};
	})()`, &first)
	// The demo's newest bookmarks are made at its run, with or without a
	// photo: the newest's, when it has one, and the first ones of the page.
	newest := pageArticles(t, url+"/")[0]
	if first.ID != "post-"+newest.id || first.Text != newest.text {
		t.Errorf("the page shows first %s (%q); the newest bookmark is %s (%q)", first.ID, first.Text, newest.id, newest.text)
	}
	if len(first.Photos) == 0 || slices.Contains(first.Photos, false) {
		t.Errorf("the first page's photos loaded: %v (the newest bookmark has one: %v)", first.Photos, first.FirstHas)
	}
	if *screenshot != "" {
		chrome.screenshot(t, *screenshot)
	}

	// A word of a bookmark of the second page, typed into the search box.
	older := pageArticles(t, url+"/?page=2")[0]
	word := slices.MaxFunc(strings.Fields(older.text), func(a, b string) int { return len(a) - len(b) })
	chrome.eval(t, fmt.Sprintf(`(() => { const f = document.querySelector("form[role=search]");
		f.q.value = %q; f.requestSubmit(); return true })()`, word), nil)
	chrome.waitFor(t, fmt.Sprintf(`location.search.includes("q=") && document.readyState == "complete" && !!document.querySelector("#post-%s")`, older.id))
	var count string
	chrome.eval(t, `document.querySelector(".count").textContent`, &count)
	if !strings.Contains(count, " of ") {
		t.Errorf("after a search for %q the page says %q", word, count)
	}

	// The bookmark its author deleted: withdrawn, nothing of its content.
	withdrawn := 0
	for page := 1; ; page++ {
		body := get(t, fmt.Sprintf("%s/?account=1001&page=%d", url, page))
		for _, a := range regexp.MustCompile(`(?s)<article class="bookmark withdrawn".*?</article>`).FindAllString(body, -1) {
			withdrawn++
			if !strings.Contains(a, "X reported this post deleted") || strings.Contains(a, `class="text"`) || strings.Contains(a, "<img") {
				t.Errorf("the withdrawn bookmark shows:\n%s", a)
			}
		}
		if !strings.Contains(body, `rel="next"`) {
			break
		}
	}
	if withdrawn != 1 {
		t.Errorf("%d withdrawn bookmarks shown, want the demo's one", withdrawn)
	}
}

func get(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("%s: %d %v", url, resp.StatusCode, err)
	}
	return string(body)
}

type shown struct{ id, text string }

var articleRE = regexp.MustCompile(`(?s)<article class="bookmark" id="post-(\d+)">.*?<p class="text">([^<]*)</p>`)

// pageArticles are the bookmarks with a text a page shows, in order.
func pageArticles(t *testing.T, url string) []shown {
	t.Helper()
	var out []shown
	for _, m := range articleRE.FindAllStringSubmatch(get(t, url), -1) {
		out = append(out, shown{m[1], htmlUnescape(m[2])})
	}
	if len(out) == 0 {
		t.Fatalf("%s shows no bookmark", url)
	}
	return out
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&lt;", "<", "&gt;", ">", "&#34;", `"`, "&#39;", "'", "&amp;", "&").Replace(s)
}

// chromium is a headless Chromium driven over its DevTools pipe, with one
// page open.
type chromium struct {
	in      io.Writer
	out     *bufio.Reader
	id      int
	session string
}

// startChromium starts headless Chromium, or skips the test when it is
// not installed.
func startChromium(t *testing.T) *chromium {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("the browser test needs Chromium (Debian: apt-get install chromium), which is not installed: skipped")
	}
	toChrome, ourEnd, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromChrome, chromeEnd, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir="+t.TempDir(), "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toChrome, chromeEnd} // its fd 3 it reads, 4 it writes
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	toChrome.Close()
	chromeEnd.Close()
	c := &chromium{in: ourEnd, out: bufio.NewReader(fromChrome)}
	t.Cleanup(func() {
		// Browser.close ends Chromium and its children, which write to
		// the profile directory until they end.
		c.session = ""
		c.call(t, "Browser.close", nil, nil)
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
		ourEnd.Close()
		fromChrome.Close()
	})
	var target struct{ TargetID string }
	c.call(t, "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct{ SessionID string }
	c.call(t, "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	c.session = attached.SessionID
	c.call(t, "Emulation.setDeviceMetricsOverride", map[string]any{"width": 1000, "height": 1250, "deviceScaleFactor": 1, "mobile": false}, nil)
	return c
}

// call sends a command of the protocol and decodes its result into result
// (nil: none), passing over the events that come before it.
func (c *chromium) call(t *testing.T, method string, params, result any) {
	t.Helper()
	if err := c.try(t, method, params, result); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
}

// try is call, but for the error the command returned.
func (c *chromium) try(t *testing.T, method string, params, result any) error {
	t.Helper()
	c.id++
	msg := map[string]any{"id": c.id, "method": method, "params": params}
	if c.session != "" {
		msg["sessionId"] = c.session
	}
	b, err := json.Marshal(msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.in.Write(append(b, 0)); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	for {
		line, err := c.out.ReadBytes(0)
		if err != nil {
			t.Fatalf("%s: Chromium's pipe: %v", method, err)
		}
		var resp struct {
			ID     int
			Result json.RawMessage
			Error  *struct{ Message string }
		}
		if err := json.Unmarshal(line[:len(line)-1], &resp); err != nil {
			t.Fatalf("%s: %v", method, err)
		}
		if resp.ID != c.id {
			continue // an event
		}
		if resp.Error != nil {
			return errors.New(resp.Error.Message)
		}
		if result != nil {
			if err := json.Unmarshal(resp.Result, result); err != nil {
				t.Fatalf("%s: %v", method, err)
			}
		}
		return nil
	}
}

// eval evaluates a JavaScript expression in the page and decodes its value
// into v (nil: none).
func (c *chromium) eval(t *testing.T, expr string, v any) {
	t.Helper()
	var r struct {
		Result           struct{ Value json.RawMessage }
		ExceptionDetails *struct{ Text string }
	}
	c.call(t, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r)
	if r.ExceptionDetails != nil {
		t.Fatalf("%s: %s", expr, r.ExceptionDetails.Text)
	}
	if v != nil {
		if err := json.Unmarshal(r.Result.Value, v); err != nil {
			t.Fatalf("%s: %v (%s)", expr, err, r.Result.Value)
		}
	}
}

// waitFor waits until the JavaScript condition holds in the page (one
// that is being left for another does not answer).
func (c *chromium) waitFor(t *testing.T, cond string) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		var r struct{ Result struct{ Value bool } }
		err := c.try(t, "Runtime.evaluate", map[string]any{"expression": "(() => { try { return !!(" + cond + ") } catch (e) { return false } })()", "returnByValue": true}, &r)
		if err == nil && r.Result.Value {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("waited 30 s for %s", cond)
		}
	}
}

// open loads url and waits until it and its images have loaded.
func (c *chromium) open(t *testing.T, url string) {
	t.Helper()
	var nav struct{ ErrorText string }
	c.call(t, "Page.navigate", map[string]any{"url": url}, &nav)
	if nav.ErrorText != "" {
		t.Fatalf("%s: %s", url, nav.ErrorText)
	}
	c.waitFor(t, `location.href == `+jsString(url)+` && document.readyState == "complete"`)
}

// screenshot writes a PNG of the page as the window shows it.
func (c *chromium) screenshot(t *testing.T, path string) {
	t.Helper()
	var shot struct{ Data string }
	c.call(t, "Page.captureScreenshot", map[string]any{"format": "png"}, &shot)
	png, err := base64.StdEncoding.DecodeString(shot.Data)
	if err == nil {
		err = os.WriteFile(path, png, 0o644)
	}
	if err != nil {
		t.Fatal(errors.Join(errors.New("the screenshot"), err))
	}
	t.Logf("wrote %s", path)
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
