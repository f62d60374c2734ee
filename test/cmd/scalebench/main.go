// Command scalebench measures the exporter at scale: many posts, many
// accounts, on the built-in simulator over loopback.
//
//	go run ./test/cmd/scalebench
//	go run ./test/cmd/scalebench -scenarios 1x1000000,1000,10000 -shards 4 -shard-spread 2,8,16 -workload test/costbench/workloads/reference.json
//	go run ./test/cmd/scalebench -scenarios 10000 -export=false -shards 0 -shard-spread 2,4,8,16 -largest-first
//	go run ./test/cmd/scalebench -scenarios 1x100000 -shards 0 -shard-spread "" -browse
//
// A scenario is "ACCOUNTSxPOSTS" (every account holds POSTS bookmarks) or
// "ACCOUNTS" (list sizes drawn from the workload file's initial_bookmarks,
// as the cost benchmark draws them: its first 200 are the cost benchmark's
// users). For each scenario it starts the X API simulator in this process
// (rate limits off: the benchmark measures the program, not X's 180
// requests per 15 minutes), seeds the lists, writes a spec file (all
// tables, one access token per account) and runs, each as a child process
// so that its peak RSS is its own:
//
//   - first: `cq-source-x export --spec SPEC --out DIR --quiet --json`
//     into a new directory — every post is read and written;
//   - incremental: the same command again, nothing having changed;
//   - shard i/n (with -shards n, scenarios of more than one account): a
//     plugin sync of shard i/n of the accounts (`cloudquery sync --shard i/n`
//     runs the same Sync), every table, the state in memory, the rows
//     counted and dropped. It checks that every account is in exactly one
//     shard, that each shard sends the rows of its accounts' posts and no
//     others, and reports each shard's accounts and held posts;
//   - for each n of -shard-spread, the accounts of each shard i/n (a sync
//     of x_api_usage only, which reads no posts): the same check, and how
//     far apart the shards are in accounts and in held posts.
//
// With -browse, the archive of each scenario's exports (made with the
// authors, the referenced posts and the photos stored) is then served by
// `cq-source-x browse` (browse.go): the time from its start to its first
// page, the latency of searches, and its peak RSS.
//
// The exporter child is this program re-run as `cq-source-x export`
// (cli, as main.go runs it), or the binary given with -bin.
// The table gives wall time, x_bookmarks rows written per second of wall
// time, CPU time (user + system), peak RSS of the exporter process (its
// VmHWM), the posts the API returned (per account that holds any, and
// the most for one account) and the size of DIR/.state/state.json per
// account; then how much peak RSS each further account took from one
// scenario to the next. The simulator's CPU is in this process, on the same
// cores. -largest-first lists the accounts in the spec largest list first
// (shards are every n-th account of the spec); -latency adds a delay to
// every request of the incremental syncs, as X's round trip would (the
// first syncs, a request per 90 posts, would take hours).
//
// A run fails when a sync loses a post (rows written ≠ posts held), writes
// one twice, or an account fails. With -heapprofile DIR each child writes
// DIR/<scenario>-<sync>.heap.pprof near its peak heap, and with -cpuprofile
// DIR a CPU profile DIR/<scenario>-<sync>.cpu.pprof (go tool pprof).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/test/costbench"
)

