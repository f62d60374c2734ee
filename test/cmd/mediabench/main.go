// Command mediabench measures the storing of media files against a plain
// download loop of the same files, on the built-in simulator over loopback.
//
//	go run ./test/cmd/mediabench
//	go run ./test/cmd/mediabench -files 400 -videos 0.2 -concurrency 8 -rounds 5
//
// It starts the simulator in this process, its media host serving -files
// files of a realistic size mix (photos of 50 KB to 2 MB, videos of 1 to
// 100 MB, sizes uniform in their logarithm, drawn from -seed), and, each
// round, runs four children, each this program again so that its peak RSS
// is its own:
//
//   - baseline: a plain concurrent Go download loop of the files, as one
//     would write it (http.Get, io.Copy to a file, -concurrency at once);
//   - synced: the same loop, syncing each file to disk before it closes it,
//     as a store must before it names a file;
//   - store: media.Saver storing them into a new directory store, as the
//     x_media_files pass does (the same Fetcher, deadlines and size checks,
//     the SHA-256 on the way, fsync and rename);
//   - again: the same Saver on the same store, which fetches nothing.
//
// With -bandwidth, the media host sends at most that many MB a second in
// all, as a downloader's link would carry X's CDN's answers; without, as
// fast as loopback goes, and the store, which syncs each file to disk
// before it names it, is bounded by the disk where the baseline is not
// (its bytes are still in the page cache when it ends).
//
// It prints each child's wall time, MB/s (MB = 10^6 bytes, of the files'
// bytes), CPU time and peak RSS (VmHWM), the medians over the rounds, and
// the ratio of the store's median throughput to the baseline's (the goal
// is 0.9 or more). The simulator's CPU is in this process, on the same
// cores, for both.
package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/media"
	"github.com/cq-source-x/cq-source-x/media/store"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

const (
	childBaseline = "baseline"
	childSynced   = "synced"
	childStore    = "store"
	childAgain    = "again"
)

var children = []string{childBaseline, childSynced, childStore, childAgain}

func main() {
	if len(os.Args) > 2 && os.Args[1] == "child" {
		if err := child(os.Args[2:]); err != nil {
			log.Fatal(err)
		}
		return
	}
	files := flag.Int("files", 200, "media files")
	videos := flag.Float64("videos", 0.15, "share of the files that are videos")
	concurrency := flag.Int("concurrency", media.DefaultConcurrency, "files fetched at once, by both")
	rounds := flag.Int("rounds", 3, "rounds of the three runs")
	seed := flag.Uint64("seed", 1, "seed of the sizes")
	work := flag.String("dir", "", "directory for the files (default: a temporary one)")
	bandwidth := flag.Float64("bandwidth", 0, "the media host's bandwidth in MB/s, shared by every download (a link's); 0: loopback's")
	flag.Parse()
	if err := run(*files, *videos, *concurrency, *rounds, *seed, *work, int64(*bandwidth*1e6)); err != nil {
		log.Fatal(err)
	}
}

// result is what a child reports.
type result struct {
	Files   int     `json:"files"`
	Fetched int     `json:"fetched"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"`
	CPU     float64 `json:"cpu_seconds"`
	PeakRSS int64   `json:"peak_rss"`
}

