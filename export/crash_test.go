package export_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/cli"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// The kill tests run the exporter as a separate process: this test binary,
// re-executed with envChild set, runs `cq-source-x export` (or compact, or
// a bookmark command) and nothing else, with the crash points only a test
// binary has (cli.RunWithSteps): envKillAt=N makes it SIGKILL itself at its
// N-th crash-safety step, and envTrace names a file that lists the steps
// reached.
const (
	envChild  = "CQ_SOURCE_X_TEST_EXPORT_CHILD"
	envTrace  = "CQ_SOURCE_X_TEST_EXPORT_TRACE"
	envKillAt = "CQ_SOURCE_X_TEST_EXPORT_KILL_AT"
)

func TestMain(m *testing.M) {
	if args := os.Getenv(envChild); args != "" {
		os.Exit(cli.RunWithSteps(context.Background(), crashPoints(os.Getenv(envTrace), os.Getenv(envKillAt)),
			strings.Split(args, "\n"), os.Stdin, os.Stdout, os.Stderr))
	}
	os.Exit(m.Run())
}

// crashPoints appends the name of each step reached to the file trace, and
// kills the process at the killAt-th step (0: none), or, when killAt is
// "NAME#K", at the K-th step named NAME. Steps may come from several
// goroutines at once (media files are stored concurrently; rows are written
// while the plugin saves a compliance job), so that only the count of steps
// of one name is the same from run to run.
func crashPoints(trace, killAt string) func(string) {
	killName, k, named := strings.Cut(killAt, "#")
	n, _ := strconv.Atoi(k)
	if !named {
		n, _ = strconv.Atoi(killAt)
	}
	step, seen := 0, 0
	var mu sync.Mutex
	return func(name string) {
		mu.Lock()
		defer mu.Unlock()
		step++
		if f, err := os.OpenFile(trace, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
			fmt.Fprintf(f, "%d %s\n", step, name)
			f.Close()
		}
		if !named || name == killName {
			seen++
		}
		if seen == n {
			p, _ := os.FindProcess(os.Getpid())
			p.Kill()
			select {} // never returns
		}
	}
}

// child is one exporter process's outcome.
type child struct {
	killed bool     // it died of SIGKILL
	code   int      // exit code when not killed
	steps  []string // steps reached, in order
	output string
}

// runChild runs `export --spec spec --out dir --quiet`, killed at the
// killAt-th step (0 = not), or from outside after killAfter (0 = not).
func runChild(t *testing.T, spec, dir string, killAt int, killAfter time.Duration) child {
	t.Helper()
	return runCommand(t, []string{"export", "--spec", spec, "--out", dir, "--quiet"}, killAt, killAfter)
}

// runCommand runs `cq-source-x args...` in a child process, killed at the
// killAt-th step (0 = not), or from outside after killAfter (0 = not).
func runCommand(t *testing.T, args []string, killAt int, killAfter time.Duration) child {
	t.Helper()
	return runKilledAt(t, args, strconv.Itoa(killAt), killAfter)
}

// runKilledAt runs `cq-source-x args...` in a child process, killed at the
// step killAt names (crashPoints), or from outside after killAfter (0 = not).
func runKilledAt(t *testing.T, args []string, killAt string, killAfter time.Duration) child {
	t.Helper()
	trace := filepath.Join(t.TempDir(), "trace")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(),
		envChild+"="+strings.Join(args, "\n"),
		envTrace+"="+trace,
		envKillAt+"="+killAt)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if killAfter > 0 {
		timer := time.AfterFunc(killAfter, func() { cmd.Process.Kill() })
		defer timer.Stop()
	}
	err := cmd.Wait()
	c := child{output: out.String()}
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
			c.killed = true
		} else {
			c.code = ee.ExitCode()
		}
	default:
		t.Fatal(err)
	}
	if f, err := os.Open(trace); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			_, name, _ := strings.Cut(sc.Text(), " ")
			c.steps = append(c.steps, name)
		}
		f.Close()
	}
	return c
}

