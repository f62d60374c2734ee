package media

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/media/store"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

func newSaver(t *testing.T, root string, o SaverOptions) *Saver {
	t.Helper()
	st, err := store.OpenDir(root)
	if err != nil {
		t.Fatal(err)
	}
	o.Store = st
	if o.Fetcher == nil {
		o.Fetcher = &Fetcher{Timeouts: timeouts}
	}
	if o.RetryDelay == 0 {
		o.RetryDelay = time.Millisecond
	}
	return NewSaver(o)
}

// requests counts the media host's requests of u.
func requests(s *xsim.Server, u string) int {
	n := 0
	for _, r := range s.MediaRequests() {
		if s.MediaURL()+r.Path == u {
			n++
		}
	}
	return n
}

func TestAStoredFileHoldsTheBytesFetchedUnderTheirHash(t *testing.T) {
	s := sim(t, 150<<10)
	root := t.TempDir()
	sv := newSaver(t, root, SaverOptions{})
	out := sv.Save(context.Background(), Request{URL: video(s, 1)})
	if out.Status != Stored || !out.Fetched || out.File == nil {
		t.Fatalf("%+v", out)
	}
	resp, err := http.Get(video(s, 1))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	got, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(out.File.Key)))
	sum := sha256.Sum256(want)
	if err != nil || !bytes.Equal(got, want) || out.File.SHA256 != hex.EncodeToString(sum[:]) || out.File.ContentType != "video/mp4" {
		t.Fatalf("stored %+v: %d bytes (%v), want %d", out.File, len(got), err, len(want))
	}
}

func TestAFileIsFetchedOnce(t *testing.T) {
	s := sim(t, 20<<10)
	root := t.TempDir()
	u := photo(s, 1)
	first := newSaver(t, root, SaverOptions{})
	var wg sync.WaitGroup
	outs := make([]Outcome, 8)
	for i := range outs {
		wg.Add(1)
		go func() { defer wg.Done(); outs[i] = first.Save(context.Background(), Request{URL: u}) }()
	}
	wg.Wait()
	fetched := 0
	for _, o := range outs {
		if o.Status != Stored || o.File.Key != outs[0].File.Key {
			t.Fatalf("outcomes %+v", outs)
		}
		if o.Fetched {
			fetched++
		}
	}
	// A later run, with another saver, finds it in the store.
	again := newSaver(t, root, SaverOptions{}).Save(context.Background(), Request{URL: u})
	if n := requests(s, u); n != 1 || fetched != 1 || again.Status != Stored || again.Fetched {
		t.Fatalf("%d requests, %d outcomes fetched; the next run: %+v", n, fetched, again)
	}
}

func TestAURLNotStoredIsAskedForOncePerRun(t *testing.T) {
	s := sim(t, 20<<10)
	s.SetMediaFault(xsim.MediaPaths("3_1")[0], xsim.MediaFault{Status: 404})
	sv := newSaver(t, t.TempDir(), SaverOptions{})
	for range 3 {
		if out := sv.Save(context.Background(), Request{URL: photo(s, 1)}); out.Status != Gone || out.HTTPStatus != 404 {
			t.Fatalf("%+v", out)
		}
	}
	if n := requests(s, photo(s, 1)); n != 1 {
		t.Fatalf("%d requests of a URL that answered 404", n)
	}
}

func TestTransientFaultsAreTriedAgain(t *testing.T) {
	s := sim(t, 20<<10)
	path := xsim.MediaPaths("3_1")[0]
	s.SetMediaFault(path, xsim.MediaFault{Status: 503, Times: 2})
	sv := newSaver(t, t.TempDir(), SaverOptions{Attempts: 3})
	if out := sv.Save(context.Background(), Request{URL: photo(s, 1)}); out.Status != Stored {
		t.Fatalf("after two 503s: %+v", out)
	}
	s.SetMediaFault(path, xsim.MediaFault{Status: 503})
	sv = newSaver(t, t.TempDir(), SaverOptions{Attempts: 2})
	out := sv.Save(context.Background(), Request{URL: photo(s, 1)})
	if out.Status != Transient || out.HTTPStatus != 503 || requests(s, photo(s, 1)) != 5 {
		t.Fatalf("503 every time: %+v after %d requests", out, requests(s, photo(s, 1)))
	}
}

