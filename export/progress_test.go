package export

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestProgress_LinesAndCountdown(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	var out bytes.Buffer
	p := newProgress(Options{Progress: &out, Clock: clk, ProgressInterval: time.Hour})
	p.attach(&account.Set{Sessions: []*account.Session{
		{Index: 0, UserID: "1001", Meter: billing.NewMeter(billing.DefaultRates())},
		{Index: 1, UserID: "1002", Meter: billing.NewMeter(billing.DefaultRates())},
	}})
	p.addRows("1001", 42)
	p.addRows("1002", 1)
	p.waitStarted("1002", client.OpListBookmarks, 14*time.Minute+3*time.Second)
	clk.Advance(time.Minute)
	p.mu.Lock()
	lines := p.lines()
	p.mu.Unlock()
	if len(lines) != 2 || lines[0] != "accounts[0] (user 1001): 42 bookmarks written, 0 posts billed, 0 requests" ||
		lines[1] != "accounts[1] (user 1002): 1 bookmark written, 0 posts billed, 0 requests, waiting 13m3s for the list_bookmarks rate-limit window" {
		t.Errorf("lines %q", lines)
	}
	clk.Advance(14 * time.Minute)
	p.mu.Lock()
	lines = p.lines()
	p.mu.Unlock()
	if strings.Contains(lines[1], "waiting") {
		t.Errorf("the wait is over: %q", lines[1])
	}

	// On a terminal, lines are redrawn in place, and a log line goes above
	// them without tearing them.
	var term bytes.Buffer
	p = newProgress(Options{Progress: &term, Terminal: true, Clock: clk})
	p.attach(&account.Set{Sessions: []*account.Session{{Index: 0, UserID: "1001", Meter: billing.NewMeter(billing.DefaultRates())}, {Index: 1, UserID: "1002", Meter: billing.NewMeter(billing.DefaultRates())}}})
	p.mu.Lock()
	p.draw()
	p.draw()
	p.mu.Unlock()
	p.Write([]byte("WRN something\n"))
	s := term.String()
	if strings.Count(s, "\r\x1b[2K\x1b[1A\x1b[2K") != 2 || !strings.Contains(s, "\r\x1b[2K\x1b[1A\x1b[2KWRN something\naccounts[0]") {
		t.Errorf("terminal output %q", s)
	}
}

// TestProgress_RateLimitCountdownDuringARun exports against a simulator
// whose list_bookmarks window allows one request per two seconds: the
// client waits, and the progress lines show the countdown while it does.
func TestProgress_RateLimitCountdownDuringARun(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for a real two-second rate-limit window")
	}
	sim := xsim.New(xsim.Options{Window: 2 * time.Second, Limits: map[string]int{xsim.OpListBookmarks: 1}})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks("1001", 120) // two pages of 90
	text := `kind: source
spec:
  name: x
  path: ./cq-source-x
  registry: local
  version: v0.0.0
  tables: ["x_bookmarks"]
  destinations: ["file"]
  spec:
    base_url: ` + sim.URL() + `
    accounts:
      - user_id: "1001"
        access_token: "` + sim.IssueToken("1001") + `"
`
	src, err := cqspec.Parse([]byte(text), "spec.yml", os.LookupEnv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	res, err := Run(context.Background(), Options{Spec: src, Out: t.TempDir(), Progress: &out, ProgressInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if f := res.Failed(); len(f) > 0 {
		t.Fatal(f)
	}
	if !strings.Contains(out.String(), "for the list_bookmarks rate-limit window") {
		t.Errorf("no countdown in the progress:\n%s", out.String())
	}
	if s := res.Summary(); s.Accounts[0].Operations[0].RateLimitWaits != 1 || s.Totals.BookmarksWritten != 120 {
		t.Errorf("summary %+v", s.Accounts[0])
	}
}

// With --quiet, a rate-limit wait of a minute or more is still told, in
// one line naming the account, how long and until when: a run that says
// nothing for 15 minutes looks hung. Shorter waits are not.
func TestProgress_QuietStillTellsALongWait(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC))
	var out bytes.Buffer
	p := newProgress(Options{Progress: &out, Quiet: true, Clock: clk})
	p.attach(&account.Set{Sessions: []*account.Session{{Index: 3, UserID: "1004", Meter: billing.NewMeter(billing.DefaultRates())}}})
	p.start()
	p.waitStarted("1004", client.OpListBookmarks, 40*time.Second)
	p.waitStarted("1004", client.OpListBookmarks, 11*time.Minute)
	p.waitStarted("", client.OpGetComplianceJob, 2*time.Minute)
	p.stop()
	want := "accounts[3] (user 1004): waiting 11m0s, until 10:11:00 UTC, for the list_bookmarks rate-limit window (Ctrl-C stops the run and keeps what it read)\n" +
		"the compliance check: waiting 2m0s, until 10:02:00 UTC, for the compliance_get_job rate-limit window (Ctrl-C stops the run and keeps what it read)\n"
	if out.String() != want {
		t.Errorf("quiet progress printed:\n%s\nwant:\n%s", out.String(), want)
	}
}