func run(files int, videos float64, concurrency, rounds int, seed uint64, work string, bandwidth int64) error {
	urls, sizes, total := plan(files, videos, seed)
	sim := xsim.New(xsim.Options{DisableRateLimits: true, MediaSize: func(p string) int64 { return sizes[p] }, MediaBandwidth: bandwidth})
	if err := sim.Start(); err != nil {
		return err
	}
	defer sim.Close()
	for i := range urls {
		urls[i] = sim.MediaURL() + urls[i]
	}
	if work == "" {
		var err error
		if work, err = os.MkdirTemp("", "mediabench"); err != nil {
			return err
		}
		defer os.RemoveAll(work)
	}
	list := filepath.Join(work, "urls.txt")
	if err := os.WriteFile(list, []byte(strings.Join(urls, "\n")+"\n"), 0o644); err != nil {
		return err
	}
	link := "loopback"
	if bandwidth > 0 {
		link = fmt.Sprintf("a link of %.0f MB/s", float64(bandwidth)/1e6)
	}
	fmt.Printf("%d files (%d videos), %.1f MB in all, over %s; %d at once; %d rounds\n", files, int(float64(files)*videos), float64(total)/1e6, link, concurrency, rounds)
	fmt.Printf("%-6s %-9s %9s %9s %9s %10s %8s\n", "round", "run", "wall s", "MB/s", "CPU s", "peak RSS", "fetched")
	all := map[string][]result{}
	for r := 1; r <= rounds; r++ {
		dir := filepath.Join(work, fmt.Sprintf("round%d", r))
		for _, kind := range children {
			res, err := runChild(kind, list, filepath.Join(dir, kind), concurrency)
			if kind == childAgain {
				res, err = runChild(kind, list, filepath.Join(dir, childStore), concurrency)
			}
			if err != nil {
				return err
			}
			if kind != childAgain && res.Bytes != total {
				return fmt.Errorf("%s stored %d bytes of %d", kind, res.Bytes, total)
			}
			all[kind] = append(all[kind], res)
			fmt.Printf("%-6d %-9s %9.2f %9s %9.2f %7.1f MB %8d\n", r, kind, res.Seconds, rate(kind, total, res), res.CPU, float64(res.PeakRSS)/(1<<20), res.Fetched)
		}
		if err := os.RemoveAll(dir); err != nil {
			return err
		}
	}
	fmt.Println("medians:")
	med := map[string]result{}
	for _, kind := range children {
		med[kind] = median(all[kind])
		m := med[kind]
		fmt.Printf("%-16s %9.2f %9s %9.2f %7.1f MB\n", kind, m.Seconds, rate(kind, total, m), m.CPU, float64(m.PeakRSS)/(1<<20))
	}
	fmt.Printf("throughput ratio (store / baseline): %.2f; (store / synced): %.2f\n",
		med[childBaseline].Seconds/med[childStore].Seconds, med[childSynced].Seconds/med[childStore].Seconds)
	return nil
}

// rate is a run's MB/s of the files' bytes; "-" for the run that fetches
// nothing.
func rate(kind string, total int64, r result) string {
	if kind == childAgain {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(total)/1e6/r.Seconds)
}

// plan draws the files: their paths on the media host and their sizes.
func plan(files int, videos float64, seed uint64) (paths []string, sizes map[string]int64, total int64) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	sizes = map[string]int64{}
	logUniform := func(lo, hi float64) int64 {
		return int64(math.Exp(math.Log(lo) + rng.Float64()*(math.Log(hi)-math.Log(lo))))
	}
	nVideos := int(float64(files) * videos)
	for i := range files {
		var p string
		var size int64
		if i < nVideos {
			ps := xsim.MediaPaths(fmt.Sprintf("7_%d", 1_000_000+i))
			p, size = ps[len(ps)-1], logUniform(1e6, 100e6)
		} else {
			p, size = xsim.MediaPaths(fmt.Sprintf("3_%d", 1_000_000+i))[0], logUniform(50e3, 2e6)
		}
		sizes[p] = size
		paths = append(paths, p)
		total += size
	}
	rng.Shuffle(len(paths), func(i, j int) { paths[i], paths[j] = paths[j], paths[i] })
	return paths, sizes, total
}

func runChild(kind, list, dir string, concurrency int) (result, error) {
	exe, err := os.Executable()
	if err != nil {
		return result{}, err
	}
	cmd := exec.Command(exe, "child", kind, list, dir, strconv.Itoa(concurrency))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	if err := cmd.Run(); err != nil {
		return result{}, fmt.Errorf("%s: %w", kind, err)
	}
	var res result
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return result{}, fmt.Errorf("%s: %w: %s", kind, err, out.Bytes())
	}
	res.CPU = cmd.ProcessState.UserTime().Seconds() + cmd.ProcessState.SystemTime().Seconds()
	return res, nil
}

