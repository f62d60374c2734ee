package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/plural"
	"github.com/cq-source-x/cq-source-x/sandbox"
	"github.com/mattn/go-isatty"
	"github.com/spf13/cobra"
)

const exportLong = `Sync the accounts of a CloudQuery source spec into Parquet files, with no
other software: the plugin runs in-process (same tables, walks and state as a
CloudQuery sync) and each run adds one file per table under DIR/<table>/,
named so that name order is time order. The incremental state lives in
DIR/.state; a run that is interrupted (even by kill -9) loses nothing and
duplicates nothing: run the same command again. See docs/export.md.

FILE is the spec file you use with 'cloudquery sync' (kind: source; other
documents are ignored). ${ENV_VAR}, ${file:PATH} and ${time:...} are
expanded as the CloudQuery CLI does; tables and skip_tables select tables.

--compression picks the files' Parquet codec: snappy (the default, as
pyarrow, DuckDB and Spark write), zstd (files about a third smaller, about
1.5 times the encoding time), gzip, lz4_raw or none. Files of different
codecs mix freely in one directory.

--sandbox runs a demo against the built-in X API simulator: no credentials,
no cost. It exports, changes the demo bookmarks, exports again and shows that
the second run billed only what was new. DIR keeps the files.

` + exitCodesHelp

// exportGCPercent is the exporter's GOGC, unless GOGC or GOMEMLIMIT is
// set: why 50 and not a soft limit is in docs/benchmarks.md.
const exportGCPercent = 50

type exportFlags struct {
	*app
	spec, out, compression       string
	json, quiet, sandbox, dryRun bool
}

