package media

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// sim starts a simulator whose media files are size bytes.
func sim(t *testing.T, size int64) *xsim.Server {
	t.Helper()
	s := xsim.New(xsim.Options{MediaSize: func(string) int64 { return size }})
	if err := s.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

var timeouts = client.Timeouts{Connect: 5 * time.Second, Headers: 5 * time.Second, Request: 30 * time.Second}

// photo is the URL of the photo of media key 3_<n> on s.
func photo(s *xsim.Server, n int) string {
	return s.MediaURL() + xsim.MediaPaths(fmt.Sprintf("3_%d", n))[0]
}

// video is the URL of the best variant of video 7_<n> on s.
func video(s *xsim.Server, n int) string {
	p := xsim.MediaPaths(fmt.Sprintf("7_%d", n))
	return s.MediaURL() + p[len(p)-1]
}

func fetch(t *testing.T, f *Fetcher, u string, budget *Budget) (*Result, []byte, error) {
	t.Helper()
	var b bytes.Buffer
	res, err := f.Fetch(context.Background(), u, &b, budget)
	return res, b.Bytes(), err
}

func statusOf(err error) Status {
	var fe *Error
	if errors.As(err, &fe) {
		return fe.Status
	}
	return ""
}

func TestAFileIsFetchedWholeWithItsContentType(t *testing.T) {
	s := sim(t, 300<<10)
	f := &Fetcher{Timeouts: timeouts}
	for u, ct := range map[string]string{photo(s, 1): "image/", video(s, 1): "video/mp4"} {
		res, body, err := fetch(t, f, u, nil)
		if err != nil {
			t.Fatalf("%s: %v", u, err)
		}
		if res.Size != 300<<10 || len(body) != 300<<10 || !strings.HasPrefix(res.ContentType, ct) {
			t.Errorf("%s: %+v, %d bytes", u, res, len(body))
		}
	}
}

func TestNoCredentialReachesTheMediaHost(t *testing.T) {
	s := sim(t, 10<<10)
	f := &Fetcher{Timeouts: timeouts, UserAgent: "cq-source-x/test"}
	if _, _, err := fetch(t, f, photo(s, 1), nil); err != nil {
		t.Fatal(err)
	}
	reqs := s.MediaRequests()
	if len(reqs) != 1 || reqs[0].Authorization != "" {
		t.Fatalf("the media host received %+v", reqs)
	}
}

func TestOnlyHTTPSIsFetchedButOnLoopback(t *testing.T) {
	for u, ok := range map[string]bool{
		"https://pbs.twimg.com/media/A.jpg": true,
		"http://127.0.0.1:9/media/A.jpg":    true,
		"http://localhost:9/media/A.jpg":    true,
		"http://[::1]:9/media/A.jpg":        true,
		"http://pbs.twimg.com/media/A.jpg":  false,
		"ftp://pbs.twimg.com/media/A.jpg":   false,
		"https://user:pw@pbs.twimg.com/A":   false,
		"/media/A.jpg":                      false,
	} {
		if err := CheckURL(u); (err == nil) != ok || err != nil && statusOf(err) != Failed {
			t.Errorf("CheckURL(%q) = %v", u, err)
		}
	}
	f := &Fetcher{Timeouts: timeouts, Transport: failingTransport{t}}
	if _, _, err := fetch(t, f, "http://pbs.twimg.com/media/A.jpg", nil); statusOf(err) != Failed {
		t.Fatalf("plain http to X's CDN: %v", err)
	}
}

// failingTransport fails a test that sends a request.
type failingTransport struct{ t *testing.T }

func (ft failingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ft.t.Errorf("a request was sent to %s", r.URL)
	return nil, errors.New("no request may be sent")
}

func TestARedirectIsFollowedOnlyToHTTPS(t *testing.T) {
	s := sim(t, 10<<10)
	tls := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, photo(s, 9), http.StatusFound) // https → http is refused too
	}))
	defer tls.Close()
	jpeg := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		resp, err := http.Get(photo(s, 8))
		if err != nil {
			t.Error(err)
			return
		}
		defer resp.Body.Close()
		w.Header().Set("Content-Type", "image/jpeg")
		io.Copy(w, resp.Body)
	}))
	defer jpeg.Close()
	f := &Fetcher{Timeouts: timeouts, Transport: jpeg.Client().Transport}

	s.SetMediaFault(xsim.MediaPaths("3_1")[0], xsim.MediaFault{RedirectTo: jpeg.URL + "/media/x.jpg"})
	if res, _, err := fetch(t, f, photo(s, 1), nil); err != nil || res.Size != 10<<10 {
		t.Errorf("a redirect to https: %+v, %v", res, err)
	}
	s.SetMediaFault(xsim.MediaPaths("3_2")[0], xsim.MediaFault{RedirectTo: "http://pbs.twimg.com/media/x.jpg"})
	if _, _, err := fetch(t, f, photo(s, 2), nil); statusOf(err) != Failed || !strings.Contains(err.Error(), "not https") {
		t.Errorf("a redirect to plain http: %v", err)
	}
	if _, _, err := fetch(t, f, tls.URL+"/media/y.jpg", nil); statusOf(err) != Failed {
		t.Errorf("a redirect from https to a loopback http host: %v", err)
	}
	s.SetMediaFault(xsim.MediaPaths("3_3")[0], xsim.MediaFault{RedirectTo: xsim.MediaPaths("3_4")[0]})
	if _, _, err := fetch(t, f, photo(s, 3), nil); err != nil {
		t.Errorf("a redirect within the loopback host: %v", err)
	}
	s.SetMediaFault(xsim.MediaPaths("3_5")[0], xsim.MediaFault{RedirectTo: xsim.MediaPaths("3_5")[0]})
	if _, _, err := fetch(t, f, photo(s, 5), nil); statusOf(err) != Failed || !strings.Contains(err.Error(), "redirects") {
		t.Errorf("a redirect loop: %v", err)
	}
}