func main() {
	if len(os.Args) > 1 && isChild(os.Args[1]) {
		os.Exit(runChild(os.Args[1:]))
	}
	var o options
	flag.StringVar(&o.scenarios, "scenarios", "1x1000000,1000,10000", "comma-separated scenarios: ACCOUNTS (sizes from -workload) or ACCOUNTSxPOSTS")
	flag.StringVar(&o.workload, "workload", "test/costbench/workloads/reference.json", "workload file whose initial_bookmarks gives list sizes")
	flag.IntVar(&o.shards, "shards", 4, "sync each shard i/n of scenarios of more than one account (0: skip)")
	flag.StringVar(&o.spread, "shard-spread", "2,8,16", "comma-separated shard counts n whose accounts and held posts per shard are shown (no posts read)")
	flag.IntVar(&o.concurrency, "concurrency", 0, "the spec's concurrency (0: the plugin's default)")
	flag.IntVar(&o.state, "state", 0, "with n > 0, keep the state of scenarios of more than one account in a gRPC state backend: steady-state syncs of each shard i/n, then a sync of every account and one of shard 1/n, with the state each read and its peak RSS")
	flag.BoolVar(&o.export, "export", true, "run the exporter's first and incremental syncs (false: shards only)")
	flag.BoolVar(&o.browse, "browse", false, "serve each scenario's archive, exported with authors, referenced posts and photos, with `cq-source-x browse`: time to the first page, search latency, peak RSS")
	flag.IntVar(&o.nice, "nice", 0, "with -browse, run the browse children at this niceness (nice -n; below 0, ahead of the machine's other work, as root)")
	flag.BoolVar(&o.largestFirst, "largest-first", false, "list the accounts in the spec largest list first")
	flag.DurationVar(&o.latency, "latency", 0, "delay the simulator adds to every request of the incremental syncs, as X's round trip would")
	flag.StringVar(&o.bin, "bin", "", "cq-source-x binary to measure (default: this program as `cq-source-x export`)")
	flag.StringVar(&o.heapProfiles, "heapprofile", "", "directory for the children's heap profiles near their peak (not with -bin)")
	flag.StringVar(&o.cpuProfiles, "cpuprofile", "", "directory for the children's CPU profiles (not with -bin)")
	flag.BoolVar(&o.verbose, "v", false, "show the children's stderr")
	flag.Parse()
	if flag.NArg() > 0 {
		log.Fatalf("unexpected argument %q", flag.Arg(0))
	}
	if err := run(o, os.Stdout); err != nil {
		log.Fatal(err)
	}
}

type options struct {
	scenarios, workload string
	shards, concurrency int
	state               int
	spread              string
	export              bool
	browse              bool
	nice                int
	largestFirst        bool
	latency             time.Duration
	bin                 string
	heapProfiles        string
	cpuProfiles         string
	verbose             bool
}

// syncResult is one sync of a scenario.
type syncResult struct {
	Scenario, Sync string
	Accounts       int
	process
	Rows       int // x_bookmarks rows written
	Requests   int
	Read       int // posts read (returned), from the simulator's meter; X bills each once per UTC day
	Holding    int // accounts with a non-empty list
	MaxRead    int // most posts read for one account
	StateBytes int64
	HeldPosts  int
}

func run(o options, w io.Writer) error {
	var wl *costbench.Workload
	if o.workload != "" {
		var err error
		if wl, err = costbench.LoadWorkload(o.workload); err != nil {
			return err
		}
	}
	spreads, err := parseCounts(o.spread)
	if err != nil {
		return fmt.Errorf("-shard-spread: %w", err)
	}
	var scenarios []scenario
	for _, s := range strings.Split(o.scenarios, ",") {
		sc, err := parseScenario(strings.TrimSpace(s), wl)
		if err != nil {
			return err
		}
		if o.largestFirst {
			slices.SortFunc(sc.Sizes, func(a, b int) int { return b - a })
			sc.Name += ", largest first"
		}
		scenarios = append(scenarios, sc)
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	work, err := os.MkdirTemp("", "scalebench")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	b := &bench{o: o, spreads: spreads, self: self, work: work, log: io.Discard}
	if o.verbose {
		b.log = os.Stderr
	}
	var results []syncResult
	var shards []*shardResult
	defer func() {
		for _, st := range b.states {
			st.write(w)
		}
	}()
	for i, sc := range scenarios {
		rs, sh, err := b.scenario(i, sc)
		results = append(results, rs...)
		shards = append(shards, sh...)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.Name, err)
		}
	}
	writeTable(w, results)
	writeBrowse(w, b.browsed)
	writeGrowth(w, results)
	for _, sh := range shards {
		sh.write(w)
	}
	return nil
}

type bench struct {
	o          options
	spreads    []int // the shard counts of -shard-spread
	self, work string
	log        io.Writer
	browsed    []*browseResult
	states     []*stateResult
}