func (a *app) exportCommand() *cobra.Command {
	f := exportFlags{app: a}
	cmd := &cobra.Command{
		Use:   "export --spec FILE --out DIR",
		Short: "Sync a spec's accounts into Parquet files",
		Long:  exportLong,
		Example: "  " + Name + " export --spec x.yml --out ./archive\n" +
			"  " + Name + " export --spec x.yml --out ./archive --compression zstd --quiet\n" +
			"  " + Name + " export --sandbox --out ./demo",
		GroupID: groupArchive,
		RunE:    func(cmd *cobra.Command, _ []string) error { return f.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.spec, "spec", "", "CloudQuery spec file with the plugin's source spec")
	fs.StringVar(&f.out, "out", "", "output directory: Parquet files per table, and the incremental state")
	compressionFlag(cmd, &f.compression, "Parquet compression: snappy, zstd, gzip, lz4_raw or none")
	fs.BoolVar(&f.json, "json", false, "print the summary as JSON on stdout")
	fs.BoolVar(&f.quiet, "quiet", false, "print only errors, and rate-limit waits of a minute or more (one line each)")
	fs.BoolVar(&f.sandbox, "sandbox", false, "run the demo against the built-in simulator (no --spec)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "say what the run would bill at most, and what the last syncs billed; read nothing from X")
	_ = cmd.MarkFlagFilename("spec", "yml", "yaml")
	_ = cmd.MarkFlagDirname("out")
	return cmd
}

// compressionFlag is the --compression flag of export and compact.
func compressionFlag(cmd *cobra.Command, codec *string, usage string) {
	cmd.Flags().StringVar(codec, "compression", pqfile.DefaultCodec, usage)
	_ = cmd.RegisterFlagCompletionFunc("compression", cobra.FixedCompletions(slices.Sorted(maps.Keys(pqfile.Codecs)), cobra.ShellCompDirectiveNoFileComp))
}

func (f exportFlags) run(ctx context.Context) error {
	switch {
	case f.out == "":
		return usageError(errors.New("export: --out DIR is required"))
	case f.sandbox && f.spec != "":
		return usageError(errors.New("export: --sandbox brings its own spec; drop --spec"))
	case !f.sandbox && f.spec == "":
		return usageError(errors.New("export: --spec FILE is required (or --sandbox for the demo)"))
	case f.sandbox && f.dryRun:
		return usageError(errors.New("export: --dry-run needs --spec: the sandbox's demo costs nothing"))
	}
	if _, err := pqfile.ParseCodec(f.compression); err != nil {
		return usageErrorf("export: --compression: %w", err)
	}
	if err := checkOut(f.out); err != nil {
		return err
	}
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(exportGCPercent)
	}
	if f.sandbox {
		return exportSandbox(ctx, f)
	}
	src, err := cqspec.Read(f.spec)
	if err != nil {
		return usageError(err)
	}
	if f.dryRun {
		return f.estimate(src)
	}
	sum, err := f.exportOnce(ctx, src)
	if err != nil {
		return interrupted(ctx, err)
	}
	if f.json {
		if err := sum.WriteJSON(f.stdout); err != nil {
			return err
		}
	}
	return f.outcomeError(sum)
}

// outcomeError is the error a run ends with: an interruption says what was
// kept and what the next run reads (and what failed besides); otherwise
// the failures, if any.
func (f exportFlags) outcomeError(sum *export.Summary) error {
	failures := f.failuresError(sum)
	if !sum.Interrupted {
		return failures
	}
	err := errors.New(sum.InterruptedLine())
	if failures != nil {
		err = fmt.Errorf("%w Besides: %w", err, failures)
	}
	return &exitError{code: ExitInterrupted, err: err}
}

// checkOut refuses an --out that holds what no export writes there (a
// home directory, a project's): the archive would mix with it.
func checkOut(out string) error {
	foreign, err := archive.ForeignEntries(out, export.TableNames())
	if err != nil {
		return fmt.Errorf("export: --out %s: %w", out, err)
	}
	if len(foreign) == 0 {
		return nil
	}
	return usageErrorf("export: --out %s holds what cq-source-x did not write (%s): give a new or empty directory, or one an export wrote", out, plural.Some(foreign, 1))
}

// exportOnce runs one export of src and prints its summary, unless --quiet.
func (f exportFlags) exportOnce(ctx context.Context, src *cqspec.Source) (*export.Summary, error) {
	// With --quiet, progress prints only the rate-limit waits of a minute
	// or more: a run that says nothing for 15 minutes looks hung.
	o := export.Options{Spec: src, Out: f.out, Quiet: f.quiet, Compression: f.compression, Step: f.step, Progress: f.stderr}
	file, ok := f.stderr.(*os.File)
	o.Terminal = ok && !f.quiet && isatty.IsTerminal(file.Fd())
	res, err := export.Run(ctx, o)
	if err != nil {
		return nil, err
	}
	sum := res.Summary()
	if !f.quiet {
		sum.WriteText(f.stderr)
	}
	return sum, nil
}

// failuresError names what failed, with the exit code: all failed only
// when no account got anything done. It points at the summary printed
// above, or, with --quiet, says what it would have.
func (f exportFlags) failuresError(sum *export.Summary) error {
	var what, accounts, lines, after []string // after: what the failures mean for the next run
	if failed := sum.Failed(); len(failed) > 0 {
		what = append(what, plural.Count(len(failed), "account", "accounts")+" failed")
		for _, a := range failed {
			name := a.Account
			if a.InPart() && len(a.FailedTables) > 0 {
				name += " (" + strings.Join(a.FailedTables, ", ") + ")"
			}
			accounts = append(accounts, name)
		}
		lines = append(lines, sum.FailureLines()...)
		after = append(after, "the failed walks did not advance")
	}
	if c := sum.Compliance; c != nil && !c.OK {
		what = append(what, "the compliance check failed")
		lines = append(lines, c.Failure())
		after = append(after, "the compliance check is retried at the next run")
	}
	if n := len(sum.Damaged); n > 0 {
		what = append(what, plural.Count(n, "file of the archive is", "files of the archive are")+" damaged")
		for _, d := range sum.Damaged {
			lines = append(lines, "DAMAGED "+d.Describe(sum.Out))
		}
		after = append(after, "run `"+archive.RepairCommand(sum.Out)+"`")
	}
	if len(what) == 0 {
		return nil
	}
	tail := "the files of this run were written; " + strings.Join(after, "; ")
	see := "see FAILED above"
	if len(sum.Damaged) > 0 {
		see = "see DAMAGED above"
		if len(what) > 1 {
			see = "see FAILED and DAMAGED above"
		}
	}
	if n := len(accounts); n > 0 {
		see = plural.Some(accounts, 4) + ": " + see
	}
	err := fmt.Errorf("%s (%s); %s", strings.Join(what, " and "), see, tail)
	if f.quiet {
		for i, l := range lines {
			lines[i] = strings.ReplaceAll(strings.TrimPrefix(l, "FAILED "), "\n", "\n  ")
		}
		err = fmt.Errorf("%s; %s:\n  %s", strings.Join(what, " and "), tail, strings.Join(lines, "\n  "))
	}
	code := ExitSomeAccountsFailed
	if sum.NothingDone() {
		code = ExitAllAccountsFailed
	}
	return &exitError{code: code, err: err}
}

// exportSandbox runs the demo: export, change the lists, export again.
func exportSandbox(ctx context.Context, f exportFlags) error {
	if _, err := os.Stat(filepath.Join(f.out, ".state")); err == nil {
		return usageErrorf("export --sandbox: %s already holds an export; the demo needs a new directory", f.out)
	}
	sb, src, err := startSandbox()
	if err != nil {
		return err
	}
	defer sb.Close()
	say := func(format string, a ...any) {
		if !f.quiet {
			fmt.Fprintf(f.stderr, format, a...)
		}
	}
	say("Sandbox: a simulated X API at %s with %d demo accounts (no credentials, no cost).\n\n", sb.URL(), len(sb.Accounts))
	say("== Run 1: nothing archived yet, every bookmark and folder entry is read ==\n")
	sum1, err := f.exportOnce(ctx, src)
	if err != nil {
		return err
	}
	changes := sb.Mutate()
	files, err := sandbox.StoredFiles(sum1.Out)
	if err != nil {
		return err
	}
	var deletedFiles []string // the media files of the post its author deletes
	for key, rows := range files {
		if slices.Contains(rows, [2]string{"1001", changes.Deleted}) {
			deletedFiles = append(deletedFiles, key)
		}
	}
	say("\n== Meanwhile, the users change their bookmarks ==\n")
	for _, l := range changes.Lines {
		say("  - %s\n", l)
	}
	say("\n== Run 2: only what changed ==\n")
	sum2, err := f.exportOnce(ctx, src)
	if err != nil {
		return err
	}
	cmp := sandboxComparison{
		BilledPosts: sum2.Totals.PostsBilled, BookmarkReads: sum2.ReadFor(client.OpListBookmarks), NewBookmarks: changes.NewBookmarks,
		FolderReads: sum2.ReadFor(client.OpGetFolder), FolderAdditions: changes.FolderAdds, FullReadPosts: sb.FullReadPosts(),
		FirstRunBilled: sum1.Totals.PostsBilled, BookmarksWritten: sum2.Totals.BookmarksWritten,
	}
	say("\nRun 2 read %d bookmarked posts for %d new bookmarks (each walk also reads where it stops and one confirmation, "+
		"plus alice's re-bookmarked post) and %d folder entries for %d folder additions; X bills %d posts for them "+
		"(a post read again on the same UTC day is billed once), where reading everything again would bill %d (run 1 billed %d).\n",
		cmp.BookmarkReads, cmp.NewBookmarks, cmp.FolderReads, cmp.FolderAdditions, cmp.BilledPosts, cmp.FullReadPosts, cmp.FirstRunBilled)
	out := sum2.Out
	findings, err := checkSandboxCompliance(out, changes.Deleted, deletedFiles)
	if err != nil {
		return err
	}
	say("\nThe free compliance jobs checked every archived post and its author's account, and reported alice's deleted bookmark %s (reason \"deleted\") in x_post_compliance; "+
		"as X's Developer Policy asks, its content is gone from the archive (compliance.on_change: redact): its x_bookmarks row keeps its key and dates, "+
		"its rows of the content tables and its media files no other post uses (it had %d) are removed.\n", changes.Deleted, len(deletedFiles))
	say("\nThe files are in %s. For example, with DuckDB:\n  duckdb -c \"SELECT user_id, post_id, created_at, text FROM '%s/x_bookmarks/*.parquet' ORDER BY first_seen_at DESC LIMIT 5\"\n", out, out)
	say("  duckdb -c \"SELECT b.user_id, b.post_id, b.created_at, b.first_seen_at, c.reason, c.redacted_at FROM '%s/x_bookmarks/*.parquet' b JOIN '%s/x_post_compliance/*.parquet' c USING (user_id, post_id)\"\n", out, out)
	if f.json {
		if err := writeIndentedJSON(f.stdout, map[string]any{"run1": sum1, "changes": changes.Lines, "run2": sum2, "comparison": cmp, "compliance": findings}); err != nil {
			return err
		}
	}
	if err := f.outcomeError(sum1); err != nil {
		return err
	}
	return f.outcomeError(sum2)
}

// startSandbox starts the simulator and parses the spec it gives.
func startSandbox() (*sandbox.Sandbox, *cqspec.Source, error) {
	sb, err := sandbox.Start(sandbox.Options{})
	if err != nil {
		return nil, nil, err
	}
	exe, err := os.Executable()
	if err != nil {
		exe = "./cq-source-x"
	}
	src, err := cqspec.Parse([]byte(sb.Spec(exe, true)), "sandbox spec", os.LookupEnv, time.Now())
	if err != nil {
		sb.Close()
		return nil, nil, fmt.Errorf("the sandbox spec: %w", err)
	}
	return sb, src, nil
}

// checkSandboxCompliance checks that the compliance job reported the
// deleted post, and that its content and media files left the archive.
func checkSandboxCompliance(out, deleted string, deletedFiles []string) ([]sandbox.Finding, error) {
	findings, err := sandbox.ReadFindings(out)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(findings, func(fd sandbox.Finding) bool { return fd.PostID == deleted && fd.Reason == "deleted" }) {
		return nil, fmt.Errorf("export --sandbox: the compliance job did not report the deleted post %s (x_post_compliance: %v)", deleted, findings)
	}
	if err := sandbox.CheckRedacted(out, "1001", deleted); err != nil {
		return nil, fmt.Errorf("export --sandbox: the deleted post %s was not redacted: %w", deleted, err)
	}
	if len(deletedFiles) == 0 {
		return nil, fmt.Errorf("export --sandbox: the deleted post %s had no media file stored by run 1", deleted)
	}
	if err := sandbox.CheckFilesRemoved(out, deletedFiles); err != nil {
		return nil, fmt.Errorf("export --sandbox: the media of the deleted post %s: %w", deleted, err)
	}
	return findings, nil
}

func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// sandboxComparison is what the demo's second run read and billed, beside
// the changes and what reading everything again would bill.
type sandboxComparison struct {
	BilledPosts      int `json:"billed_posts"`
	BookmarkReads    int `json:"bookmark_reads"`
	NewBookmarks     int `json:"new_bookmarks"`
	FolderReads      int `json:"folder_reads"`
	FolderAdditions  int `json:"folder_additions"`
	FullReadPosts    int `json:"full_read_posts"`
	FirstRunBilled   int `json:"first_run_billed"`
	BookmarksWritten int `json:"bookmarks_written"`
}
