package costbench

import (
	"encoding/csv"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// Find returns the named strategy's result, or nil.
func (r *Result) Find(name string) *StrategyResult {
	for _, s := range r.Strategies {
		if s.Name == name {
			return s
		}
	}
	return nil
}

// MachineLine is a strategy's machine-readable summary: the workload and
// habits, incremental billed posts and bound, their ratio, and requests,
// 429s and lost posts over the whole run (first and incremental syncs).
func (r *Result) MachineLine(s *StrategyResult) string {
	return fmt.Sprintf("%s workload=%s habits=%s incremental_billed=%d incremental_bound=%d ratio=%.4f requests=%d rate_limited=%d lost=%d",
		s.Name, r.Workload, r.Habits, s.Incremental.Billed, s.Incremental.Bound, s.Incremental.Ratio,
		s.First.Requests+s.Incremental.Requests, s.First.RateLimited+s.Incremental.RateLimited, s.Lost)
}

// WriteTable writes the readable report: one table for first syncs, one for
// incremental syncs, one for what was archived, then where the planner's
// posts above the bounds went.
func (r *Result) WriteTable(out io.Writer, w *Workload) {
	fmt.Fprintf(out, "cost benchmark: workload %q (seed %d): %d users, %d rounds every %s, habits %s\n",
		r.Workload, r.Seed, r.Users, r.Rounds, time.Duration(w.RoundInterval), r.Habits)
	if k := w.SyncsPerRound(); k > 1 {
		fmt.Fprintf(out, "the file's events, each of its rounds spread in order over %d syncs\n", k)
	}
	e := r.Events
	fmt.Fprintf(out, "events: %d posts in the initial lists; %d new bookmarks, %d unbookmarks (%d of the newest post), %d re-bookmarks of held posts (%d bursts), %d removed posts saved again, %d skipped (nothing to act on)\n",
		e.InitialPosts, e.New, e.Unbookmarks, e.NewestRemoved, e.Rebookmarks, e.Bursts, e.ResavedRemoved, e.Skipped)
	fmt.Fprintf(out, "bound: first sync = list length; afterwards = 1 + position of the first post bookmarked before the previous sync and still bookmarked (list length if none); c.bound = min(bound+1, list length), the order-confirming bound\n")
	for _, s := range r.Strategies {
		fmt.Fprintf(out, "  %-9s %s\n", s.Name, StrategyAbout[s.Name])
	}

	totals := func(title string, get func(*StrategyResult) Totals) {
		fmt.Fprintf(out, "\n%s\n", title)
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "strategy\tsyncs\tbilled\tbound\tratio\tc.bound\tc.ratio\trequests\t429s\twaits\tX bills\tusers\tUSD\t")
		for _, s := range r.Strategies {
			t := get(s)
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.3f\t%d\t%.3f\t%d\t%d\t%d\t%d\t%d\t%.2f\t\n",
				s.Name, t.Syncs, t.Billed, t.Bound, t.Ratio, t.CBound, t.CRatio, t.Requests, t.RateLimited, t.Windows, t.PostsBilled, t.UsersBilled, t.USD)
		}
		tw.Flush()
	}
	totals("first syncs (round 0)", func(s *StrategyResult) Totals { return s.First })
	totals(fmt.Sprintf("incremental syncs (rounds 1-%d)", r.Rounds), func(s *StrategyResult) Totals { return s.Incremental })

	fmt.Fprintf(out, "\n(billed: posts of the lists read, each billed as the document has it; X bills: posts, expanded ones included, after X's same-UTC-day de-duplication; users: expanded authors billed; USD: the simulator's bill at X's rates)\n")
	fmt.Fprintf(out, "(waits: rate-limit windows the syncs' requests span beyond the first, sum of ceil(requests / %d) - 1: the %s waits of an account syncing alone)\n",
		w.RateLimit.ListRequestsPerWindow, time.Duration(w.RateLimit.Window))
	for _, s := range r.Strategies {
		if t := s.Incremental; t.SameDay > 0 {
			fmt.Fprintf(out, "%s: %d syncs ran on the UTC day of the user's previous sync and X billed them %d posts; the fewest any planner could be billed for, reading what each walk needed and knowing what X had billed earlier that day, is %d: using the de-duplication could save at most %d posts (%.2f%% of the incremental posts billed)\n",
				s.Name, t.SameDay, t.SameDayBilled, t.SameDayFloor, t.SameDayBilled-t.SameDayFloor, 100*ratio(t.SameDayBilled-t.SameDayFloor, t.PostsBilled))
		}
	}
	fmt.Fprintf(out, "\narchive (lost: current bookmarks not emitted by the end of a sync, distinct (user, post), over the run)\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "strategy\tlost\tlost at end\tduplicates\trows emitted\tfailed walks\trun time\t")
	for _, s := range r.Strategies {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%s\t\n", s.Name, s.Lost, s.LostAtEnd, s.Duplicates, s.Emitted, s.FailedWalks, s.Elapsed.Round(10*time.Millisecond))
	}
	tw.Flush()

	if p := r.Find(StrategyPlanner); p != nil {
		r.writeBreakdown(out, w, p)
	}
}

// group sums the planner's incremental syncs of one kind.
type group struct {
	name string
	Totals
	needed, multiPage, unknownNeeded int
}

func (g *group) add(s *SyncStat) {
	g.Totals.add(s)
	if s.Needed >= 0 {
		g.needed += s.Needed
	} else {
		g.unknownNeeded++
		g.needed += s.Billed
	}
	if s.Requests > 1 {
		g.multiPage++
	}
}

