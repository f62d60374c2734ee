// Package interruptloop interrupts the exporter at random moments, many
// times, as a user's Ctrl-C (SIGINT) or a service manager's SIGTERM does,
// and checks what docs/export.md promises of a stop: no run hangs, none
// panics, none loses a bookmark nor writes a key twice, and every post is
// counted billed once. Run by run, the posts a run's committed x_api_usage
// rows count billed must be those the simulator billed while it ran: X
// bills a post once per UTC day, so a post an interrupted run read and a
// later run reads again that day is not billed again, and must not be
// counted again (BilledTwice); and a post X billed to an interrupted run
// must be counted by it, its rows kept (NotKept).
//
// It runs the cq-source-x binary against the simulator (sandbox/xsim):
// each round changes the accounts' lists (new bookmarks, removals, folder
// additions), starts `export`, signals it after a random delay, and waits
// for it to end. Every few rounds a clean export runs to the end and the
// archive is checked; every so often the archive starts over, so that
// first syncs, the longest, are interrupted too. Command
// test/cmd/interruptloop runs hundreds of rounds; a test in the root
// package runs a few.
package interruptloop

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/test/synctest"
)

// Options configure a loop. Zero values take the defaults.
type Options struct {
	// Binary is the cq-source-x binary to run (required).
	Binary string
	// Dir holds the spec, the archives and the goroutine dumps of hangs
	// (required).
	Dir string
	// Interrupts is how many runs are signalled (default 100).
	Interrupts int
	// Accounts and Bookmarks (per account, at the start) shape the lists
	// (defaults 3 and 2,000); each account has two folders.
	Accounts, Bookmarks int
	// Latency of each request (default 10ms), and the share of requests
	// answered with a server error (default 2%) or a 429 with a reset a
	// few seconds ahead (default 1%): the signals also land in retries
	// and rate-limit waits.
	Latency                  time.Duration
	ServerErrors, RateLimits float64
	// CheckEvery rounds, a clean export runs and the archive is checked
	// (default 10); every FreshEvery rounds the archive starts over
	// (default 30).
	CheckEvery, FreshEvery int
	// HangAfter is how long a signalled run may take to end (default 60s).
	HangAfter time.Duration
	// Seed of the delays, signals and list changes.
	Seed uint64
	// Log receives a line per round (nil: none).
	Log io.Writer
}

// Report is what the loop saw.
type Report struct {
	// Interrupts signals were sent: SIGINT and SIGTERM. Of the runs
	// signalled, Interrupted ended 130 having committed what they read,
	// Finished had ended on their own (exit 0), Early got the signal
	// before the program took its signals (the default action ended them:
	// nothing was read).
	Interrupts, SIGINT, SIGTERM  int
	Interrupted, Finished, Early int
	Hangs, Panics                int
	Unexpected                   []string // other exits, failed checks
	Checks                       int      // clean runs checked
	Archives                     int
	Missing, DuplicateKeys       int
	// PostsReturned is what the simulator returned, BilledByX what it
	// billed of it (once per post, app and UTC day), and BilledCounted what
	// the runs' committed x_api_usage rows count billed.
	PostsReturned, BilledByX, BilledCounted int
	// BilledTwice adds up, run by run, the posts a run counted billed that
	// X did not bill during it: posts billed to a run before it (an
	// interrupted one) counted again. NotKept adds up the posts X billed
	// during a run that its committed rows do not count: read, paid for
	// and thrown away.
	BilledTwice, NotKept int
	Elapsed              time.Duration
}

// OK reports whether the loop met every requirement.
func (r *Report) OK() bool {
	return r.Hangs == 0 && r.Panics == 0 && len(r.Unexpected) == 0 && r.Missing == 0 && r.DuplicateKeys == 0 &&
		r.BilledTwice == 0 && r.NotKept == 0
}