// parseCounts reads a comma-separated list of shard counts.
func parseCounts(list string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(list, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 1 {
			return nil, fmt.Errorf("%q is not a shard count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// scenario runs one scenario's syncs.
func (b *bench) scenario(n int, sc scenario) ([]syncResult, []*shardResult, error) {
	fmt.Fprintf(os.Stderr, "scalebench: %s: seeding %s posts\n", sc.Name, thousands(sc.posts()))
	sim, tokens, err := sc.seed()
	if err != nil {
		return nil, nil, err
	}
	defer sim.Close()
	dir := filepath.Join(b.work, strconv.Itoa(n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	specFile := filepath.Join(dir, "spec.yml")
	if err := writeSpec(specFile, sim.URL(), tokens, b.o.concurrency, b.o.browse); err != nil {
		return nil, nil, err
	}
	var results []syncResult
	if b.o.export {
		if results, err = b.exports(sc, sim, specFile, filepath.Join(dir, "out")); err != nil {
			return results, nil, err
		}
		if b.o.browse {
			br, err := b.browse(sc, filepath.Join(dir, "out"))
			b.browsed = append(b.browsed, br)
			if err != nil {
				return results, nil, fmt.Errorf("browse: %w", err)
			}
		}
	}
	if len(sc.Sizes) < 2 {
		return results, nil, nil
	}
	if b.o.state > 0 {
		st, err := b.stateSyncs(sc, sim.URL(), tokens, b.o.state)
		if st != nil {
			b.states = append(b.states, st)
		}
		if err != nil {
			return results, nil, fmt.Errorf("-state: %w", err)
		}
	}
	var shards []*shardResult
	if b.o.shards > 0 {
		sh, err := b.shards(sc, specFile, b.o.shards, true)
		if err != nil {
			return results, nil, err
		}
		shards = append(shards, sh)
	}
	for _, n := range b.spreads {
		sh, err := b.shards(sc, specFile, n, false)
		if err != nil {
			return results, shards, err
		}
		shards = append(shards, sh)
	}
	return results, shards, nil
}

// exports runs the first and the incremental export of a scenario.
func (b *bench) exports(sc scenario, sim *xsim.Server, specFile, out string) ([]syncResult, error) {
	var results []syncResult
	for _, name := range []string{"first", "incremental"} {
		fmt.Fprintf(os.Stderr, "scalebench: %s: %s sync\n", sc.Name, name)
		want := sc.posts()
		if name == "incremental" {
			want = 0
			if b.o.latency > 0 {
				sim.SetFaults(xsim.Faults{Latency: b.o.latency})
				defer sim.SetFaults(xsim.Faults{})
				name = fmt.Sprintf("incremental, %s a request", b.o.latency)
			}
		}
		r, err := b.export(sc, name, sim, specFile, out)
		if err != nil {
			return results, fmt.Errorf("%s sync: %w", name, err)
		}
		if r.Rows != want {
			return results, fmt.Errorf("%s sync wrote %d x_bookmarks rows, want %d", name, r.Rows, want)
		}
		results = append(results, *r)
	}
	return results, nil
}

// export runs one export and reads what it did from its summary and from
// the simulator's meter.
func (b *bench) export(sc scenario, name string, sim *xsim.Server, specFile, out string) (*syncResult, error) {
	sim.ResetUsage()
	args := []string{"export", "--spec", specFile, "--out", out, "--quiet", "--json"}
	bin := b.o.bin
	if bin == "" {
		bin, args[0] = b.self, childExport
	}
	p, err := runProcess(bin, args, b.profileEnv(sc, name), b.log)
	if err != nil {
		return nil, err
	}
	var sum export.Summary
	if err := json.Unmarshal(p.Stdout, &sum); err != nil {
		return nil, fmt.Errorf("reading the export's --json summary: %w", err)
	}
	if !sum.OK {
		var failed []string
		for _, a := range sum.Accounts {
			if !a.OK {
				failed = append(failed, a.Account+": "+a.Error)
			}
		}
		return nil, fmt.Errorf("the export reports failed accounts: %v", failed)
	}
	r := &syncResult{Scenario: sc.Name, Sync: name, Accounts: len(sc.Sizes), process: *p,
		Rows: sum.Totals.BookmarksWritten, Requests: sum.Totals.Requests, Read: sim.TotalPostsReturned(), HeldPosts: sc.posts()}
	read := 0
	for _, a := range sum.Accounts {
		for _, o := range a.Operations {
			read += o.PostsReturned
		}
	}
	if read != r.Read {
		return nil, fmt.Errorf("the export counts %d posts read, the simulator %d", read, r.Read)
	}
	for i, size := range sc.Sizes {
		if size == 0 {
			continue
		}
		r.Holding++
		read := 0
		for _, u := range sim.Usage(userID(i)) {
			read += u.PostsReturned
		}
		r.MaxRead = max(r.MaxRead, read)
	}
	st, err := os.Stat(filepath.Join(out, ".state", "state.json"))
	if err != nil {
		return nil, err
	}
	r.StateBytes = st.Size()
	return r, nil
}

// profileEnv asks a child for the profiles of -heapprofile and -cpuprofile.
func (b *bench) profileEnv(sc scenario, name string) []string {
	slug := strings.NewReplacer(" ", "", ",", "", "×", "x").Replace(sc.Name + "-" + name)
	var env []string
	if b.o.heapProfiles != "" {
		env = append(env, envHeapProf+"="+filepath.Join(b.o.heapProfiles, slug+".heap.pprof"))
	}
	if b.o.cpuProfiles != "" {
		env = append(env, envCPUProf+"="+filepath.Join(b.o.cpuProfiles, slug+".cpu.pprof"))
	}
	return env
}

// shardResult is the --shard check of one scenario.
type shardResult struct {
	Scenario string
	Total    int
	// Synced: every shard was synced (all tables) and its rows counted;
	// otherwise only its accounts were asked for (x_api_usage only).
	Synced bool
	Shards []shardRow
	// Missing and Repeated count accounts in no shard and in more than one.
	Missing, Repeated int
}

type shardRow struct {
	Accounts, Held, Rows int
	process
}

// shards runs shard i/total of the scenario's accounts for each i, as
// `cloudquery sync --shard i/total` does, and checks that they partition
// the accounts. With sync, each shard syncs every table and must send the
// rows of its accounts' posts and no others; without, it syncs x_api_usage
// only, which reads no posts, to learn its accounts.
func (b *bench) shards(sc scenario, specFile string, total int, sync bool) (*shardResult, error) {
	res := &shardResult{Scenario: sc.Name, Total: total, Synced: sync}
	index := make(map[string]int, len(sc.Sizes))
	for i := range sc.Sizes {
		index[userID(i)] = i
	}
	seen := make([]int, len(sc.Sizes))
	for num := 1; num <= total; num++ {
		name := fmt.Sprintf("shard %d/%d", num, total)
		args := []string{childShard, specFile, strconv.Itoa(num), strconv.Itoa(total)}
		if sync {
			fmt.Fprintf(os.Stderr, "scalebench: %s: %s\n", sc.Name, name)
		} else {
			args = append(args, resources.APIUsageTable)
		}
		p, err := runProcess(b.self, args, b.profileEnv(sc, fmt.Sprintf("shard%dof%d", num, total)), b.log)
		if err != nil {
			return res, err
		}
		var out shardOutput
		if err := json.Unmarshal(p.Stdout, &out); err != nil {
			return res, fmt.Errorf("%s: %w", name, err)
		}
		if len(out.Failed) > 0 {
			return res, fmt.Errorf("%s: %d accounts failed", name, len(out.Failed))
		}
		row := shardRow{Accounts: len(out.Accounts), process: *p}
		for _, uid := range out.Accounts {
			i, ok := index[uid]
			if !ok {
				return res, fmt.Errorf("%s synced unknown user %q", name, uid)
			}
			seen[i]++
			row.Held += sc.Sizes[i]
			if sync && out.Rows[uid] != sc.Sizes[i] {
				return res, fmt.Errorf("%s: user %s: %d rows, want %d", name, uid, out.Rows[uid], sc.Sizes[i])
			}
		}
		for _, n := range out.Rows {
			row.Rows += n
		}
		if sync && row.Rows != row.Held {
			return res, fmt.Errorf("%s sent %d rows for its %d held posts (rows of other shards' accounts)", name, row.Rows, row.Held)
		}
		res.Shards = append(res.Shards, row)
	}
	for _, n := range seen {
		switch {
		case n == 0:
			res.Missing++
		case n > 1:
			res.Repeated++
		}
	}
	if res.Missing > 0 || res.Repeated > 0 {
		return res, fmt.Errorf("--shard i/%d: %d accounts in no shard, %d in more than one", total, res.Missing, res.Repeated)
	}
	return res, nil
}

// spread is max/min − 1 of the shards' values: 0.10 means the largest is
// 10% above the smallest.
func spread(rows []shardRow, value func(shardRow) int) float64 {
	vals := make([]int, len(rows))
	for i, r := range rows {
		vals[i] = value(r)
	}
	lo, hi := slices.Min(vals), slices.Max(vals)
	if lo == 0 {
		if hi == 0 {
			return 0
		}
		return math.Inf(1) // an empty shard
	}
	return float64(hi)/float64(lo) - 1
}

func (sh *shardResult) write(w io.Writer) {
	accounts := spread(sh.Shards, func(r shardRow) int { return r.Accounts })
	held := spread(sh.Shards, func(r shardRow) int { return r.Held })
	if !sh.Synced {
		fmt.Fprintf(w, "\n--shard i/%d over %s: every account in exactly one shard: %v; spread (largest ÷ smallest − 1): accounts %.1f%%, held posts %.1f%%\n",
			sh.Total, sh.Scenario, sh.Missing == 0 && sh.Repeated == 0, 100*accounts, 100*held)
		return
	}
	fmt.Fprintf(w, "\n--shard i/%d over %s (plugin sync of every table, state in memory):\n\n", sh.Total, sh.Scenario)
	fmt.Fprintln(w, "| shard | accounts | held posts | rows | wall | peak RSS |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|")
	for i, r := range sh.Shards {
		fmt.Fprintf(w, "| %d/%d | %s | %s | %s | %s | %s |\n", i+1, sh.Total, thousands(r.Accounts), thousands(r.Held), thousands(r.Rows), seconds(r.Wall), megabytes(r.RSS))
	}
	fmt.Fprintf(w, "\nevery account in exactly one shard: %v (%d in none, %d in several); spread (largest ÷ smallest − 1): accounts %.1f%%, held posts %.1f%%\n",
		sh.Missing == 0 && sh.Repeated == 0, sh.Missing, sh.Repeated, 100*accounts, 100*held)
}

func writeTable(w io.Writer, results []syncResult) {
	if len(results) == 0 {
		return
	}
	fmt.Fprintln(w, "| scenario | sync | posts held | rows written | requests | wall | rows/s | CPU | sim CPU | peak RSS | read/account (max) | state/account |")
	fmt.Fprintln(w, "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range results {
		rate := "–"
		if r.Rows > 0 {
			rate = thousands(int(float64(r.Rows) / r.Wall.Seconds()))
		}
		perAccount := "–"
		if r.Holding > 0 {
			perAccount = fmt.Sprintf("%.2f (%s)", float64(r.Read)/float64(r.Holding), thousands(r.MaxRead))
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n",
			r.Scenario, r.Sync, thousands(r.HeldPosts), thousands(r.Rows), thousands(r.Requests), seconds(r.Wall), rate, seconds(r.CPU),
			seconds(r.SimCPU), megabytes(r.RSS), perAccount, kilobytes(r.StateBytes/int64(r.Accounts)))
	}
}

// writeGrowth shows, between scenarios of more than one account, how much
// peak RSS each further account and post took: flat per account means the
// same figure however many accounts there are.
func writeGrowth(w io.Writer, results []syncResult) {
	for _, sync := range []string{"first", "incremental"} {
		var prev *syncResult
		for i := range results {
			r := &results[i]
			if !strings.HasPrefix(r.Sync, sync) || r.Accounts < 2 {
				continue
			}
			if prev != nil && r.Accounts > prev.Accounts && r.HeldPosts > prev.HeldPosts {
				extra := r.RSS - prev.RSS
				fmt.Fprintf(w, "\n%s sync, %s → %s accounts: peak RSS %+.0f MiB, %.1f KiB per further account (%.0f bytes per further post held)",
					sync, thousands(prev.Accounts), thousands(r.Accounts), float64(extra)/(1<<20),
					float64(extra)/float64(r.Accounts-prev.Accounts)/(1<<10), float64(extra)/float64(r.HeldPosts-prev.HeldPosts))
			}
			prev = r
		}
	}
	fmt.Fprintln(w)
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

func megabytes(n int64) string {
	if n == 0 {
		return "?"
	}
	return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20))
}

func kilobytes(n int64) string {
	if n >= 10<<20 {
		return megabytes(n)
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}
