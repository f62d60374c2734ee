// Command stopsweep measures how often a stop rule loses a post, and what
// it costs: it runs many seeded scenarios of each kind of list change
// (walk/walktest.Kinds) at confirmations 1 to 3, for the walk's rule and for
// the rules it is compared with, checking every sync with walktest's oracle.
//
//	go run ./test/cmd/stopsweep [-scenarios 2000] [-rounds 10] [-confirmations 1,2,3] [-rules old,consecutive,new] [-kinds new,removals,...]
//
// Each scenario is a list (0 to 2,000 posts) and a first sync, then rounds
// of changes, each followed by an incremental sync; the changes are the
// kind's, on an in-memory list with position tokens (walktest.List). Every
// rule sees the same scenarios (the same seeds).
//
// # Rules
//
//   - new: walk.Walker, the rule in docs/walk.md.
//   - consecutive: stop on 1+c held posts at consecutive remembered
//     positions.
//   - old: stop on 1+c held posts in increasing remembered order (the rule
//     before issue 13).
//
// The last two are models (rules.go): the walk's loop with the same planner
// and memory, and their own stop decision.
//
// # Columns
//
// Per kind, confirmations and rule: the syncs run; posts lost per 10,000
// syncs, by cause — "re-saves": below a run of posts saved again that the
// new rule accepts (the documented exception; for the other rules, losses
// that fit it), "skipped": passed over at a page boundary because a post
// above was removed between two requests (the documented mid-walk case),
// "other": any other (for the new rule, a bug: the property test fails on
// it), and "lost at end": those the archive still lacked after the
// scenario's last sync (the rest were found again by a later sync); syncs that lost a post per 10,000; incremental syncs' billed posts
// per sync, and billed ÷ bound (the bound: 1 + the position of the first
// post not saved since the previous sync started). A post lost is counted
// once, in the sync that first lacked it; posts saved while a walk ran
// (above it, found by the next sync) are not losses. For kinds whose list
// moves during walks, a line after the table gives how many removals above
// a walk's position were made between two pages, and how many new posts
// they made a page boundary skip.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/cq-source-x/cq-source-x/walk/walktest"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "stopsweep:", err)
		os.Exit(1)
	}
}

func run() error {
	scenarios := flag.Int("scenarios", 2000, "scenarios of each kind, for each rule and confirmations")
	rounds := flag.Int("rounds", 10, "incremental syncs of each scenario (after the first)")
	confirmationsFlag := flag.String("confirmations", "1,2,3", "comma-separated confirmations")
	rulesFlag := flag.String("rules", "old,consecutive,new", "comma-separated rules")
	kindsFlag := flag.String("kinds", "", "comma-separated kinds (default: all)")
	flag.Parse()
	if flag.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", flag.Args())
	}
	var confirmations []int
	for _, s := range strings.Split(*confirmationsFlag, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || c < 1 || c > 10 {
			return fmt.Errorf("-confirmations: %q is not a number from 1 to 10", s)
		}
		confirmations = append(confirmations, c)
	}
	var rs []rule
	for _, name := range strings.Split(*rulesFlag, ",") {
		r, err := ruleNamed(strings.TrimSpace(name))
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	kinds := walktest.Kinds
	if *kindsFlag != "" {
		kinds = nil
		for _, name := range strings.Split(*kindsFlag, ",") {
			k, ok := walktest.KindNamed(strings.TrimSpace(name))
			if !ok {
				return fmt.Errorf("unknown kind %q", name)
			}
			kinds = append(kinds, k)
		}
	}

	began := time.Now()
	fmt.Printf("stop rule sweep: %d scenarios of each kind, %d incremental syncs each, on %d CPUs\n", *scenarios, *rounds, runtime.NumCPU())
	for _, k := range kinds {
		fmt.Printf("  %-19s %s\n", k.Name, k.About)
	}
	for _, r := range rs {
		fmt.Printf("  rule %-14s %s\n", r.name, r.about)
	}
	fmt.Println()
	var between []string
	for _, k := range kinds {
		// A table per kind, printed as soon as it is done.
		tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "kind\tc\trule\tsyncs\tlost/10k syncs\tre-saves\tskipped\tother\tlost at end\tsyncs losing/10k\tsyncs fooled/10k\tbilled/sync\tbilled/bound\t")
		for _, c := range confirmations {
			for _, r := range rs {
				t := sweep(k, c, r, *scenarios, *rounds)
				if t.RemovedAbove > 0 {
					between = append(between, fmt.Sprintf("%s, c=%d, %s: %d removals above a walk's position between two pages; %d new posts skipped (%.1f%%)",
						k.Name, c, r.name, t.RemovedAbove, t.Skipped, 100*float64(t.Skipped)/float64(t.RemovedAbove)))
				}
				per := func(n int) string { return fmt.Sprintf("%.1f", 1e4*float64(n)/float64(max(t.Syncs, 1))) }
				fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.4f\t\n", k.Name, c, r.name, t.Syncs,
					per(t.Lost()), per(t.HiddenByResaves), per(t.Skipped), per(t.Unexplained), per(t.LostAtEnd), per(t.LossSyncs), per(t.FooledSyncs),
					float64(t.Billed)/float64(max(t.Syncs-t.Scenarios, 1)), float64(t.Billed)/float64(max(t.Bound, 1)))
			}
		}
		tw.Flush()
		fmt.Println()
	}
	if len(between) > 0 {
		for _, line := range between {
			fmt.Println(line)
		}
		fmt.Println()
	}
	fmt.Printf("run time %s\n", time.Since(began).Round(time.Second))
	return nil
}

// sweep runs n scenarios of kind k with rule r at c confirmations, on every
// CPU.
func sweep(k walktest.Kind, c int, r rule, n, rounds int) *walktest.Tally {
	var mu sync.Mutex
	total := &walktest.Tally{}
	seeds := make(chan uint64)
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Go(func() {
			for seed := range seeds {
				sc := walktest.Scenario{Kind: k, Seed: seed, Rounds: rounds, Confirmations: c}
				t := sc.Run(context.Background(), r.sync(c, false))
				mu.Lock()
				total.Add(t)
				mu.Unlock()
			}
		})
	}
	for seed := range uint64(n) {
		seeds <- seed
	}
	close(seeds)
	wg.Wait()
	return total
}
