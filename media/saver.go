package media

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/media/store"
	"golang.org/x/sync/semaphore"
)

// Request is one file to store.
type Request struct {
	// URL is the file as X names it: what the store's index records, and
	// the URL fetched last.
	URL string
	// Prefer lists URLs of a better copy of the file (a photo's original
	// size), tried first: one answered with a 4xx gives way to the next.
	Prefer []string
}

// Outcome is what became of a Request.
type Outcome struct {
	Status Status
	// File is the stored file (Stored).
	File *store.File
	// Fetched is true when the file's bytes were downloaded for this
	// request, false when the store held it already.
	Fetched bool
	// HTTPStatus is the status of the last answer, 0 when there was none.
	HTTPStatus int
	// Size is a TooLarge file's announced size, when known.
	Size int64
	// Requests counts the HTTP requests made for it (redirects not
	// counted), 0 when the store held it.
	Requests int
	// Err says why the file is not stored.
	Err string
}

// Saver stores files in a store, fetching each URL at most once, and pauses
// a host that refuses pauseAfter files in a row
// (docs/design/media.md#the-saver-each-url-once-mediasavergo). Safe for
// concurrent use.
type Saver struct {
	o        SaverOptions
	sem      *semaphore.Weighted
	progress Progress
	onPause  func(host, why string)

	mu       sync.Mutex
	inflight map[string]*call
	refused  map[string]int    // by host: the files in a row it refused
	paused   map[string]string // by host: why it is paused
}

// pauseAfter is how many files in a row a media host may refuse, or let
// time out, before the run asks it for nothing more.
const pauseAfter = 5

type SaverOptions struct {
	Store   *store.Store
	Fetcher *Fetcher
	// Budget is the run's byte budget; nil: none.
	Budget *Budget
	// Now is the time files are stored at. Default time.Now.
	Now func() time.Time
	// Concurrency is how many files are fetched at once. Default 4.
	Concurrency int
	// Attempts is how many times a transient fault is tried within the
	// run. Default 3.
	Attempts int
	// RetryDelay is the first wait before an attempt again; it doubles,
	// up to 30s. Default 1s.
	RetryDelay time.Duration
	// Stop, when it ends, stops the run's fetches without ending the
	// callers' contexts (the exporter's interruption; see client.WithStop):
	// Save then returns Interrupted at once, and a fetch in flight is
	// cancelled, its spool dropped.
	Stop context.Context
}

// DefaultConcurrency is SaverOptions.Concurrency when it is not set.
const DefaultConcurrency = 4

func NewSaver(o SaverOptions) *Saver {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Concurrency <= 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.Attempts <= 0 {
		o.Attempts = 3
	}
	if o.RetryDelay <= 0 {
		o.RetryDelay = time.Second
	}
	return &Saver{o: o, sem: semaphore.NewWeighted(int64(o.Concurrency)), inflight: map[string]*call{}, refused: map[string]int{}, paused: map[string]string{}}
}

// OnPause makes f be called once for each host the Saver pauses, with why
// (a sync logs it). nil calls nothing.
func (s *Saver) OnPause(f func(host, why string)) { s.onPause = f }

func (s *Saver) Store() *store.Store { return s.o.Store }
func (s *Saver) Concurrency() int    { return s.o.Concurrency }
func (s *Saver) Progress() *Progress { return &s.progress }

type call struct {
	done chan struct{}
	out  Outcome
}

// Save stores the file r names, unless the store holds it already.
func (s *Saver) Save(ctx context.Context, r Request) Outcome {
	if s.o.Stop != nil {
		if s.o.Stop.Err() != nil {
			return Outcome{Status: Interrupted, Err: context.Cause(s.o.Stop).Error()}
		}
		var stop context.CancelFunc
		ctx, stop = context.WithCancel(ctx)
		defer context.AfterFunc(s.o.Stop, stop)()
		defer stop()
	}
	s.mu.Lock()
	if c, ok := s.inflight[r.URL]; ok {
		s.mu.Unlock()
		select {
		case <-c.done:
			out := c.out
			out.Fetched = false
			s.progress.done(out)
			return out
		case <-ctx.Done():
			return canceled(ctx)
		}
	}
	c := &call{done: make(chan struct{})}
	s.inflight[r.URL] = c
	s.mu.Unlock()

	c.out = s.save(ctx, r)
	if s.o.Stop != nil && s.o.Stop.Err() != nil && c.out.Status != Stored {
		c.out = Outcome{Status: Interrupted, Err: context.Cause(s.o.Stop).Error()}
	}
	close(c.done)
	if c.out.Status == Stored || c.out.Status == Interrupted {
		// The store's index answers later requests (and the next run, an
		// interrupted one's); an outcome of another status is kept, so
		// that the run asks no more of that URL.
		s.mu.Lock()
		delete(s.inflight, r.URL)
		s.mu.Unlock()
	}
	s.progress.done(c.out)
	return c.out
}

