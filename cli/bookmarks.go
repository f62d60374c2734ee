package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/bookmarks"
	"github.com/cq-source-x/cq-source-x/internal/plural"
	"github.com/spf13/cobra"
)

func (a *app) bookmarksCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:     "bookmarks",
		Short:   "Remove archived bookmarks from X, or add posts to an account's bookmarks",
		GroupID: groupArchive,
		Long: `Change an account's bookmarks on X from an export's archive (--spec and --out,
as for export):

  remove  removes bookmarks the archive holds, with all their fields
  add     saves posts from another archive or a list of ids

Both print what they would do and what it costs, and do it only with --yes.
Both need the bookmark.write scope: ` + Name + ` login --scopes ` + auth.ScopeBookmarkWrite + `.
X allows 50 of each per 15 minutes per user: they wait out the windows, and a
run that is stopped (even by kill -9) resumes where it stopped when run
again. Each change X confirms is recorded in the archive, in
x_bookmark_changes. See docs/cli.md.`,
	}
	cmd.AddCommand(a.bookmarksRemoveCommand(), a.bookmarksAddCommand())
	return cmd
}

const bookmarksRemoveLong = `Remove from X bookmarks that the archive holds. X's bookmarks list has long
returned only the most recent bookmarks (800, as X documented until 2026):
removing archived ones is the one known way to reach the older ones. The
archive keeps every row; the removals are recorded in x_bookmark_changes.

Select the bookmarks with one or more of (a post must match them all):
  --archived-before DATE  archived by an export before DATE (2006-01-02 or RFC 3339)
  --folder ID             in the bookmark folder ID
  --ids FILE              listed in FILE, one post id a line ('-' reads stdin)

A post is removed only if the archive holds it with all its fields: a row of
x_bookmarks whose post JSON has the post fields the spec asks for that X
returns for every post (and the author, when content.authors is on). Posts no longer in the list, as the last export saw
it, and posts removed already are skipped. The oldest are removed first.

Without --yes it only prints what it would remove and what it costs: X
bills each request (bookmark_write_usd), and a run stops at
max_billed_writes requests an account; at 50 per 15 minutes per user,
1,000 removals take about 5 hours.
With --yes it removes them, shows progress, waits out the windows, and
records each removal, and what it cost in x_api_usage. The walk memory of
the account forgets the removed posts, so the next export bills what it
would have without them.`

const bookmarksAddLong = `Save posts as bookmarks of one account: the bookmarks of another account's
archive (moving to a new account), or posts listed in a file (restoring
after a mistaken removal). Posts the account's bookmarks hold already, as
the last export saw them, are skipped. They are added oldest first, so the
list ends in their order.

  --from DIR [--from-user ID]  the bookmarks archived in DIR (an export's
                               output directory) of its account ID
  --ids FILE                   the posts listed in FILE, one id a line, newest
                               first ('-' reads stdin)

Without --yes it only prints what it would add and what it costs: X bills
each request (bookmark_write_usd), and a run stops at max_billed_writes
requests an account; at 50 per 15 minutes per user, 1,000 additions take
about 5 hours; the next export reads each added post, as a new bookmark,
and X bills it. With --yes it adds them, shows progress, waits out the
windows, and records each addition in x_bookmark_changes, and what it cost
in x_api_usage.`

func (a *app) bookmarksRemoveCommand() *cobra.Command {
	o := bookmarks.Options{Kind: bookmarks.OpRemove, Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr, Step: a.step}
	var before string
	cmd := &cobra.Command{
		Use:   "remove --spec FILE --out DIR (--archived-before DATE | --folder ID | --ids FILE) [--yes]",
		Short: "Remove archived bookmarks from X (a dry run without --yes)",
		Long:  bookmarksRemoveLong,
		Example: "  " + Name + " bookmarks remove --spec x.yml --out ./archive --archived-before 2026-01-01\n" +
			"  " + Name + " bookmarks remove --spec x.yml --out ./archive --archived-before 2026-01-01 --yes\n" +
			"  " + Name + " bookmarks remove --spec x.yml --out ./archive --folder 1146654567674912769 --user 2244994945",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if before != "" {
				var err error
				if o.ArchivedBefore, err = parseDate(before); err != nil {
					return usageErrorf("bookmarks remove: --archived-before: %w", err)
				}
			}
			if o.ArchivedBefore.IsZero() && o.Folder == "" && o.IDsFile == "" {
				return usageErrorf("bookmarks remove: select the bookmarks with --archived-before DATE, --folder ID or --ids FILE")
			}
			o.Command = "bookmarks remove" + flagsText(cmd, "archived-before", "folder", "ids", "user")
			return interrupted(cmd.Context(), runBookmarks(cmd.Context(), o))
		},
	}
	fs := cmd.Flags()
	bookmarksFlags(cmd, &o)
	fs.StringVar(&before, "archived-before", "", "select bookmarks archived before DATE (2006-01-02 or RFC 3339)")
	fs.StringVar(&o.Folder, "folder", "", "select the bookmarks in the folder with this id")
	fs.StringVar(&o.IDsFile, "ids", "", "select the posts listed in FILE, one id a line ('-': stdin)")
	return cmd
}