// WriteText prints the report.
func (r *Report) WriteText(w io.Writer) {
	fmt.Fprintf(w, "interrupts: %d (SIGINT %d, SIGTERM %d) in %s, %d archives\n", r.Interrupts, r.SIGINT, r.SIGTERM, r.Elapsed.Round(time.Second), r.Archives)
	fmt.Fprintf(w, "  interrupted and committed (exit 130): %d; had finished before the signal: %d; signalled before the program took its signals: %d\n",
		r.Interrupted, r.Finished, r.Early)
	fmt.Fprintf(w, "hangs: %d, panics: %d\n", r.Hangs, r.Panics)
	fmt.Fprintf(w, "checks after a clean run: %d; bookmarks missing: %d; keys written twice: %d\n", r.Checks, r.Missing, r.DuplicateKeys)
	fmt.Fprintf(w, "posts returned: %d (read again, free the same UTC day: %d); billed by X: %d; counted billed by the runs: %d\n",
		r.PostsReturned, r.PostsReturned-r.BilledByX, r.BilledByX, r.BilledCounted)
	fmt.Fprintf(w, "posts billed twice (counted again by a later run): %d; billed and not kept: %d\n", r.BilledTwice, r.NotKept)
	for _, u := range r.Unexpected {
		fmt.Fprintln(w, "UNEXPECTED:", u)
	}
}

// loop is one Run.
type loop struct {
	o     Options
	rng   *rand.Rand
	sim   *xsim.Server
	users []string
	spec  string // of the archive being written
	out   string // the archive being written
	rep   *Report
	// how long a first and an incremental run took in the archive
	firstRunTime, incrementalRunTime time.Duration
}

// Run runs the loop.
func Run(ctx context.Context, o Options) (*Report, error) {
	o = withDefaults(o)
	if o.Binary == "" || o.Dir == "" {
		return nil, errors.New("interruptloop: Binary and Dir are required")
	}
	l := &loop{o: o, rng: rand.New(rand.NewPCG(o.Seed, o.Seed^0x5bd1e995)), rep: &Report{}}
	if err := l.start(); err != nil {
		return nil, err
	}
	defer l.sim.Close()
	began := time.Now()
	for round := 1; round <= o.Interrupts && ctx.Err() == nil; round++ {
		if round == 1 || (round-1)%o.FreshEvery == 0 {
			if err := l.freshArchive(round); err != nil {
				return l.rep, err
			}
		}
		l.changeLists()
		if err := l.interruptOnce(round); err != nil {
			return l.rep, err
		}
		if round%o.CheckEvery == 0 || round == o.Interrupts || round%o.FreshEvery == 0 {
			if err := l.check(); err != nil {
				return l.rep, err
			}
		}
	}
	l.rep.Elapsed = time.Since(began)
	for _, uid := range l.users {
		for _, u := range l.sim.Usage(uid) {
			l.rep.BilledByX += u.PostsBilled
			l.rep.PostsReturned += u.PostsReturned
		}
	}
	return l.rep, nil
}

func withDefaults(o Options) Options {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&o.Interrupts, 100)
	def(&o.Accounts, 3)
	def(&o.Bookmarks, 2000)
	def(&o.CheckEvery, 10)
	def(&o.FreshEvery, 30)
	if o.Latency == 0 {
		o.Latency = 10 * time.Millisecond
	}
	if o.ServerErrors == 0 {
		o.ServerErrors = 0.02
	}
	if o.RateLimits == 0 {
		o.RateLimits = 0.01
	}
	if o.HangAfter == 0 {
		o.HangAfter = time.Minute
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	return o
}

// start starts the simulator with the accounts and their lists.
func (l *loop) start() error {
	l.sim = xsim.New(xsim.Options{DisableRateLimits: true, Faults: xsim.Faults{
		Seed: int64(l.o.Seed), Latency: l.o.Latency, ServerErrorRate: l.o.ServerErrors, RateLimitRate: l.o.RateLimits,
		Operations: []string{xsim.OpListBookmarks, xsim.OpListFolders, xsim.OpGetFolder},
	}})
	if err := l.sim.Start(); err != nil {
		return err
	}
	for i := range l.o.Accounts {
		uid := fmt.Sprint(1001 + i)
		l.users = append(l.users, uid)
		ids := l.sim.SeedBookmarks(uid, l.o.Bookmarks)
		for f := range 2 {
			fid := fmt.Sprintf("%s%d", uid, f+1)
			l.sim.CreateFolder(uid, fid, fmt.Sprintf("folder %d", f+1))
			for j := f; j < len(ids); j += 7 {
				l.sim.AddToFolder(uid, fid, ids[j])
			}
		}
	}
	return nil
}

