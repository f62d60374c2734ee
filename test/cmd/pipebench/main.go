// Command pipebench measures the export pipeline against its floor.
//
//	go run ./test/cmd/pipebench -n 100000,1000000 -runs 3
//
// For each list size N it starts the X API simulator (in this process, rate
// limits off) with one account holding N bookmarks, and runs, as separate
// processes so that each one's peak memory is its own:
//
//   - the floor: a bare loop (this program with -floor) that fetches the same
//     pages over the same loopback — the same max_results and tweet.fields the
//     exporter asks for — reads each body and finds its next_token, and
//     discards it;
//   - the client floor (this program with -floor -decode): the same loop
//     with the project's API client, which also decodes every post — the
//     least the plugin itself must do to see the posts (shown for
//     reference; the goal is against the bare floor);
//   - the export: `cq-source-x export --spec SPEC --out DIR --quiet` into a
//     new directory: a first sync of N bookmarks to Parquet.
//
// It reports the median wall time, CPU time (user + system) and peak RSS
// (getrusage) of each over -runs runs, interleaved, and the ratios: export ÷
// floor of the medians, and the range of the ratio run by run (each export
// against the floor measured just before it), which shows how much the
// machine moved. The last line is machine-readable. The simulator's work (building the pages) is in
// this process for all of them, so it weighs on all alike; its CPU time
// while the export runs is reported too, and with it the CPU bound: the
// export's and the simulator's CPU time over the machine's cores, the least
// wall time the export could take with every core busy, as a ratio to the
// floor.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/xsim"
	"github.com/cq-source-x/cq-source-x/spec"
	"github.com/cq-source-x/cq-source-x/walk"
)

const user = "1001"