func TestEachStatusSaysWhatBecameOfTheFile(t *testing.T) {
	s := sim(t, 10<<10)
	f := &Fetcher{Timeouts: timeouts}
	for i, c := range []struct {
		code int
		want Status
	}{{404, Gone}, {410, Gone}, {403, Forbidden}, {401, Forbidden}, {451, Forbidden}, {500, Transient}, {503, Transient}, {429, Transient}, {400, Failed}} {
		s.SetMediaFault(xsim.MediaPaths(fmt.Sprintf("3_%d", i))[0], xsim.MediaFault{Status: c.code})
		_, _, err := fetch(t, f, photo(s, i), nil)
		var fe *Error
		if !errors.As(err, &fe) || fe.Status != c.want || fe.HTTPStatus != c.code {
			t.Errorf("%d: %v, want %s", c.code, err, c.want)
		}
	}
}

func TestABodyCutShortIsTransient(t *testing.T) {
	s := sim(t, 200<<10)
	f := &Fetcher{Timeouts: timeouts}
	cases := map[string]xsim.MediaFault{
		"cut":                         {CutAfter: 50 << 10},
		"Content-Length too large":    {Length: 300 << 10},
		"Content-Length too small":    {Length: 150 << 10},
		"no Content-Length, cut":      {Length: -1, CutAfter: 70 << 10},
		"video, Content-Length small": {Length: 120 << 10},
	}
	i := 0
	for name, fault := range cases {
		i++
		u, path := photo(s, i), xsim.MediaPaths(fmt.Sprintf("3_%d", i))[0]
		if strings.HasPrefix(name, "video") {
			u = video(s, i)
			path = xsim.MediaPaths(fmt.Sprintf("7_%d", i))[len(xsim.MediaPaths(fmt.Sprintf("7_%d", i)))-1]
		}
		s.SetMediaFault(path, fault)
		if _, _, err := fetch(t, f, u, nil); statusOf(err) != Transient {
			t.Errorf("%s: %v, want %s", name, err, Transient)
		}
	}
}

func TestDeadlinesBoundEachRequest(t *testing.T) {
	s := sim(t, 200<<10)
	s.SetMediaFault(xsim.MediaPaths("3_1")[0], xsim.MediaFault{Delay: 2 * time.Second})
	s.SetMediaFault(xsim.MediaPaths("3_2")[0], xsim.MediaFault{Rate: 100 << 10})
	f := &Fetcher{Timeouts: client.Timeouts{Connect: time.Second, Headers: 200 * time.Millisecond, Request: 500 * time.Millisecond}}
	for i, phase := range map[int]string{1: client.PhaseHeaders, 2: client.PhaseRequest} {
		_, _, err := fetch(t, f, photo(s, i), nil)
		var te *client.TimeoutError
		if statusOf(err) != Transient || !errors.As(err, &te) || te.Phase != phase {
			t.Errorf("photo %d: %v, want a %s timeout", i, err, phase)
		}
	}
}

func TestTheSizeLimitIsEnforcedWhileReading(t *testing.T) {
	s := sim(t, 3<<20)
	s.SetMediaFault(xsim.MediaPaths("3_2")[0], xsim.MediaFault{Length: -1})
	f := &Fetcher{Timeouts: timeouts, MaxSize: 1 << 20}
	_, body, err := fetch(t, f, photo(s, 1), nil)
	var fe *Error
	if !errors.As(err, &fe) || fe.Status != TooLarge || fe.Size != 3<<20 || len(body) != 0 {
		t.Errorf("announced larger: %v, %d bytes written", err, len(body))
	}
	_, body, err = fetch(t, f, photo(s, 2), nil)
	if statusOf(err) != TooLarge || len(body) > 1<<20 {
		t.Errorf("not announced: %v, %d bytes written (limit %d)", err, len(body), 1<<20)
	}
}

func TestTheBudgetIsSpentByTheBytesRead(t *testing.T) {
	s := sim(t, 100<<10)
	s.SetMediaFault(xsim.MediaPaths("3_3")[0], xsim.MediaFault{Length: -1})
	f := &Fetcher{Timeouts: timeouts}
	b := NewBudget(250 << 10)
	for i, want := range []Status{"", "", OverBudget} {
		if _, _, err := fetch(t, f, photo(s, i+1), b); statusOf(err) != want {
			t.Errorf("file %d: %v, want %q", i+1, err, want)
		}
	}
	if left := b.left; left != 0 {
		t.Errorf("after a file that did not fit, %d bytes left; the next files wait for the next run", left)
	}
	if _, _, err := fetch(t, f, photo(s, 4), b); statusOf(err) != OverBudget {
		t.Errorf("after the budget was spent: %v", err)
	}
	if _, _, err := fetch(t, f, photo(s, 5), nil); err != nil {
		t.Errorf("no budget: %v", err)
	}
}

func TestAPageThatIsNotAPhotoOrAVideoIsNotStored(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		io.WriteString(w, "<html><body>Sign in to this Wi-Fi</body></html>")
	}))
	defer srv.Close()
	f := &Fetcher{Timeouts: timeouts}
	if _, _, err := fetch(t, f, srv.URL+"/media/A.jpg", nil); statusOf(err) != Transient || !strings.Contains(err.Error(), "text/html") {
		t.Fatalf("%v", err)
	}
}