// newArchive starts writing a new archive, with a spec whose accounts read
// with apps of their own: X de-duplicates billing per app and UTC day, a
// run's meter per account and archive (a new archive knows nothing of what
// another was billed), so that the two add up the same.
func (l *loop) newArchive(name string) error {
	l.out = filepath.Join(l.o.Dir, "archive-"+name)
	l.rep.Archives++
	var accounts strings.Builder
	for _, uid := range l.users {
		fmt.Fprintf(&accounts, "      - user_id: %q\n        access_token: %q\n", uid, l.sim.IssueAppToken("app-"+name+"-"+uid, uid))
	}
	l.spec = filepath.Join(l.o.Dir, "x-"+name+".yml")
	text := "kind: source\nspec:\n  name: x\n  path: ./cq-source-x\n  registry: local\n  tables: [\"*\"]\n  destinations: [\"file\"]\n  spec:\n" +
		"    base_url: " + l.sim.URL() + "\n    max_attempts: 3\n    rate_limit_wait_cap: 10s\n    accounts:\n" + accounts.String()
	return os.WriteFile(l.spec, []byte(text), 0o644)
}

// freshArchive starts a new archive and times a first and an incremental
// run in it (the delays of the signals are drawn from those times). Every
// other time, the interrupted runs then go to another new archive, so that
// first syncs, the longest, are cut off too.
func (l *loop) freshArchive(round int) error {
	if err := l.newArchive(fmt.Sprintf("%03d", round)); err != nil {
		return err
	}
	took, err := l.cleanRun()
	if err != nil {
		return err
	}
	l.firstRunTime = took
	l.changeLists()
	if took, err = l.cleanRun(); err != nil {
		return err
	}
	l.incrementalRunTime = took
	if l.rng.IntN(2) == 0 {
		return l.newArchive(fmt.Sprintf("%03d-first", round))
	}
	return nil
}

// changeLists saves new posts, removes a few bookmarks and files a post
// in a folder, for a random account or two.
func (l *loop) changeLists() {
	for range 1 + l.rng.IntN(2) {
		uid := l.users[l.rng.IntN(len(l.users))]
		ids := l.sim.SeedBookmarks(uid, l.rng.IntN(40))
		list := l.sim.Bookmarks(uid)
		for range l.rng.IntN(4) {
			if len(list) > 100 {
				id := list[l.rng.IntN(len(list))]
				l.sim.Unbookmark(uid, id)
			}
		}
		if len(ids) > 0 {
			l.sim.AddToFolder(uid, uid+"1", ids[0])
		}
	}
}

