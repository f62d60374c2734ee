// Command costbench measures what syncing bookmarks costs: it replays
// workload files through the real planner, walk and state code against the X
// API simulator, on a virtual clock, and compares the posts billed with the
// fewest any client could be billed for, and the posts archived with the
// posts bookmarked.
//
//	go run ./test/cmd/costbench [-workload test/costbench/workloads/reference.json,test/costbench/workloads/churn.json] [-habits per-user|per-round] [-strategies planner,fixed10,fixed100,growth] [-json out.json] [-csv syncs.csv] [-v] [-workers 8] [-confirmations N] [-content authors,media,...] [-owned-reads] [-round-interval 12h] [-usd] [-cpuprofile cpu.prof]
//
// By default it runs both workloads of the repository, one after the other:
// reference.json (daily syncs of 200 accounts) and churn.json (120 accounts
// that also remove old bookmarks, save some of them again, and re-save held
// posts in bursts).
//
// # Strategies
//
//   - planner: this project's plugin, in-process (plugin.New with a virtual
//     clock, an in-memory state backend whose SetKey is staged until Flush, and
//     the sessions hook), every user an account of one spec with an
//     access_token from the simulator, table x_bookmarks only, default planner
//     settings (but planner.confirmations with -confirmations). One plugin
//     sync per round.
//   - fixed10, fixed100, growth: what other tools do (the document's rule 6):
//     walk from the top with pages of 10 (the API default), of 100, or the
//     document's growth schedule (twelve pages of 5, then 10, 20, 40, 80, 100,
//     100, ...), with the client package directly, holding every post id synced
//     so far, and stop at the end of the first page that holds one of them, or
//     at the end of the list. They may lose posts (a re-bookmark above new
//     ones ends the walk early): that is the point of the comparison.
//
// Each strategy runs on a freshly built simulator and virtual clock, with the
// same script (same seed, same ids, same events), so the lists are identical.
// Billed posts, requests and 429s are the simulator's meter (deltas per
// sync); they are cross-checked against the strategy's own meter (the
// sessions' meters and walk results for the planner) and any disagreement is
// an error. No strategy should see a 429: the client package keeps its own
// request budget and waits for the window to reset rather than send a request
// the server would refuse. The "waits" column counts those waits as an account
// syncing alone would sit through them: the windows each sync's requests span
// beyond the first, ceil(requests / limit) - 1, summed. (The meters' own wait
// counts are in the -json and -csv output; they are lower, because walks run
// concurrently on one virtual clock and a window one walk waits out passes
// for the others too.)
//
// # What it costs in USD
//
// The simulator bills as X does (sandbox/xsim, billing.go): every post and
// expanded user at its rate, media free, each resource once per UTC day of
// the virtual clock per app; each user has an app of their own. The tables'
// "X bills", "users" and "USD" columns are its bill, cross-checked against
// the plugin's meter (x_api_usage) sync by sync: posts, users and USD, so
// that owned reads the plugin prices wrongly fail the run. -content sets the planner's
// content section (the kinds listed on, the others off; default: the spec's
// defaults), -owned-reads makes every user their app's owner.
//
// -usd runs the planner once per content section — every kind off, each
// kind alone on, the defaults, every kind on — with owned reads, and prints
// USD per 1,000 bookmarks archived, as owned reads and as ordinary reads
// (the same posts at the post rate), for the first syncs and the
// incremental ones. It runs the first workload only (reference.json unless
// -workload says otherwise).
//
// -round-interval d syncs every d instead of the file's interval: the same
// events, each round's spread in their order over the syncs of its
// interval (with 12h, the first half of a day's events before the noon
// sync, the rest before the midnight one), so only how often the lists are
// synced differs. With 12h on reference.json, every other sync runs on the
// UTC day of the one before, and the report says what X billed those syncs
// and the fewest any planner could be billed for knowing what X had already
// billed that day.
//
// # Reading the workload file
//
// The file is read, never copied into code; unknown fields are an error.
//
//   - Users: ids 1000001, 1000002, ... Initial lists: a bucket of
//     initial_bookmarks by share per user, a size uniform in [min, max], seeded
//     with SeedBookmarks an hour before the first sync.
//   - new_bookmarks_per_round, -habits per-user (default): each user is
//     assigned a bucket once, by share, and each round draws a count uniformly
//     in that bucket's [min, max]. -habits per-round: each (user, round) draws a
//     bucket by share, then a count.
//   - per_round_events, each round and user: with unbookmark_probability,
//     remove unbookmark_count (uniform) posts, each the newest post with
//     unbookmark_newest_share, else a uniformly random one; with
//     rebookmark_held_probability, re-bookmark one held post (one bookmarked
//     before the previous sync and still bookmarked), chosen uniformly; with
//     rebookmark_burst.probability, re-save a burst of [min, max] distinct
//     held posts, chosen uniformly, one after the other in a random order
//     (the only order implemented). Each new bookmark is, with
//     resave_removed_share_of_new, a post the user removed in an earlier round
//     (chosen uniformly among those not saved again since) saved again, or a
//     new post when there is none. A round's events (each new bookmark is
//     one event, a burst one event) are shuffled together: interleaved in
//     random order. Removals from an empty list and re-bookmarks with nothing
//     held are skipped (and counted).
//   - event_order is prose, and it is read: only the texts of reference.json
//     and churn.json are accepted, any other is refused. The churn text says
//     that a removal other than the newest takes a held post, not any post,
//     and so it does there; reference.json's removals take any post.
//   - Everything is drawn from one PCG generator seeded with the file's seed,
//     in a fixed order: the run is deterministic.
//   - Rounds: round 0 is the first sync, after seeding. Then for each of the
//     rounds: the round's events happen (at the midpoint of the interval), the
//     clock moves to the next round_interval boundary, and every user syncs.
//   - rate_limit is the simulator's per-user limit and window for the list
//     operation (and the baselines' client budget). Rate-limit waits move the
//     virtual clock; syncs start on the round boundary unless waits pushed the
//     clock past it.
//
// # Bounds
//
//   - First sync: the list length.
//   - Later syncs: 1 + the 0-based position, in the current list, of the first
//     post whose current bookmark time (from the simulator) is at or before the
//     start of the previous sync — a post bookmarked then and still bookmarked;
//     a re-bookmarked post has a new time, so it counts as above. The list
//     length if there is no such post. No client can have every post for less.
//   - The order-confirming bound (c.bound): a client that must confirm the
//     list's order to be safe against re-bookmarks reads one post more:
//     min(bound + 1, list length). For first syncs it equals the bound.
//   - Ratios are of sums: billed ÷ bound over all first (or all incremental)
//     syncs. The script keeps its own model of every list and checks that the
//     simulator's length and bound agree with it at every sync.
//
// # Archive checks
//
// Emitted posts are the SyncInsert rows of x_bookmarks (columns user_id,
// post_id) for the planner, the posts a baseline wrote for the others. Lost:
// distinct (user, post) pairs that were in the user's list at a sync and had
// not been emitted by the end of it; "lost at end" counts those still missing
// after the last sync. Duplicates: rows emitted again for a (user, post);
// a post removed where a walk saw it is forgotten, so when it is saved again
// it is emitted again (the destination's primary key keeps one row).
//
// # Output
//
// A table per sync kind (first, incremental) with billed, bound, ratio,
// c.bound, c.ratio, requests, 429s and waits per strategy; an archive table
// (lost, duplicates, rows); for the planner, where its posts above the bounds
// go (by new-bookmark bucket, by bound size, first incremental sync or later,
// split into page-size overread and stop-rule cost) and its largest excesses.
// The last lines, one per workload, are machine-readable; requests,
// rate_limited and lost there cover the whole run (first and incremental
// syncs):
//
//	planner workload=W habits=H incremental_billed=N incremental_bound=M ratio=R requests=Q rate_limited=Z lost=L
//
// They are printed only when the planner is among the strategies.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"

	"github.com/cq-source-x/cq-source-x/test/costbench"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "costbench:", err)
		os.Exit(1)
	}
}

