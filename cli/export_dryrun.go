package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/plural"
)

// recentSyncsShown is how many of an account's last syncs a dry run shows.
const recentSyncsShown = 3

// estimate prints what an export of src into f.out would bill at most, and
// what the last syncs billed: from the spec, the token files and the
// archive, with no request (GET /2/users/me is a user read, and the
// bookmarks are what X bills).
func (f exportFlags) estimate(ctx context.Context, src *cqspec.Source) error {
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
	costs, err := recentCosts(ctx, f.out, recentSyncsShown)
	if err != nil {
		return fmt.Errorf("export --dry-run: reading %s's x_api_usage files: %w", f.out, err)
	}
	if f.json {
		return writeIndentedJSON(f.stdout, map[string]any{"estimate": est, "last_syncs": costs})
	}
	writeEstimate(f.stdout, est, costs, src)
	return nil
}

// writeEstimate prints the estimate for a person.
func writeEstimate(w io.Writer, est *export.Estimate, costs map[string][]syncCost, src *cqspec.Source) {
	s := src.Plugin
	for _, a := range est.Accounts {
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
			fmt.Fprintf(w, "%s: incremental: the bookmarks walk holds %s\n", name, plural.Count(a.Held, "post", "posts"))
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
		for _, c := range costs[a.UserID] {
			fmt.Fprintf(w, "  sync of %s billed %s, USD %.3f (x_api_usage)\n", c.StartedAt.Format("2006-01-02 15:04 MST"), plural.Count(int(c.PostsBilled), "post", "posts"), c.EstimatedUSD)
		}
		lists := fmt.Sprintf("the newest %d posts of the bookmarks list, and up to %d more for each folder (the run lists them first, at no cost)", export.ServedPosts, export.ServedPosts)
		switch a.Folders {
		case -1:
		case 0:
			lists = fmt.Sprintf("the newest %d posts of the bookmarks list (it has no folder)", export.ServedPosts)
		case 1:
			lists = fmt.Sprintf("the newest %d posts of the bookmarks list and of its folder", export.ServedPosts)
		default:
			lists = fmt.Sprintf("the newest %d posts of the bookmarks list and of each of its %d folders", export.ServedPosts, a.Folders)
		}
		rate := "post reads"
		if a.Owned {
			rate = "owned reads"
		}
		fmt.Fprintf(w, "  at most %s (%s) and %s, USD %.2f: %s\n",
			plural.Count(a.MaxPosts, "post", "posts"), rate, plural.Count(a.MaxUsers, "user", "users"), a.MaxUSD, lists)
	}
	fmt.Fprintf(w, "\nIn all, at most %s and %s: USD %.2f at post_read_usd %v, owned_read_usd %v, user_read_usd %v.\n",
		plural.Count(est.MaxPosts, "post", "posts"), plural.Count(est.MaxUsers, "user", "users"), est.MaxUSD, *s.PostReadUSD, *s.OwnedReadUSD, *s.UserReadUSD)
	fmt.Fprintf(w, "The bounds count what X serves of a list, its newest %d posts, with the referenced posts and users the spec's content kinds expand; "+
		"a post read twice the same UTC day is billed once. Should X serve a list further, a walk stops at planner.max_billed_posts (%d).\n",
		export.ServedPosts, est.PostsCap)
	if len(est.Unbounded) > 0 {
		fmt.Fprintf(w, "Not bounded here: the users that fields.expansions %s adds.\n", strings.Join(est.Unbounded, ", "))
	}
	fmt.Fprintln(w, "Dry run: nothing was read from X, and nothing was written.")
}