func (s *Saver) save(ctx context.Context, r Request) Outcome {
	if s.sem.Acquire(ctx, 1) != nil {
		return canceled(ctx)
	}
	held := true
	defer func() {
		if held {
			s.sem.Release(1)
		}
	}()
	f, err := s.o.Store.Lookup(ctx, r.URL)
	if err != nil {
		return Outcome{Status: Transient, Err: err.Error()}
	}
	if f != nil {
		return Outcome{Status: Stored, File: f}
	}
	host := ""
	if u, err := url.Parse(r.URL); err == nil {
		host = u.Host
	}
	requests := 0
	for attempt := 1; ; attempt++ {
		if out, paused := s.pausedOutcome(host); paused {
			out.Requests = requests
			return out
		}
		out := s.fetchAny(ctx, r)
		requests += out.Requests
		out.Requests = requests
		if out.Status != Transient || attempt >= s.o.Attempts || ctx.Err() != nil {
			if ctx.Err() == nil {
				s.answered(host, out)
			}
			return out
		}
		s.sem.Release(1) // others fetch while this one waits
		held = false
		if (clock.Real{}).Sleep(ctx, min(s.o.RetryDelay<<(attempt-1), 30*time.Second)) != nil || s.sem.Acquire(ctx, 1) != nil {
			return out
		}
		held = true
	}
}

// refusal reports whether out is a host's refusal: no answer (a
// connection refused, a timeout), or a 429 or 5xx.
func refusal(out Outcome) bool {
	return out.Status == Transient && (out.HTTPStatus == 0 || out.HTTPStatus == http.StatusTooManyRequests || out.HTTPStatus >= 500)
}

// answered counts a file's outcome against its host, and pauses the host
// at its pauseAfter-th refusal in a row.
func (s *Saver) answered(host string, out Outcome) {
	s.mu.Lock()
	if !refusal(out) {
		s.refused[host] = 0
	} else if s.refused[host]++; s.refused[host] >= pauseAfter && s.paused[host] == "" {
		s.paused[host] = fmt.Sprintf("%d files in a row got no answer or a 429 or 5xx (the last: %s)", pauseAfter, out.Err)
		if s.onPause != nil {
			defer s.onPause(host, s.paused[host])
		}
	}
	s.mu.Unlock()
}

// pausedOutcome is the outcome of a file of a paused host: transient, for
// the next run.
func (s *Saver) pausedOutcome(host string) (Outcome, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	why := s.paused[host]
	if why == "" {
		return Outcome{}, false
	}
	return Outcome{Status: Transient, Err: fmt.Sprintf("%s: the media host %s is paused for this run: %s", Transient, host, why)}, true
}

// fetchAny fetches the first of r's URLs that answers other than with a
// 4xx, r.URL last.
func (s *Saver) fetchAny(ctx context.Context, r Request) Outcome {
	urls := append(append([]string(nil), r.Prefer...), r.URL)
	var out Outcome
	for i, u := range urls {
		out = s.fetch(ctx, u, r.URL)
		out.Requests = i + 1
		if out.HTTPStatus < 400 || out.HTTPStatus >= 500 || i == len(urls)-1 {
			return out
		}
	}
	return out
}

// fetch fetches from u the file named name, into the store.
func (s *Saver) fetch(ctx context.Context, u, name string) Outcome {
	sp, err := s.o.Store.NewSpool()
	if err != nil {
		return Outcome{Status: Transient, Err: err.Error()}
	}
	res, err := s.o.Fetcher.Fetch(ctx, u, sp, s.o.Budget)
	s.progress.bytes.Add(sp.Size())
	if err != nil {
		sp.Discard()
		fe, ok := errors.AsType[*Error](err)
		if !ok {
			return Outcome{Status: Transient, Err: err.Error()}
		}
		return Outcome{Status: fe.Status, HTTPStatus: fe.HTTPStatus, Size: fe.Size, Err: fe.Error()}
	}
	f, err := s.o.Store.Commit(ctx, sp, name, res.ContentType, s.o.Now())
	if err != nil {
		return Outcome{Status: Transient, HTTPStatus: 200, Err: err.Error()}
	}
	return Outcome{Status: Stored, File: f, Fetched: true, HTTPStatus: 200}
}

func canceled(ctx context.Context) Outcome {
	return Outcome{Status: Transient, Err: fmt.Sprintf("%s: %v", Transient, context.Cause(ctx))}
}