// checkNotAhead checks, after a crash, that the committed state describes
// only data that is durably on disk: every post id the state holds (the ids
// written, and each account's bookmarks walk memory) is in a published
// x_bookmarks file or in a file of the committed run still to publish.
func checkNotAhead(t *testing.T, dir string, users []demoUser) {
	t.Helper()
	info, err := archive.ReadState(dir)
	if err != nil {
		t.Fatalf("after a crash the state does not load: %v", err)
	}
	files := parquetFiles(t, dir, "x_bookmarks")
	for _, p := range info.Pending {
		if p.Table != "x_bookmarks" {
			continue
		}
		_, serr := os.Stat(p.Staged)
		_, ferr := os.Stat(p.Final)
		switch {
		case serr == nil && ferr != nil:
			files = append(files, p.Staged)
		case ferr == nil:
			// published already, in files
		default:
			t.Fatalf("committed file %s is neither staged nor published", p.Final)
		}
	}
	have := bookmarkKeys(t, files)
	for _, u := range users {
		for what, ids := range map[string][]string{"written": info.Archived[u.id], "held by the walk": info.HeldBookmarks[u.id]} {
			for _, id := range ids {
				if have[[2]string{u.id, id}] == 0 {
					t.Fatalf("state runs ahead of the data: user %s post %s is %s but in no durable file", u.id, id, what)
				}
			}
		}
	}
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	err := filepath.Walk(from, func(path string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, path)
		target := filepath.Join(to, rel)
		if fi.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, fi.Mode())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestKill9 kills the exporter at every crash-safety step of a first run
// and of an incremental run (staging each table, inside each parquet file
// being written, around the commit's rename, after each publishing rename,
// around marking the run published, removing the staging directory), kills
// it repeatedly while it recovers, and at random times; then re-runs it.
// After each crash the state never runs ahead of the data, and after the
// re-run every current bookmark of every account is in exactly one file.
func TestKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns about a hundred processes")
	}
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	users := []demoUser{{id: "1001", bookmarks: 260, folders: 2}, {id: "1002", bookmarks: 40, folders: 1}}
	tokens := seed(sim, users)
	spec := filepath.Join(t.TempDir(), "spec.yml")
	if err := os.WriteFile(spec, []byte(specYAML(sim.URL(), users, tokens, `["*"]`)), 0o644); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	var n atomic.Int64
	newDir := func() string { return filepath.Join(base, strconv.FormatInt(n.Add(1), 10)) }

	// killEverywhere kills a run (from a copy of template, or a new
	// directory) at each of its steps, then re-runs it to completion.
	killEverywhere := func(phase, template string) int {
		// A clean run first, to learn the steps.
		dir := newDir()
		if template != "" {
			copyDir(t, template, dir)
		}
		clean := runChild(t, spec, dir, 0, 0)
		if clean.killed || clean.code != 0 {
			t.Fatalf("%s: clean run failed: %s", phase, clean.output)
		}
		checkArchive(t, dir, sim, users)
		steps := len(clean.steps)
		var mu sync.Mutex
		kinds := map[string]bool{}
		// Parallel subtests; t.Run returns once they all have.
		t.Run(phase, func(t *testing.T) {
			for k := 1; k <= steps+1; k++ {
				dir := newDir()
				t.Run(fmt.Sprintf("kill-at-%d", k), func(t *testing.T) {
					t.Parallel()
					if template != "" {
						copyDir(t, template, dir)
					}
					c := runChild(t, spec, dir, k, 0)
					if !c.killed {
						if k <= steps-2 { // the last steps may shift by a record batch
							t.Errorf("not killed at step %d of %d: %s", k, steps, c.output)
						}
						if c.code != 0 {
							t.Fatalf("exit %d: %s", c.code, c.output)
						}
					} else {
						mu.Lock()
						kinds[strings.Fields(c.steps[len(c.steps)-1])[0]] = true
						mu.Unlock()
						checkNotAhead(t, dir, users)
					}
					again := runChild(t, spec, dir, 0, 0)
					if again.killed || again.code != 0 {
						t.Fatalf("re-run after a kill at step %d (%v) failed: %s", k, c.steps[len(c.steps)-1:], again.output)
					}
					checkArchive(t, dir, sim, users)
				})
			}
		})
		t.Logf("%s: killed at each of %d steps (%v), re-ran each to completion", phase, steps, kinds)
		return steps
	}

	first := killEverywhere("first run", "")

	// The state of a finished first run, for the incremental runs.
	template := newDir()
	if c := runChild(t, spec, template, 0, 0); c.killed || c.code != 0 {
		t.Fatal(c.output)
	}
	// Changes between syncs: new bookmarks, the newest removed, an old one
	// bookmarked again, a removed post bookmarked again later (written
	// already: must not be written twice), a folder change.
	list := sim.Bookmarks("1001")
	sim.Unbookmark("1001", list[0])
	sim.Bookmark("1001", list[200])
	sim.SeedBookmarks("1001", 30)
	sim.SeedBookmarks("1002", 3)
	sim.AddToFolder("1001", "10011", list[3])
	second := killEverywhere("incremental run", template)

	// Kills during recovery: crash right after the commit (or after the
	// first publishing rename), then kill the next processes at their 1st,
	// 2nd, 3rd... step until the run is published.
	for _, at := range []string{"committed", "published x_bookmarks"} {
		dir := newDir()
		copyDir(t, template, dir)
		probeDir := newDir()
		copyDir(t, template, probeDir)
		probe := runChild(t, spec, probeDir, 0, 0)
		k := 0
		for i, s := range probe.steps {
			if s == at {
				k = i + 1
			}
		}
		if k == 0 {
			t.Fatalf("no step %q in %v", at, probe.steps)
		}
		if c := runChild(t, spec, dir, k, 0); !c.killed {
			t.Fatalf("not killed at %q", at)
		}
		kills := 0
		for j := 1; j < 20; j++ {
			info, err := archive.ReadState(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(info.Pending) == 0 {
				break
			}
			c := runChild(t, spec, dir, j, 0)
			if !c.killed {
				t.Fatalf("recovery not killed at its step %d: %s", j, c.output)
			}
			kills++
			checkNotAhead(t, dir, users)
		}
		if kills == 0 {
			t.Errorf("crash at %q left nothing to recover", at)
		}
		if c := runChild(t, spec, dir, 0, 0); c.killed || c.code != 0 {
			t.Fatalf("after %d kills during recovery: %s", kills, c.output)
		}
		checkArchive(t, dir, sim, users)
		t.Logf("crash at %q, then %d kills during recovery: complete", at, kills)
	}

	// Kills at random times, from outside.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	probe := time.Now()
	runChild(t, spec, newDir(), 0, 0)
	runTime := time.Since(probe)
	for i := 0; i < 6; i++ {
		dir := newDir()
		copyDir(t, template, dir)
		after := time.Duration(rng.Int64N(int64(runTime))) + time.Millisecond
		c := runChild(t, spec, dir, 0, after)
		if c.killed {
			checkNotAhead(t, dir, users)
		}
		if again := runChild(t, spec, dir, 0, 0); again.killed || again.code != 0 {
			t.Fatalf("re-run after a kill at %s: %s", after, again.output)
		}
		checkArchive(t, dir, sim, users)
	}
	t.Logf("%d + %d crash points, recovery kills, 6 random-time kills", first, second)
}
