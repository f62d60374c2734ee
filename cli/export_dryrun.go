package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/plural"
)

const recentSyncsShown = 3 // of an account's last syncs, in a dry run

// syncCost is what one sync billed for one account.
type syncCost struct {
	StartedAt    time.Time `json:"sync_started_at"`
	PostsBilled  int64     `json:"posts_billed"`
	EstimatedUSD float64   `json:"estimated_usd"`
}

// estimate prints what an export of src into f.out would bill at most, and
// what the last syncs billed, from the spec, the token files and the
// archive: GET /2/users/me would be a billed user read.
func (f exportFlags) estimate(src *cqspec.Source) error {
	userIDs := make([]string, len(src.Plugin.Accounts))
	for i, a := range src.Plugin.Accounts {
		userIDs[i] = a.UserID
		if userIDs[i] == "" && a.TokenFile != "" {
			if stored, err := (auth.TokenFile{Path: a.TokenFile}).Load(); err == nil {
				userIDs[i] = stored.UserID
			}
		}
	}
	est, err := export.EstimateRun(src, f.out, userIDs)
	if err != nil {
		return err
	}
	all, err := syncs(f.out)
	if err != nil {
		return fmt.Errorf("export --dry-run: reading %s's x_api_usage files: %w", f.out, err)
	}
	costs := map[string][]syncCost{}
	for user, rows := range all {
		for _, sync := range rows[:min(recentSyncsShown, len(rows))] {
			c := syncCost{StartedAt: sync[0].StartedAt}
			for _, r := range sync {
				c.PostsBilled, c.EstimatedUSD = c.PostsBilled+r.PostsBilled, c.EstimatedUSD+r.EstimatedUSD
			}
			costs[user] = append(costs[user], c)
		}
	}
	if f.json {
		return writeIndentedJSON(f.stdout, map[string]any{"estimate": est, "last_syncs": costs})
	}
	writeEstimate(f.stdout, est, costs, src)
	return nil
}

func writeEstimate(w io.Writer, est *export.Estimate, costs map[string][]syncCost, src *cqspec.Source) {
	s := src.Plugin
	for _, a := range est.Accounts {
		writeAccountEstimate(w, est, a, costs[a.UserID])
	}
	fmt.Fprintln(w)
	capped := "planner.max_billed_posts, which is 0 (no cap): set it to bound what a run can bill"
	if est.Bounded {
		capped = fmt.Sprintf("planner.max_billed_posts (%s a walk)", plural.Count(est.PerWalk, "post", "posts"))
		fmt.Fprintf(w, "In all, at most %s and %s, USD %.2f at post_read_usd %v, owned_read_usd %v, user_read_usd %v: the bookmarks lists, "+
			"and the folders the last syncs listed; each other folder (one a first sync lists, or one made since) adds at most %s, USD %.2f.\n",
			plural.Count(est.Posts, "post", "posts"), plural.Count(est.Users, "user", "users"), est.USD, *s.PostReadUSD, *s.OwnedReadUSD, *s.UserReadUSD,
			plural.Count(est.Folder.Posts, "post", "posts"), est.Folder.USD)
	}
	fmt.Fprintf(w, "X does not say how long a list is (it documented the newest 800 posts until May 2026; a user has walked 1,120 since), "+
		"nor how many posts were saved since the last sync: what bounds a walk is %s. A post read twice the same UTC day is billed once.\n", capped)
	if len(est.Unbounded) > 0 {
		fmt.Fprintf(w, "Not bounded here: the users that fields.expansions %s adds.\n", strings.Join(est.Unbounded, ", "))
	}
	fmt.Fprintln(w, "Dry run: nothing was read from X, and nothing was written.")
}

// writeAccountEstimate prints one account's part: what the archive knows
// of its last syncs, and what the run can bill it.
func writeAccountEstimate(w io.Writer, est *export.Estimate, a export.AccountEstimate, costs []syncCost) {
	name := a.Account
	if a.UserID != "" {
		name += " (user " + a.UserID + ")"
	}
	switch {
	case a.UserID == "":
		fmt.Fprintf(w, "%s: user id not known without a request (GET /2/users/me, a user read): bounded as a first sync\n", name)
	case a.First:
		fmt.Fprintf(w, "%s: first sync: the archive holds nothing of it; it reads every list in full\n", name)
	default:
		fmt.Fprintf(w, "%s: incremental: the bookmarks walk holds %s; it reads the posts saved since the last sync, and a few it holds\n", name, plural.Count(a.Held, "post", "posts"))
	}
	if a.Interrupted != nil {
		fmt.Fprintf(w, "  the last run was interrupted after %s of the bookmarks list: it reads them again from the top (not billed again the same UTC day)\n",
			plural.Count(a.Interrupted.Billed, "post", "posts"))
	}
	if len(a.LastBilled) > 0 {
		billed := make([]string, len(a.LastBilled))
		for i, n := range a.LastBilled {
			billed[i] = fmt.Sprint(n)
		}
		fmt.Fprintf(w, "  last bookmarks walks billed (newest first): %s posts\n", strings.Join(billed, ", "))
	}
	for _, c := range costs {
		fmt.Fprintf(w, "  sync of %s billed %s, USD %.3f (x_api_usage)\n", c.StartedAt.Format("2006-01-02 15:04 MST"), plural.Count(int(c.PostsBilled), "post", "posts"), c.EstimatedUSD)
	}
	if !est.Bounded {
		fmt.Fprintln(w, "  no bound: planner.max_billed_posts is 0 (no cap)")
		return
	}
	rate := "post reads"
	if a.Owned {
		rate = "owned reads"
	}
	list := "the bookmarks list"
	if a.UserID == "" {
		list = "GET /2/users/me and the bookmarks list"
	}
	fmt.Fprintf(w, "  %s: at most %s (%s) and %s, USD %.2f\n",
		list, plural.Count(a.Bookmarks.Posts, "post", "posts"), rate, plural.Count(a.Bookmarks.Users, "user", "users"), a.Bookmarks.USD)
	folders := "the run lists them first, at no cost"
	if a.Folders >= 0 {
		folders = fmt.Sprintf("%s at the last sync: %s, USD %.2f", plural.Count(a.Folders, "folder", "folders"),
			plural.Count(a.Folders*a.Folder.Posts, "post", "posts"), float64(a.Folders)*a.Folder.USD)
	}
	fmt.Fprintf(w, "  each folder: at most %s, USD %.2f (%s)\n", plural.Count(a.Folder.Posts, "post", "posts"), a.Folder.USD, folders)
}
