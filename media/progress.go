package media

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Progress counts the files of a run: those asked for, those done (stored
// or not, and why not), and the bytes downloaded. Safe for concurrent use.
type Progress struct {
	wanted, done_, fetched, stored, bytes atomic.Int64
	start                                 atomic.Int64 // Unix nanoseconds of the first Want

	mu     sync.Mutex
	failed map[Status]int64
}

// Want adds n files to those the run will ask for.
func (p *Progress) Want(n int) {
	p.start.CompareAndSwap(0, time.Now().UnixNano())
	p.wanted.Add(int64(n))
}

func (p *Progress) done(o Outcome) {
	if o.Status == Interrupted {
		return
	}
	p.done_.Add(1)
	if o.Status == Stored {
		p.stored.Add(1)
		if o.Fetched {
			p.fetched.Add(1)
		}
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.failed == nil {
		p.failed = map[Status]int64{}
	}
	p.failed[o.Status]++
}

// Counts is a snapshot of a Progress.
type Counts struct {
	// Wanted files, of which Done have an outcome: Stored of them are in
	// the store, Fetched of those downloaded by this run; Failed counts the
	// others by status.
	Wanted, Done, Stored, Fetched int64
	Failed                        map[Status]int64
	// Bytes downloaded, and in how long.
	Bytes   int64
	Elapsed time.Duration
}

// String says the counts in a line: "12 of 40 files done: 9 stored (7
// fetched), 3 not (2 transient, 1 gone); 45.1 MB at 3.2 MB/s, 28 left".
func (c Counts) String() string {
	rate := ""
	if secs := c.Elapsed.Seconds(); secs >= 1 {
		rate = " at " + megabytes(float64(c.Bytes)/secs) + "/s"
	}
	failed := ""
	if len(c.Failed) > 0 {
		var n int64
		var reasons []string
		for _, s := range slices.SortedFunc(maps.Keys(c.Failed), func(a, b Status) int { return cmp.Or(cmp.Compare(c.Failed[b], c.Failed[a]), cmp.Compare(a, b)) }) {
			n += c.Failed[s]
			reasons = append(reasons, fmt.Sprintf("%d %s", c.Failed[s], s))
		}
		failed = fmt.Sprintf(", %d not (%s)", n, strings.Join(reasons, ", "))
	}
	return fmt.Sprintf("%d of %d files done: %d stored (%d fetched)%s; %s%s, %d left",
		c.Done, c.Wanted, c.Stored, c.Fetched, failed, megabytes(float64(c.Bytes)), rate, max(c.Wanted-c.Done, 0))
}

func megabytes(n float64) string { return fmt.Sprintf("%.1f MB", n/1e6) }

func (p *Progress) Counts() Counts {
	c := Counts{Wanted: p.wanted.Load(), Done: p.done_.Load(), Stored: p.stored.Load(), Fetched: p.fetched.Load(), Bytes: p.bytes.Load()}
	p.mu.Lock()
	c.Failed = maps.Clone(p.failed)
	p.mu.Unlock()
	if start := p.start.Load(); start != 0 {
		c.Elapsed = time.Since(time.Unix(0, start))
	}
	return c
}