func main() {
	sizes := flag.String("n", "100000,1000000", "comma-separated list sizes")
	runs := flag.Int("runs", 3, "runs of each, interleaved; medians are reported")
	bin := flag.String("bin", "", "the cq-source-x binary (default: build it); a comma-separated list compares them, interleaved in every run")
	floor := flag.Bool("floor", false, "internal: run the floor loop against -url")
	decode := flag.Bool("decode", false, "internal: with -floor, fetch with the API client, which decodes the posts")
	base := flag.String("url", "", "internal: simulator URL for -floor")
	token := flag.String("token", "", "internal: access token for -floor")
	flag.Parse()
	if *floor {
		loop := floorLoop
		if *decode {
			loop = clientLoop
		}
		n, err := loop(*base, *token)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(n)
		return
	}
	work, err := os.MkdirTemp("", "pipebench")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(work)
	if *bin == "" {
		*bin = filepath.Join(work, "cq-source-x")
		build := exec.Command("go", "build", "-o", *bin, ".")
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			log.Fatalf("building cq-source-x: %v", err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	bins := strings.Split(*bin, ",")
	fmt.Printf("pipebench: %d runs each, medians; floor = fetch and discard the same pages\n", *runs)
	if len(bins) > 1 {
		fmt.Printf("comparing, interleaved in every run: %s\n", strings.Join(bins, ", "))
	}
	fmt.Printf("%10s  %9s %9s %9s  %9s %9s %9s %9s  %9s %10s  %6s %11s %6s %6s  %8s %7s  %6s %6s %8s %6s\n", "bookmarks", "floor", "client", "export",
		"floor CPU", "client CPU", "exp. CPU", "sim CPU", "floor RSS", "export RSS", "ratio", "run by run", "/client", "bound", "rows/s", "MB file", "start", "end", "fl.start", "fl.end")
	var last string
	for _, field := range strings.Split(*sizes, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(field))
		if err != nil || n < 1 {
			log.Fatalf("bad size %q", field)
		}
		r, err := measure(n, *runs, bins, self, work)
		if err != nil {
			log.Fatal(err)
		}
		for i, e := range r.exports {
			bound := (e.cpu + e.simCPU).Seconds() / float64(runtime.NumCPU()) / r.floor.Seconds()
			label := ""
			if len(bins) > 1 {
				label = fmt.Sprintf("  %s", bins[i])
				if i > 0 {
					// Paired, run by run, against the first binary: the
					// machine's drift between runs cancels out.
					var paired []float64
					for k, w := range e.walls {
						paired = append(paired, w.Seconds()/r.exports[0].walls[k].Seconds())
					}
					label += fmt.Sprintf(" (÷ first, run by run: median %.3f, %.2f-%.2f)", median(paired), slices.Min(paired), slices.Max(paired))
				}
			}
			fmt.Printf("%10d  %9s %9s %9s  %9s %9s %9s %9s  %7.1fMB %8.1fMB  %6.2f %5.2f-%-5.2f %6.2f %6.2f  %8.0f %7.1f  %6s %6s %8s %6s%s\n", n,
				r.floor.Round(time.Millisecond), r.client.Round(time.Millisecond), e.wall.Round(time.Millisecond),
				r.floorCPU.Round(time.Millisecond), r.clientCPU.Round(time.Millisecond), e.cpu.Round(time.Millisecond),
				e.simCPU.Round(time.Millisecond), mb(r.floorRSS), mb(e.rss), e.wall.Seconds()/r.floor.Seconds(),
				slices.Min(e.runRatios), slices.Max(e.runRatios), e.wall.Seconds()/r.client.Seconds(), bound,
				float64(n)/e.wall.Seconds(), mb(e.fileBytes), ms(e.head), ms(e.tail), ms(r.floorHead), ms(r.floorTail), label)
		}
		e := r.exports[0]
		last += fmt.Sprintf(" n%d_ratio=%.2f n%d_rss_mb=%.0f", n, e.wall.Seconds()/r.floor.Seconds(), n, mb(e.rss))
	}
	fmt.Println("pipeline" + last)
}

type result struct {
	floor, client        time.Duration  // wall
	floorCPU, clientCPU  time.Duration  // user + system
	floorRSS             int64          // bytes
	floorHead, floorTail time.Duration  // before its first request, after its last
	exports              []exportResult // one per binary, in -bin order
}

// exportResult is the medians of one binary's exports.
type exportResult struct {
	wall, cpu  time.Duration
	head, tail time.Duration // before its first request, after its last
	simCPU     time.Duration // the simulator's (this process's) during the export
	rss        int64         // bytes
	fileBytes  int64
	runRatios  []float64       // export ÷ floor of each run
	walls      []time.Duration // each run's, in order
}

func measure(n, runs int, bins []string, self, work string) (result, error) {
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		return result{}, err
	}
	defer sim.Close()
	sim.SeedBookmarks(user, n)
	token := sim.IssueToken(user)
	times := &requestTimes{}
	sim.OnRequest(func(xsim.RequestInfo) { times.saw() })
	specFile := filepath.Join(work, fmt.Sprintf("spec-%d.yml", n))
	specYAML := fmt.Sprintf(`kind: source
spec:
  name: x
  path: cq-source-x
  registry: local
  version: v0.0.0
  tables: ["x_bookmarks"]
  destinations: ["file"]
  spec:
    base_url: %s
    accounts:
      - user_id: %q
        access_token: %q
`, sim.URL(), user, token)
	if err := os.WriteFile(specFile, []byte(specYAML), 0o600); err != nil {
		return result{}, err
	}
	var floors, clients, floorCPUs, clientCPUs, floorHeads, floorTails []time.Duration
	var floorRSS []int64
	type series struct {
		walls, cpus, simCPUs, heads, tails []time.Duration
		rss                                []int64
		ratios                             []float64
		fileBytes                          int64
	}
	exports := make([]series, len(bins))
	for i := range runs {
		m, out, err := run(times, self, "-floor", "-url", sim.URL(), "-token", token)
		if err != nil {
			return result{}, fmt.Errorf("floor: %v: %s", err, out)
		}
		if got := strings.TrimSpace(string(out)); got != strconv.Itoa(n) {
			return result{}, fmt.Errorf("floor fetched %s posts, want %d", got, n)
		}
		floors, floorCPUs, floorRSS = append(floors, m.wall), append(floorCPUs, m.cpu), append(floorRSS, m.rss)
		floorHeads, floorTails = append(floorHeads, m.head), append(floorTails, m.tail)

		m, out, err = run(times, self, "-floor", "-decode", "-url", sim.URL(), "-token", token)
		if err != nil {
			return result{}, fmt.Errorf("client floor: %v: %s", err, out)
		}
		if got := strings.TrimSpace(string(out)); got != strconv.Itoa(n) {
			return result{}, fmt.Errorf("client floor fetched %s posts, want %d", got, n)
		}
		clients, clientCPUs = append(clients, m.wall), append(clientCPUs, m.cpu)

		for b, bin := range bins {
			dir := filepath.Join(work, fmt.Sprintf("out-%d-%d-%d", n, i, b))
			m, out, err = run(times, bin, "export", "--spec", specFile, "--out", dir, "--quiet")
			if err != nil {
				return result{}, fmt.Errorf("export (%s): %v: %s", bin, err, out)
			}
			e := &exports[b]
			e.walls, e.cpus, e.rss = append(e.walls, m.wall), append(e.cpus, m.cpu), append(e.rss, m.rss)
			e.simCPUs = append(e.simCPUs, m.harnessCPU)
			e.heads, e.tails = append(e.heads, m.head), append(e.tails, m.tail)
			e.ratios = append(e.ratios, m.wall.Seconds()/floors[len(floors)-1].Seconds())
			e.fileBytes = dirSize(filepath.Join(dir, "x_bookmarks"))
			os.RemoveAll(dir)
		}
	}
	r := result{
		floor: median(floors), client: median(clients),
		floorCPU: median(floorCPUs), clientCPU: median(clientCPUs), floorRSS: median(floorRSS),
		floorHead: median(floorHeads), floorTail: median(floorTails),
	}
	for _, e := range exports {
		r.exports = append(r.exports, exportResult{
			wall: median(e.walls), cpu: median(e.cpus), head: median(e.heads), tail: median(e.tails), simCPU: median(e.simCPUs), rss: median(e.rss),
			fileBytes: e.fileBytes, runRatios: e.ratios, walls: e.walls,
		})
	}
	return r, nil
}