func run() error {
	workloadsFlag := flag.String("workload", "test/costbench/workloads/reference.json,test/costbench/workloads/churn.json", "comma-separated workload files, each run in turn")
	habitsFlag := flag.String("habits", string(costbench.PerUser), "how new_bookmarks_per_round shares are read: per-user or per-round")
	strategiesFlag := flag.String("strategies", "all", "comma-separated subset of planner,fixed10,fixed100,growth")
	jsonPath := flag.String("json", "", "also write the results (an array, one per workload) as JSON to this file")
	csvPath := flag.String("csv", "", "also write one row per sync (workload, strategy, round, user, bound, billed, page sizes, ...) to this CSV file")
	verbose := flag.Bool("v", false, "print a line per strategy and round, failed walks, and the plugin's warnings, to stderr")
	workers := flag.Int("workers", 8, "users a baseline strategy walks at once")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile to this file")
	confirmations := flag.Int("confirmations", 0, "the planner strategy's planner.confirmations (0: the default)")
	contentFlag := flag.String("content", "", "comma-separated content kinds the planner archives (the others off); empty: the spec's defaults; \"none\": every kind off")
	owned := flag.Bool("owned-reads", false, "every user owns the app of their token: their bookmark reads are owned reads")
	interval := flag.Duration("round-interval", 0, "sync every this long instead of the workload's round interval (0: the file's)")
	usd := flag.Bool("usd", false, "print USD per 1,000 bookmarks archived with each content kind on and off (planner only, first workload)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}

	var workloads []*costbench.Workload
	for _, path := range strings.Split(*workloadsFlag, ",") {
		w, err := costbench.LoadWorkload(strings.TrimSpace(path))
		if err != nil {
			return err
		}
		if *interval > 0 {
			if w, err = w.WithRoundInterval(*interval); err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
		}
		workloads = append(workloads, w)
	}
	content, err := parseContent(*contentFlag)
	if err != nil {
		return err
	}
	habits, err := costbench.ParseHabits(*habitsFlag)
	if err != nil {
		return err
	}
	strategies, err := costbench.ParseStrategies(*strategiesFlag)
	if err != nil {
		return err
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *usd {
		w := workloads[0]
		cfg := costbench.Config{Workload: w, Habits: habits, Workers: *workers, Confirmations: *confirmations}
		rows, err := costbench.RunUSD(ctx, cfg, costbench.ContentConfigs(), os.Stderr)
		if err != nil {
			return err
		}
		costbench.WriteUSDTable(os.Stdout, w, habits, rows)
		return writeJSON(*jsonPath, rows)
	}
	var results []*costbench.Result
	for i, w := range workloads {
		cfg := costbench.Config{Workload: w, Habits: habits, Strategies: strategies, Workers: *workers, Confirmations: *confirmations,
			Content: content, OwnedReads: *owned}
		if *verbose {
			cfg.Log = os.Stderr
			cfg.PluginLog = os.Stderr
		}
		res, err := costbench.Run(ctx, cfg)
		if err != nil {
			return fmt.Errorf("workload %s: %w", w.Name, err)
		}
		if i > 0 {
			fmt.Println()
		}
		res.WriteTable(os.Stdout, w)
		fmt.Printf("\nrun time %s\n", res.Elapsed.Round(1e7))
		results = append(results, res)
	}
	if err := writeJSON(*jsonPath, results); err != nil {
		return err
	}
	if *csvPath != "" {
		if err := writeCSV(*csvPath, results); err != nil {
			return err
		}
	}
	fmt.Println()
	for _, res := range results {
		if p := res.Find(costbench.StrategyPlanner); p != nil {
			fmt.Println(res.MachineLine(p))
		}
	}
	return nil
}

// parseContent reads -content: nil for the spec's defaults.
func parseContent(s string) (map[string]bool, error) {
	if s == "" {
		return nil, nil
	}
	m := map[string]bool{}
	for _, k := range costbench.ContentKinds {
		m[k] = false
	}
	if s == "none" {
		return m, nil
	}
	for _, k := range strings.Split(s, ",") {
		k = strings.TrimSpace(k)
		if _, ok := m[k]; !ok {
			return nil, fmt.Errorf("-content: unknown kind %q (known: %s)", k, strings.Join(costbench.ContentKinds, ", "))
		}
		m[k] = true
	}
	return m, nil
}

func writeJSON(path string, v any) error {
	if path == "" {
		return nil
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

func writeCSV(path string, results []*costbench.Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := costbench.WriteCSV(f, results); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