func TestAPreferredURLAnsweredWithA4xxGivesWayToTheNext(t *testing.T) {
	s := sim(t, 20<<10)
	s.SetMediaFault(xsim.MediaPaths("3_1")[0], xsim.MediaFault{Status: 404})
	sv := newSaver(t, t.TempDir(), SaverOptions{})
	out := sv.Save(context.Background(), Request{URL: photo(s, 2), Prefer: []string{photo(s, 1)}})
	if out.Status != Stored || requests(s, photo(s, 1)) != 1 || requests(s, photo(s, 2)) != 1 {
		t.Fatalf("%+v", out)
	}
	s.SetMediaFault(xsim.MediaPaths("3_3")[0], xsim.MediaFault{Status: 404})
	out = sv.Save(context.Background(), Request{URL: photo(s, 3)})
	if out.Status != Gone {
		t.Fatalf("the last URL's answer counts: %+v", out)
	}
	s.SetMediaFault(xsim.MediaPaths("3_4")[0], xsim.MediaFault{Status: 500})
	out = sv.Save(context.Background(), Request{URL: photo(s, 5), Prefer: []string{photo(s, 4)}})
	if out.Status != Transient || requests(s, photo(s, 5)) != 0 {
		t.Fatalf("a 5xx of a preferred URL is a fault, not an answer: %+v", out)
	}
}

func TestStoringA200MBVideoKeepsMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("stores 200 MB")
	}
	s := sim(t, 200<<20)
	sv := newSaver(t, t.TempDir(), SaverOptions{})
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	out := sv.Save(context.Background(), Request{URL: video(s, 1)})
	runtime.ReadMemStats(&after)
	if out.Status != Stored || out.File.Size != 200<<20 {
		t.Fatalf("%+v", out)
	}
	// The simulator streams too, in this process: the two allocate a few
	// buffers between them, not the file.
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("storing a 200 MB video allocated %d KB", alloc>>10)
	if alloc > 16<<20 {
		t.Fatalf("storing a 200 MB video allocated %d MB", alloc>>20)
	}
}

func TestProgressCountsFilesAndBytes(t *testing.T) {
	s := sim(t, 10<<10)
	sv := newSaver(t, t.TempDir(), SaverOptions{})
	sv.Progress().Want(3)
	s.SetMediaFault(xsim.MediaPaths("3_3")[0], xsim.MediaFault{Status: 404})
	for i := 1; i <= 3; i++ {
		sv.Save(context.Background(), Request{URL: photo(s, i)})
	}
	sv.Save(context.Background(), Request{URL: photo(s, 1)})
	c := sv.Progress().Counts()
	if c.Wanted != 3 || c.Done != 4 || c.Stored != 3 || c.Fetched != 2 || c.Bytes != 20<<10 || c.Failed[Gone] != 1 || len(c.Failed) != 1 {
		t.Fatalf("counts %+v", c)
	}
}

// The progress line counts the files not stored by why, most first.
func TestTheProgressLineCountsFailuresByReason(t *testing.T) {
	c := Counts{Wanted: 777, Done: 330, Stored: 2, Fetched: 1, Failed: map[Status]int64{Gone: 8, Transient: 320}, Bytes: 2e6}
	if got, want := c.String(), "330 of 777 files done: 2 stored (1 fetched), 328 not (320 transient, 8 gone); 2.0 MB, 447 left"; got != want {
		t.Errorf("%s\nwant %s", got, want)
	}
}

