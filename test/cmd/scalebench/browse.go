package main

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// With -browse, each scenario's archive — exported with the authors, the
// referenced posts and the photos stored, as a user who looks at it would —
// is served by `cq-source-x browse --out DIR`, a child started
// browseStarts times: the time from its start to the first page read whole
// (it reads the archive before it listens) and the CPU time it took, and
// its peak RSS after the
// searches of browseQueries, each asked browseRounds times over loopback
// from this process (the simulator idle), the page read whole.

const (
	childBrowse  = "child-browse"
	browseStarts = 3
	browseRounds = 10
)

// browseQueries are searches as the page asks them: words of the posts'
// text (common, rare, of several scripts), an author's name and username,
// a hashtag, a word found nowhere, and the filters.
var browseQueries = []string{
	"?q=parquet", "?q=tokens+stop", "?q=%E6%9D%B1%E4%BA%AC", "?q=na%C3%AFve", "?q=nakamura", "?q=%40mallory", "?q=%23golang",
	"?q=zqxjv", "?q=the&media=1", "?from=2020-01-01&to=2020-12-31", "?q=read&from=2018-01-01", "?page=1000", "?q=archive+keeps+whole",
}

// browseResult is the browse child's runs on one archive.
type browseResult struct {
	Scenario  string
	Bookmarks int
	FirstPage []time.Duration // one per start
	CPU       []time.Duration // the child's, to its first page, one per start
	RSS       []int64         // one per start
	Searches  []time.Duration
}

// browse serves the archive in out with browseStarts children, one after
// the other, the first of which is searched.
func (b *bench) browse(sc scenario, out string) (*browseResult, error) {
	fmt.Fprintf(os.Stderr, "scalebench: %s: browse\n", sc.Name)
	r := &browseResult{Scenario: sc.Name, Bookmarks: sc.posts()}
	for i := range browseStarts {
		if err := b.browseOnce(out, r, i == 0); err != nil {
			return r, err
		}
	}
	return r, nil
}

func (b *bench) browseOnce(out string, r *browseResult, search bool) error {
	bin, args := b.self, []string{childBrowse, "--out", out}
	if b.o.bin != "" {
		bin, args[0] = b.o.bin, "browse"
	}
	if b.o.nice != 0 {
		bin, args = "nice", append([]string{"-n", strconv.Itoa(b.o.nice), bin}, args...)
	}
	cmd := exec.Command(bin, args...)
	cmd.Stderr = b.log
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	done, hwm := make(chan struct{}), make(chan int64, 1)
	go func() { hwm <- watchHighWaterMark(cmd.Process.Pid, done) }()
	stop := func() {
		cmd.Process.Signal(os.Interrupt)
		cmd.Wait()
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		stop()
		return fmt.Errorf("browse printed no address: %w", err)
	}
	url := strings.TrimSuffix(strings.TrimSpace(line), "/")
	if err := getPage(url + "/"); err != nil {
		stop()
		return err
	}
	r.FirstPage = append(r.FirstPage, time.Since(start))
	r.CPU = append(r.CPU, processCPU(cmd.Process.Pid))
	for range browseRounds * len(browseQueries) {
		if !search {
			break
		}
		q := browseQueries[len(r.Searches)%len(browseQueries)]
		t := time.Now()
		if err := getPage(url + "/" + q); err != nil {
			stop()
			return err
		}
		r.Searches = append(r.Searches, time.Since(t))
	}
	close(done)
	r.RSS = append(r.RSS, <-hwm)
	stop()
	return nil
}

// getPage reads the page at url whole, and fails unless it is served.
func getPage(url string) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", url, resp.Status)
	}
	return nil
}

// writeBrowse writes the browse results: medians of the starts, and the
// searches' median and 95th percentile.
func writeBrowse(w io.Writer, results []*browseResult) {
	if len(results) == 0 {
		return
	}
	fmt.Fprintf(w, "\n`cq-source-x browse` (%d starts, %d searches of %d queries):\n\n", browseStarts, browseRounds*len(browseQueries), len(browseQueries))
	fmt.Fprintln(w, "| scenario | bookmarks | first page | its CPU | search p50 | search p95 | peak RSS |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		fmt.Fprintf(w, "| %s | %s | %.2f s | %.2f s | %.1f ms | %.1f ms | %s |\n", r.Scenario, thousands(r.Bookmarks), quantile(r.FirstPage, 0.5).Seconds(),
			quantile(r.CPU, 0.5).Seconds(), ms(quantile(r.Searches, 0.5)), ms(quantile(r.Searches, 0.95)), megabytes(quantile(r.RSS, 0.5)))
	}
	if load, err := os.ReadFile("/proc/loadavg"); err == nil {
		fmt.Fprintf(w, "\nload average (1, 5, 15 min) at the end: %s\n", strings.Join(strings.Fields(string(load))[:3], ", "))
	}
}

// processCPU is the CPU time (user + system) the process pid has used so
// far, from /proc (0 without it).
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	_, after, _ := strings.Cut(string(b), ") ") // past the command's name
	f := strings.Fields(after)
	if len(f) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * time.Second / 100 // clock ticks (USER_HZ)
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// quantile is the q-quantile of values (nearest rank).
func quantile[T time.Duration | int64](values []T, q float64) T {
	if len(values) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(values))
	return s[min(len(s)-1, int(q*float64(len(s))))]
}
