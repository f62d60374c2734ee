package costbench

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/cq-source-x/cq-source-x/billing"
)

// ContentKinds are the spec's content kinds, in the order the USD table
// turns them on.
var ContentKinds = []string{"media", "long_text", "articles", "authors", "referenced_posts"}

// ContentConfig is one content section the USD table prices.
type ContentConfig struct {
	Name    string
	Content map[string]bool
}

// ContentConfigs are every kind off, each kind alone on, the defaults and
// every kind on.
func ContentConfigs() []ContentConfig {
	only := func(on ...string) map[string]bool {
		m := map[string]bool{}
		for _, k := range ContentKinds {
			m[k] = false
		}
		for _, k := range on {
			m[k] = true
		}
		return m
	}
	out := []ContentConfig{{Name: "every kind off", Content: only()}}
	for _, k := range ContentKinds {
		out = append(out, ContentConfig{Name: k + " only", Content: only(k)})
	}
	return append(out,
		ContentConfig{Name: "defaults (media, long_text, articles)", Content: nil},
		ContentConfig{Name: "every kind on", Content: only(ContentKinds...)})
}

// USDRow is what one content section costs on a workload.
type USDRow struct {
	Config ContentConfig `json:"config"`
	// First and Incremental are the planner's syncs, priced as owned reads
	// (the simulator's bill: each user owns the app of their token).
	First, Incremental Totals
}

// USDPerThousand prices totals per 1,000 posts archived: as owned reads
// (the bill) and as ordinary reads (the same posts at the post rate).
func (t Totals) USDPerThousand(postUSD, userUSD float64) (owned, notOwned float64) {
	if t.New == 0 {
		return 0, 0
	}
	k := 1000 / float64(t.New)
	return t.USD * k, (float64(t.PostsBilled)*postUSD + float64(t.UsersBilled)*userUSD) * k
}

// RunUSD runs the planner on the workload once per content section, with
// owned reads, and returns what each costs.
func RunUSD(ctx context.Context, cfg Config, configs []ContentConfig, progress io.Writer) ([]USDRow, error) {
	var rows []USDRow
	for _, c := range configs {
		run := cfg
		run.Strategies, run.Content, run.OwnedReads = []string{StrategyPlanner}, c.Content, true
		res, err := Run(ctx, run)
		if err != nil {
			return nil, fmt.Errorf("content %s: %w", c.Name, err)
		}
		p := res.Find(StrategyPlanner)
		if p.Lost != 0 || p.FailedWalks != 0 {
			return nil, fmt.Errorf("content %s: %d posts lost, %d failed walks", c.Name, p.Lost, p.FailedWalks)
		}
		rows = append(rows, USDRow{Config: c, First: p.First, Incremental: p.Incremental})
		if progress != nil {
			fmt.Fprintf(progress, "content %s: done in %s\n", c.Name, res.Elapsed.Round(1e9))
		}
	}
	return rows, nil
}

// WriteUSDTable prints USD per 1,000 new bookmarks per content section,
// as owned reads and as ordinary reads.
func WriteUSDTable(out io.Writer, w *Workload, habits Habits, rows []USDRow) {
	x := billing.DefaultRates()
	postUSD, userUSD := x.Post, x.User
	fmt.Fprintf(out, "USD per 1,000 bookmarks archived, by content kind: workload %q, habits %s; X's rates: post %v, owned-read post %v, user %v, each resource once per UTC day\n", w.Name, habits, x.Post, x.OwnedPost, x.User)
	fmt.Fprintf(out, "(first = the first sync of every list; incremental = rounds 1-%d; posts and users are what X bills; media are never billed)\n", w.Rounds)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "content\tfirst: archived\tposts\tusers\tUSD/1k\towned\tincremental: archived\tposts\tusers\tmedia\tUSD/1k\towned\t")
	for _, r := range rows {
		fo, fn := r.First.USDPerThousand(postUSD, userUSD)
		iOwned, iNot := r.Incremental.USDPerThousand(postUSD, userUSD)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%.3f\t%.3f\t%d\t%d\t%d\t%d\t%.3f\t%.3f\t\n", r.Config.Name,
			r.First.New, r.First.PostsBilled, r.First.UsersBilled, fn, fo,
			r.Incremental.New, r.Incremental.PostsBilled, r.Incremental.UsersBilled, r.Incremental.Media, iNot, iOwned)
	}
	tw.Flush()
}