func (a *app) bookmarksAddCommand() *cobra.Command {
	o := bookmarks.Options{Kind: bookmarks.OpAdd, Stdin: a.stdin, Stdout: a.stdout, Stderr: a.stderr, Step: a.step}
	cmd := &cobra.Command{
		Use:   "add --spec FILE --out DIR (--from DIR [--from-user ID] | --ids FILE) [--user ID] [--yes]",
		Short: "Save posts from an archive or a list as an account's bookmarks (a dry run without --yes)",
		Long:  bookmarksAddLong,
		Example: "  " + Name + " bookmarks add --spec new.yml --out ./new-archive --from ./old-archive\n" +
			"  " + Name + " bookmarks add --spec x.yml --out ./archive --ids removed.txt --yes",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if (o.From == "") == (o.IDsFile == "") {
				return usageErrorf("bookmarks add: give the posts with --from DIR (an archive) or --ids FILE, one of them")
			}
			if o.FromUser != "" && o.From == "" {
				return usageErrorf("bookmarks add: --from-user goes with --from DIR")
			}
			o.Command = "bookmarks add" + flagsText(cmd, "from", "from-user", "ids", "user")
			return interrupted(cmd.Context(), runBookmarks(cmd.Context(), o))
		},
	}
	fs := cmd.Flags()
	bookmarksFlags(cmd, &o)
	fs.StringVar(&o.From, "from", "", "an export's output directory whose archived bookmarks to add")
	fs.StringVar(&o.FromUser, "from-user", "", "the account of --from whose bookmarks to add (needed when it holds several)")
	fs.StringVar(&o.IDsFile, "ids", "", "add the posts listed in FILE, one id a line, newest first ('-': stdin)")
	_ = cmd.MarkFlagDirname("from")
	return cmd
}

// bookmarksFlags are the flags remove and add share.
func bookmarksFlags(cmd *cobra.Command, o *bookmarks.Options) {
	fs := cmd.Flags()
	fs.StringVar(&o.Spec, "spec", "", "CloudQuery spec file with the accounts (as for export)")
	fs.StringVar(&o.Out, "out", "", "the export's output directory: the archive")
	fs.StringSliceVar(&o.Users, "user", nil, "only the account of this X user id (comma-separated or repeated; default: every account of the spec)")
	fs.BoolVar(&o.Yes, "yes", false, "do it (without it: a dry run that prints what it would do and what it costs)")
	_ = cmd.MarkFlagRequired("spec")
	_ = cmd.MarkFlagRequired("out")
	_ = cmd.MarkFlagFilename("spec", "yml", "yaml")
	_ = cmd.MarkFlagDirname("out")
	_ = cmd.MarkFlagFilename("ids")
}

// runBookmarks runs `bookmarks remove` or `bookmarks add`: it prints the
// plan, and without --yes stops there.
func runBookmarks(ctx context.Context, o bookmarks.Options) error {
	op, err := bookmarks.Prepare(ctx, o)
	if ue := (*bookmarks.UsageError)(nil); errors.As(err, &ue) {
		return usageError(err)
	}
	if err != nil {
		return err
	}
	op.WritePlan()
	cmd := "bookmarks " + o.Kind
	verb := o.Verb()
	problems, accounts := op.Problems(), plural.Count(op.Accounts(), "account", "accounts")
	if !o.Yes {
		fmt.Fprintf(o.Stdout, "\nDry run: nothing was %s. Run the same command with --yes to %s them.\n", verb.Done, verb.Doing)
		if problems > 0 {
			return accountsError(problems, op.Accounts(), fmt.Errorf("%s: %d of %s cannot take part (see PROBLEM above)", cmd, problems, accounts))
		}
		return nil
	}
	if err := op.CheckScopes(); err != nil {
		return usageError(err)
	}
	if n := op.Do(ctx) + problems; n > 0 {
		return accountsError(n, op.Accounts(), fmt.Errorf("%s: %d of %s did not finish (see above); run the same command again to resume", cmd, n, accounts))
	}
	return nil
}

// flagsText is the named flags that were set, as a command line.
func flagsText(cmd *cobra.Command, names ...string) string {
	var b strings.Builder
	for _, n := range names {
		if f := cmd.Flags().Lookup(n); f != nil && f.Changed {
			v := f.Value.String()
			if sv, ok := f.Value.(interface{ GetSlice() []string }); ok {
				v = strings.Join(sv.GetSlice(), ",")
			}
			fmt.Fprintf(&b, " --%s %s", n, strings.ToValidUTF8(v, "\uFFFD")) // x_bookmark_changes.command
		}
	}
	return b.String()
}

// parseDate reads a date (2006-01-02, UTC midnight) or an RFC 3339 time.
func parseDate(s string) (time.Time, error) {
	if t, err := time.Parse("2006-01-02", s); err == nil {
		return t, nil
	}
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("%q is not a date (2006-01-02) or a time (2006-01-02T15:04:05Z)", s)
	}
	return t, nil
}