// A host that refuses pauseAfter files in a row (no answer, or a 429 or
// 5xx, after each file's attempts) is asked for nothing more by the run:
// its other files are transient at once, saying why, and the pause is told
// once. A file the store holds is still stored, and another host goes on;
// a host that answers between refusals is not paused.
func TestAHostThatRefusesFilesInARowIsPausedForTheRun(t *testing.T) {
	s := sim(t, 10<<10)
	for i := 1; i <= 20; i++ {
		s.SetMediaFault(xsim.MediaPaths(fmt.Sprintf("3_%d", i))[0], xsim.MediaFault{Status: 503})
	}
	root := t.TempDir()
	other := strings.Replace(photo(s, 21), "127.0.0.1", "localhost", 1) // the same server, another host
	if out := newSaver(t, root, SaverOptions{}).Save(context.Background(), Request{URL: photo(s, 22)}); out.Status != Stored {
		t.Fatalf("%+v", out)
	}
	sv := newSaver(t, root, SaverOptions{Attempts: 2})
	var paused []string
	sv.OnPause(func(host, why string) { paused = append(paused, host+": "+why) })
	for i := 1; i <= 20; i++ {
		out := sv.Save(context.Background(), Request{URL: photo(s, i)})
		if out.Status != Transient || (i > pauseAfter) != strings.Contains(out.Err, "is paused for this run") {
			t.Fatalf("file %d: %+v", i, out)
		}
	}
	host := strings.TrimPrefix(s.MediaURL(), "http://")
	if len(paused) != 1 || !strings.HasPrefix(paused[0], host+": 5 files in a row got no answer or a 429 or 5xx (the last: transient: the server answered 503") {
		t.Fatalf("told %q", paused)
	}
	for i := 1; i <= 20; i++ {
		if want := map[bool]int{true: 2, false: 0}[i <= pauseAfter]; requests(s, photo(s, i)) != want {
			t.Fatalf("file %d: %d requests, want %d", i, requests(s, photo(s, i)), want)
		}
	}
	if out := sv.Save(context.Background(), Request{URL: photo(s, 22)}); out.Status != Stored {
		t.Fatalf("a file the store holds, of the paused host: %+v", out)
	}
	if out := sv.Save(context.Background(), Request{URL: other}); out.Status != Stored || !out.Fetched {
		t.Fatalf("another host: %+v", out)
	}

	// Refusals with an answer between them pause nothing.
	sv = newSaver(t, t.TempDir(), SaverOptions{Attempts: 1})
	sv.OnPause(func(host, why string) { t.Errorf("paused %s: %s", host, why) })
	for i := 1; i <= 2*pauseAfter-2; i++ {
		if i == pauseAfter {
			sv.Save(context.Background(), Request{URL: photo(s, 23)})
		}
		sv.Save(context.Background(), Request{URL: photo(s, i)})
	}
}

func ExampleSaver() {
	s := xsim.New(xsim.Options{})
	s.Start()
	defer s.Close()
	dir, _ := os.MkdirTemp("", "media")
	defer os.RemoveAll(dir)
	st, _ := store.OpenDir(dir)
	sv := NewSaver(SaverOptions{Store: st, Fetcher: &Fetcher{Timeouts: timeouts}})
	out := sv.Save(context.Background(), Request{URL: s.MediaURL() + xsim.MediaPaths("3_1")[0]})
	fmt.Println(out.Status, out.Fetched, filepath.Ext(out.File.Key))
	out = sv.Save(context.Background(), Request{URL: s.MediaURL() + xsim.MediaPaths("3_1")[0]})
	fmt.Println(out.Status, out.Fetched)
	// Output:
	// stored true .jpg
	// stored false
}

func TestAStoppedRunFetchesNoMoreAndDropsWhatWasInFlight(t *testing.T) {
	s := sim(t, 4<<20)
	s.SetMediaFault(xsim.MediaPaths("3_1")[0], xsim.MediaFault{Rate: 1 << 20}) // 4 s to send
	root := t.TempDir()
	stop, interrupt := context.WithCancelCause(context.Background())
	sv := newSaver(t, root, SaverOptions{Stop: stop})
	done := make(chan Outcome)
	go func() { done <- sv.Save(context.Background(), Request{URL: photo(s, 1)}) }()
	for requests(s, photo(s, 1)) == 0 {
		time.Sleep(time.Millisecond)
	}
	interrupt(errors.New("interrupted by the test"))
	if out := <-done; out.Status != Interrupted || !strings.Contains(out.Err, "interrupted by the test") {
		t.Fatalf("the file in flight: %+v", out)
	}
	if out := sv.Save(context.Background(), Request{URL: photo(s, 2)}); out.Status != Interrupted || requests(s, photo(s, 2)) != 0 {
		t.Fatalf("a file after the stop: %+v", out)
	}
	entries, _ := os.ReadDir(filepath.Join(root, ".tmp"))
	if n := len(entries); n != 0 || sv.Progress().Counts().Done != 0 {
		t.Fatalf("%d spools left; progress %+v", n, sv.Progress().Counts())
	}
}
