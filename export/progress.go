package export

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/plural"
	"github.com/cq-source-x/cq-source-x/media"
)

// progress shows, per account, the bookmarks written, the posts billed, the
// requests sent, and a countdown while a rate-limit wait lasts, as
// Options.Progress says. Log lines are written through it (Write), so they
// do not tear the lines a terminal redraws.
type progress struct {
	o Options

	mu    sync.Mutex
	set   *account.Set
	rows  map[string]int
	waits map[string]waitInfo // by user id
	drawn int                 // lines currently drawn (terminal)
	timer *time.Timer         // the next draw; nil once stopped
}

type waitInfo struct {
	op    client.Operation
	until time.Time
}

func newProgress(o Options) *progress {
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.ProgressInterval <= 0 {
		o.ProgressInterval = 10 * time.Second
	}
	if o.Terminal {
		o.ProgressInterval = 250 * time.Millisecond
	}
	return &progress{o: o, rows: map[string]int{}, waits: map[string]waitInfo{}}
}

func (p *progress) attach(s *account.Set) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.set = s
}

// longWait is a rate-limit wait told even with Quiet: a run that says
// nothing for that long looks hung.
const longWait = time.Minute

func (p *progress) waitStarted(userID string, op client.Operation, d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	until := p.o.Clock.Now().Add(d)
	p.waits[userID] = waitInfo{op: op, until: until}
	if p.o.Quiet && d >= longWait {
		fmt.Fprintf(p.o.Progress, "%s: waiting %s, until %s, for the %s rate-limit window (Ctrl-C stops the run and keeps what it read)\n",
			p.nameOf(userID, op), d.Round(time.Second), until.UTC().Format("15:04:05 MST"), op)
	}
}

// nameOf names the account of userID as the progress lines do; a wait of
// user "" is the app's compliance check's, or an account's GET
// /2/users/me. Called with p.mu held.
func (p *progress) nameOf(userID string, op client.Operation) string {
	switch {
	case userID == "" && op == client.OpUsersMe:
		return "an account"
	case userID == "":
		return "the compliance check"
	}
	if p.set != nil {
		if i := slices.IndexFunc(p.set.Sessions, func(s *account.Session) bool { return s.UserID == userID }); i >= 0 {
			return p.set.Sessions[i].Name()
		}
	}
	return "user " + userID
}

func (p *progress) addRows(userID string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rows[userID] += n
}

func (p *progress) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.o.Quiet {
		p.timer = time.AfterFunc(p.o.ProgressInterval, p.tick)
	}
}

func (p *progress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer != nil {
		p.draw()
		p.timer.Reset(p.o.ProgressInterval)
	}
}

func (p *progress) stop() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.timer == nil {
		return
	}
	p.timer.Stop()
	p.timer = nil
	p.draw()
	if p.o.Terminal && p.drawn > 0 {
		fmt.Fprintln(p.o.Progress)
		p.drawn = 0
	}
}

// lines renders one line per account, and one of the media files once
// the run stores some. Called with p.mu held.
func (p *progress) lines() []string {
	if p.set == nil {
		return nil
	}
	now := p.o.Clock.Now()
	out := make([]string, 0, len(p.set.Sessions))
	for _, s := range p.set.Sessions {
		var total billing.Usage
		if s.Meter != nil {
			total = s.Meter.Total()
		}
		// The counts are the summary's: x_bookmarks rows written, and the
		// posts billed and requests of every operation.
		line := fmt.Sprintf("%s: %s written, %s billed, %s", s.Name(), plural.Count(p.rows[s.UserID], "bookmark", "bookmarks"), plural.Count(total.PostsBilled, "post", "posts"), plural.Count(total.Requests, "request", "requests"))
		if w, ok := p.waits[s.UserID]; ok && w.until.After(now) {
			line += fmt.Sprintf(", waiting %s for the %s rate-limit window", w.until.Sub(now).Round(time.Second), w.op)
		}
		if s.Err != nil {
			line += ", FAILED"
		}
		out = append(out, line)
	}
	if sv := saverOf(p.set.Sessions); sv != nil {
		if c := sv.Progress().Counts(); c.Wanted > 0 {
			out = append(out, "media files: "+c.String())
		}
	}
	return out
}

// saverOf is the Saver that stores the media files of every account of
// sessions, or nil.
func saverOf(sessions []*account.Session) *media.Saver {
	if len(sessions) == 0 || sessions[0].Media == nil {
		return nil
	}
	return sessions[0].Media.Saver
}

// draw prints the current lines. Called with p.mu held.
func (p *progress) draw() {
	lines := p.lines()
	if len(lines) == 0 {
		return
	}
	text := strings.Join(lines, "\n")
	if p.o.Terminal {
		text = p.clear() + text
		p.drawn = len(lines)
	} else {
		text += "\n"
	}
	io.WriteString(p.o.Progress, text)
}

// clear returns what erases the lines drawn on a terminal and leaves the
// cursor at the start of the first. Called with p.mu held.
func (p *progress) clear() string {
	if p.drawn == 0 {
		return ""
	}
	n := p.drawn
	p.drawn = 0
	return "\r\x1b[2K" + strings.Repeat("\x1b[1A\x1b[2K", n-1)
}

// Write writes a log line above the progress lines, which it redraws.
func (p *progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	redraw := p.o.Terminal && p.drawn > 0
	text := p.clear() + string(b)
	if !strings.HasSuffix(text, "\n") {
		text += "\n"
	}
	io.WriteString(p.o.Progress, text)
	if redraw {
		p.draw()
	}
	return len(b), nil
}