// requestTimes records when the simulator saw its first and last request
// of the command running now.
type requestTimes struct {
	mu          sync.Mutex
	first, last time.Time
}

func (t *requestTimes) reset() {
	t.mu.Lock()
	t.first, t.last = time.Time{}, time.Time{}
	t.mu.Unlock()
}

func (t *requestTimes) saw() {
	now := time.Now()
	t.mu.Lock()
	if t.first.IsZero() {
		t.first = now
	}
	t.last = now
	t.mu.Unlock()
}

// split is a run's wall time cut at the first and the last request: the
// command's start (process start, set-up, until its first request), its
// walk, and its end (from the last request to exit: the last page, and for
// the export the last encoding, closing the file and saving the state).
func (t *requestTimes) split(start time.Time, wall time.Duration) (head, tail time.Duration) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.first.IsZero() {
		return 0, 0
	}
	return t.first.Sub(start), start.Add(wall).Sub(t.last)
}

// measured is one run of a command.
type measured struct {
	wall, cpu  time.Duration
	head, tail time.Duration // before the first request, after the last
	rss        int64         // bytes
	harnessCPU time.Duration // this process's meanwhile: the simulator serving the command
}

// run runs a command and returns its wall time, CPU time, peak RSS and
// output.
func run(times *requestTimes, name string, args ...string) (measured, []byte, error) {
	cmd := exec.Command(name, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	times.reset()
	before := selfCPU()
	start := time.Now()
	err := cmd.Run()
	m := measured{wall: time.Since(start), harnessCPU: selfCPU() - before}
	m.head, m.tail = times.split(start, m.wall)
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		m.rss = ru.Maxrss * 1024 // kilobytes on Linux
		m.cpu = time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
	}
	return m, out.Bytes(), err
}

// selfCPU is this process's CPU time (user + system) so far.
func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(syscall.TimevalToNsec(ru.Utime) + syscall.TimevalToNsec(ru.Stime))
}

// floorLoop fetches every page of the list as the exporter's first sync does
// (same page size and fields), reads it, finds next_token, and discards it.
func floorLoop(base, token string) (int, error) {
	s := spec.Spec{}
	s.SetDefaults()
	q := url.Values{}
	q.Set("max_results", strconv.Itoa(walk.DefaultMaxPageSize))
	q.Set("tweet.fields", strings.Join(s.Fields.TweetFields, ","))
	next, posts := "", 0
	buf := make([]byte, 0, 1<<20)
	for {
		if next != "" {
			q.Set("pagination_token", next)
		}
		req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, base+"/2/users/"+user+"/bookmarks?"+q.Encode(), nil)
		if err != nil {
			return 0, err
		}
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		w := bytes.NewBuffer(buf[:0])
		_, err = io.Copy(w, resp.Body)
		resp.Body.Close()
		if err != nil {
			return 0, err
		}
		body := w.Bytes()
		posts += bytes.Count(body, []byte(`"edit_history_tweet_ids":`))
		i := bytes.Index(body, []byte(`"next_token":"`))
		if i < 0 {
			return posts, nil
		}
		rest := body[i+len(`"next_token":"`):]
		next = string(rest[:bytes.IndexByte(rest, '"')])
	}
}

// clientLoop is floorLoop with the project's API client, which decodes
// every post of every page (and checks ids, tokens and rate limits).
func clientLoop(base, token string) (int, error) {
	s := spec.Spec{}
	s.SetDefaults()
	api, err := client.New(client.StaticTokenWithTransport(token, http.DefaultTransport),
		client.WithBaseURL(base), client.WithTokenCheck(client.TokenOpaque))
	if err != nil {
		return 0, err
	}
	next, posts := "", 0
	for {
		page, _, err := api.ListBookmarks(context.Background(), user, client.ListOptions{
			PageOptions: client.PageOptions{MaxResults: walk.DefaultMaxPageSize, PaginationToken: next},
			Fields:      client.Fields{TweetFields: s.Fields.TweetFields},
		})
		if err != nil {
			return posts, err
		}
		posts += len(page.Data)
		if next = page.Meta.NextToken; next == "" {
			return posts, nil
		}
	}
}

func median[T int64 | time.Duration | float64](xs []T) T {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func ms(d time.Duration) string { return fmt.Sprintf("%.0fms", d.Seconds()*1000) }

func mb(b int64) float64 { return float64(b) / (1 << 20) }

func dirSize(dir string) int64 {
	var n int64
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			n += info.Size()
		}
	}
	return n
}