func median(rs []result) result {
	pick := func(f func(result) float64) float64 {
		v := make([]float64, len(rs))
		for i, r := range rs {
			v[i] = f(r)
		}
		slices.Sort(v)
		return v[len(v)/2]
	}
	return result{
		Seconds: pick(func(r result) float64 { return r.Seconds }),
		CPU:     pick(func(r result) float64 { return r.CPU }),
		PeakRSS: int64(pick(func(r result) float64 { return float64(r.PeakRSS) })),
	}
}

// child runs one measured run and prints its result as JSON.
func child(args []string) error {
	if len(args) != 4 {
		return fmt.Errorf("child: want KIND LIST DIR CONCURRENCY, got %q", args)
	}
	kind, list, dir := args[0], args[1], args[2]
	concurrency, err := strconv.Atoi(args[3])
	if err != nil {
		return err
	}
	b, err := os.ReadFile(list)
	if err != nil {
		return err
	}
	urls := strings.Fields(string(b))
	start := time.Now()
	var res result
	switch kind {
	case childBaseline, childSynced:
		res, err = baseline(urls, dir, concurrency, kind == childSynced)
	case childStore, childAgain:
		res, err = saver(urls, dir, concurrency)
	default:
		err = fmt.Errorf("unknown child %q", kind)
	}
	if err != nil {
		return err
	}
	res.Seconds = time.Since(start).Seconds()
	res.PeakRSS = highWaterMark()
	return json.NewEncoder(os.Stdout).Encode(res)
}

// baseline downloads every URL to a file of dir, concurrency at a time,
// syncing each file when synced.
func baseline(urls []string, dir string, concurrency int, synced bool) (result, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return result{}, err
	}
	var mu sync.Mutex
	res := result{Files: len(urls)}
	var firstErr error
	each(urls, concurrency, func(i int, u string) {
		n, err := download(u, filepath.Join(dir, strconv.Itoa(i)), synced)
		mu.Lock()
		defer mu.Unlock()
		res.Bytes += n
		res.Fetched++
		if err != nil && firstErr == nil {
			firstErr = err
		}
	})
	return res, firstErr
}

func download(u, path string, synced bool) (int64, error) {
	resp, err := http.Get(u)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("%s: %s", u, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	n, err := io.Copy(f, resp.Body)
	if err == nil && synced {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return n, err
}

// saver stores every URL in the directory store dir, as x_media_files does.
func saver(urls []string, dir string, concurrency int) (result, error) {
	st, err := store.OpenDir(dir)
	if err != nil {
		return result{}, err
	}
	sv := media.NewSaver(media.SaverOptions{
		Store:       st,
		Fetcher:     &media.Fetcher{Timeouts: client.DefaultTimeouts(), MaxSize: 512_000_000},
		Concurrency: concurrency,
	})
	var mu sync.Mutex
	res := result{Files: len(urls)}
	var firstErr error
	// As the pass does: more requests waiting than the Saver fetches at once.
	each(urls, concurrency, func(_ int, u string) {
		out := sv.Save(context.Background(), media.NewRequest(u))
		mu.Lock()
		defer mu.Unlock()
		if out.Status != media.Stored && firstErr == nil {
			firstErr = fmt.Errorf("%s: %s %s", u, out.Status, out.Err)
			return
		}
		res.Bytes += out.File.Size
		if out.Fetched {
			res.Fetched++
		}
	})
	return res, firstErr
}

// each calls f for each URL, n at a time.
func each(urls []string, n int, f func(i int, u string)) {
	work := make(chan int)
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				f(i, urls[i])
			}
		}()
	}
	for i := range urls {
		work <- i
	}
	close(work)
	wg.Wait()
}

// highWaterMark is this process's peak resident set (VmHWM), in bytes; 0
// without /proc.
func highWaterMark() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}