// cleanRun exports to the end and says how long it took.
func (l *loop) cleanRun() (time.Duration, error) {
	began := time.Now()
	var out []byte
	err := l.billingOf(func() error {
		var err error
		out, err = exec.Command(l.o.Binary, "export", "--spec", l.spec, "--out", l.out, "--quiet").CombinedOutput()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("a clean export failed: %v\n%s", err, out)
	}
	return time.Since(began), nil
}

// billingOf runs an export with run and compares what X billed during it
// with what its committed rows count billed.
func (l *loop) billingOf(run func() error) error {
	byX, counted := l.billedByX(), l.countedIn(l.out)
	err := run()
	byX, counted = l.billedByX()-byX, l.countedIn(l.out)-counted
	l.rep.BilledCounted += counted
	l.rep.BilledTwice += max(0, counted-byX)
	l.rep.NotKept += max(0, byX-counted)
	return err
}

// billedByX is what the simulator has billed so far.
func (l *loop) billedByX() int {
	n := 0
	for _, uid := range l.users {
		for _, u := range l.sim.Usage(uid) {
			n += u.PostsBilled
		}
	}
	return n
}

// interruptOnce starts an export and signals it after a random delay, up
// to a little more than such a run takes.
func (l *loop) interruptOnce(round int) error {
	typical := l.incrementalRunTime
	if _, err := os.Stat(filepath.Join(l.out, ".state", "state.json")); err != nil {
		typical = l.firstRunTime
	}
	delay := time.Duration(l.rng.Float64() * 0.9 * float64(typical))
	sig, name := os.Signal(os.Interrupt), "SIGINT"
	if l.rng.IntN(4) == 0 {
		sig, name = syscall.SIGTERM, "SIGTERM"
	}
	cmd := exec.Command(l.o.Binary, "export", "--spec", l.spec, "--out", l.out)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	before := l.sim.TotalPostsReturned()
	var err error
	signalled := false
	startErr := l.billingOf(func() error {
		if err := cmd.Start(); err != nil {
			return err
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		time.Sleep(delay)
		l.rep.Interrupts++
		if name == "SIGINT" {
			l.rep.SIGINT++
		} else {
			l.rep.SIGTERM++
		}
		signalled = cmd.Process.Signal(sig) == nil
		select {
		case err = <-done:
		case <-time.After(l.o.HangAfter):
			l.rep.Hangs++
			cmd.Process.Signal(syscall.SIGQUIT)
			err = <-done
			dump := filepath.Join(l.o.Dir, fmt.Sprintf("hang-%03d.txt", round))
			os.WriteFile(dump, stderr.Bytes(), 0o644)
			l.rep.Unexpected = append(l.rep.Unexpected, fmt.Sprintf("round %d: still running %s after %s; goroutines in %s", round, l.o.HangAfter, name, dump))
		}
		return nil
	})
	if startErr != nil {
		return startErr
	}
	text := stderr.String()
	if strings.Contains(text, "panic:") {
		l.rep.Panics++
		l.rep.Unexpected = append(l.rep.Unexpected, fmt.Sprintf("round %d: panic:\n%s", round, text))
	}
	outcome := l.classify(round, name, err, signalled, text)
	fmt.Fprintf(l.o.Log, "round %d: %s after %s: %s (%d posts returned)\n", round, name, delay.Round(time.Millisecond), outcome, l.sim.TotalPostsReturned()-before)
	return nil
}

// classify counts how a signalled run ended.
func (l *loop) classify(round int, name string, err error, signalled bool, stderr string) string {
	var ee *exec.ExitError
	switch {
	case err == nil:
		l.rep.Finished++
		return "had finished"
	case !errors.As(err, &ee):
		l.rep.Unexpected = append(l.rep.Unexpected, fmt.Sprintf("round %d: %v", round, err))
		return err.Error()
	case ee.ExitCode() == 130 && strings.Contains(stderr, "export interrupted"):
		l.rep.Interrupted++
		return "interrupted"
	case ee.ExitCode() == -1 && signalled && !strings.Contains(stderr, "Interrupted"):
		l.rep.Early++ // the default action of the signal: the program had not started
		return "ended by the signal before the program took it"
	}
	l.rep.Unexpected = append(l.rep.Unexpected, fmt.Sprintf("round %d: %s: exit %d:\n%s", round, name, ee.ExitCode(), stderr))
	return fmt.Sprintf("exit %d", ee.ExitCode())
}

// check runs a clean export and checks the archive: every bookmark of
// every list in it, no key of any table twice.
func (l *loop) check() error {
	if _, err := l.cleanRun(); err != nil {
		return err
	}
	l.rep.Checks++
	dups, err := synctest.DuplicateKeys(l.out)
	if err != nil {
		return err
	}
	for table, keys := range dups {
		l.rep.DuplicateKeys += len(keys)
		l.rep.Unexpected = append(l.rep.Unexpected, fmt.Sprintf("%s: %d keys written twice in %s", table, len(keys), l.out))
	}
	keys, err := synctest.TableKeys(l.out, resources.Bookmarks().ToArrowSchema(), resources.BookmarksTable)
	if err != nil {
		return err
	}
	for _, uid := range l.users {
		for _, id := range l.sim.Bookmarks(uid) {
			if keys[uid+"\t"+id] == 0 {
				l.rep.Missing++
			}
		}
	}
	if l.rep.Missing > 0 {
		l.rep.Unexpected = append(l.rep.Unexpected, fmt.Sprintf("%d bookmarks missing from %s", l.rep.Missing, l.out))
	}
	return nil
}

// countedIn is what the x_api_usage rows of the archive in dir count
// billed.
func (l *loop) countedIn(dir string) int {
	paths, _ := filepath.Glob(filepath.Join(dir, resources.APIUsageTable, "*.parquet"))
	n := 0
	for _, path := range paths {
		err := pqfile.ReadRecords(context.Background(), path, []string{"posts_billed"}, func(rec arrow.RecordBatch) error {
			col, ok := rec.Column(0).(*array.Int64)
			if !ok {
				return fmt.Errorf("posts_billed is not int64")
			}
			for i := range col.Len() {
				n += int(col.Value(i))
			}
			return nil
		})
		if err != nil {
			l.rep.Unexpected = append(l.rep.Unexpected, fmt.Sprintf("%s: %v", path, err))
		}
	}
	return n
}