func (r *Result) writeBreakdown(out io.Writer, w *Workload, p *StrategyResult) {
	buckets := make([]group, len(w.NewBookmarksPerRound))
	for i, b := range w.NewBookmarksPerRound {
		buckets[i].name = fmt.Sprintf("new per round %d-%d (share %.2f)", b.Min, b.Max, b.Share)
	}
	var first, later, all group
	first.name = "first incremental sync (round 1)"
	later.name = fmt.Sprintf("later syncs (rounds 2-%d)", r.Rounds)
	all.name = "all incremental syncs"
	sizes := []struct {
		name   string
		lo, hi int
		g      group
	}{
		{name: "bound 0-2", lo: 0, hi: 2}, {name: "bound 3-10", lo: 3, hi: 10}, {name: "bound 11-100", lo: 11, hi: 100},
		{name: "bound 101-1000", lo: 101, hi: 1000}, {name: "bound > 1000", lo: 1001, hi: 1 << 62},
	}
	var worst []SyncStat
	for i := range p.Syncs {
		s := &p.Syncs[i]
		if s.Round == 0 {
			continue
		}
		buckets[s.Bucket].add(s)
		if s.Round == 1 {
			first.add(s)
		} else {
			later.add(s)
		}
		for j := range sizes {
			if s.Bound >= sizes[j].lo && s.Bound <= sizes[j].hi {
				sizes[j].g.add(s)
			}
		}
		all.add(s)
		if s.Billed > s.CBound {
			worst = append(worst, *s)
		}
	}
	fmt.Fprintf(out, "\nplanner, incremental syncs: where the posts above the bounds go\n")
	fmt.Fprintf(out, "(needed = what the walk itself had to read to stop: the posts up to the one that completed the stop rule's run, or the whole list;\n overread = billed - needed, the page-size overshoot; stop rule = needed - c.bound)\n")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "syncs of\tsyncs\tmulti-page\tbound\tc.bound\tneeded\tbilled\toverread\tstop rule\tbilled-c.bound\tratio\tc.ratio\trequests\t")
	row := func(g *group) {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t%d\t\n", g.name, g.Syncs, g.multiPage, g.Bound, g.CBound, g.needed, g.Billed,
			g.Billed-g.needed, g.needed-g.CBound, g.Billed-g.CBound, ratio(g.Billed, g.Bound), ratio(g.Billed, g.CBound), g.Requests)
	}
	for i := range buckets {
		row(&buckets[i])
	}
	for i := range sizes {
		sizes[i].g.name = sizes[i].name
		row(&sizes[i].g)
	}
	row(&first)
	row(&later)
	row(&all)
	tw.Flush()
	if all.unknownNeeded > 0 {
		fmt.Fprintf(out, "(%d walks did not end cleanly; their need is counted as what they were billed)\n", all.unknownNeeded)
	}

	slices.SortStableFunc(worst, func(a, b SyncStat) int { return (b.Billed - b.CBound) - (a.Billed - a.CBound) })
	if len(worst) > 0 {
		fmt.Fprintf(out, "\nlargest excesses over the confirming bound (of %d syncs with any):\n", len(worst))
		for _, s := range worst[:min(8, len(worst))] {
			fmt.Fprintf(out, "  user %s round %2d: list %d, bound %d, c.bound %d, needed %d, billed %d (+%d) in %d requests %s, %s\n",
				UserID(s.User), s.Round, s.Len, s.Bound, s.CBound, s.Needed, s.Billed, s.Billed-s.CBound, s.Requests, pages(s.PageSizes), s.Outcome)
		}
	}
}

// WriteCSV writes one row per sync of every strategy of every result.
func WriteCSV(out io.Writer, results []*Result) error {
	cw := csv.NewWriter(out)
	_ = cw.Write([]string{"workload", "habits", "strategy", "round", "user", "new_bucket", "list_len", "bound", "confirming_bound", "needed", "billed", "requests", "rate_limited", "waits", "windows", "emitted", "outcome", "page_sizes"})
	for _, r := range results {
		for _, s := range r.Strategies {
			for _, x := range s.Syncs {
				sizes := make([]string, len(x.PageSizes))
				for i, n := range x.PageSizes {
					sizes[i] = strconv.Itoa(n)
				}
				_ = cw.Write([]string{r.Workload, string(r.Habits), s.Name, strconv.Itoa(x.Round), UserID(x.User), strconv.Itoa(x.Bucket), strconv.Itoa(x.Len),
					strconv.Itoa(x.Bound), strconv.Itoa(x.CBound), strconv.Itoa(x.Needed), strconv.Itoa(x.Billed), strconv.Itoa(x.Requests),
					strconv.Itoa(x.RateLimited), strconv.Itoa(x.Waits), strconv.Itoa(x.Windows), strconv.Itoa(x.Emitted), x.Outcome, strings.Join(sizes, " ")})
			}
		}
	}
	cw.Flush()
	return cw.Error()
}

// pages prints page sizes compactly: [2 2 2 ×5 4 8 ...].
func pages(sizes []int) string {
	var b strings.Builder
	b.WriteByte('[')
	for i := 0; i < len(sizes); {
		j := i
		for j < len(sizes) && sizes[j] == sizes[i] {
			j++
		}
		if i > 0 {
			b.WriteByte(' ')
		}
		if j-i > 1 {
			fmt.Fprintf(&b, "%d×%d", sizes[i], j-i)
		} else {
			fmt.Fprintf(&b, "%d", sizes[i])
		}
		i = j
	}
	b.WriteByte(']')
	return b.String()
}
