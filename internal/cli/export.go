package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/export/pqfile"
	"github.com/cq-source-x/cq-source-x/export/sandbox"
	"github.com/mattn/go-isatty"
)

const exportUsage = `Usage:
  cq-source-x export --spec FILE --out DIR [--compression CODEC] [--json] [--quiet]
  cq-source-x export --sandbox --out DIR [--compression CODEC] [--json] [--quiet]

Sync the accounts of a CloudQuery source spec into Parquet files, with no
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

Flags:
`

// exportGCPercent is the heap growth the exporter allows between
// collections (GOGC; Go's default is 100). Its live data is a few pages, a
// Parquet row group, and what it holds per post: the walk memories and the
// written ids of every account, about 30 bytes a post. At 50 the heap stays
// within one and a half times that, a million-post export under 200 MB of
// RSS. (A fixed soft limit did as well for one account, but once thousands
// of accounts' live data outgrew it the collector ran without pause and
// took half the CPU.) GOGC or GOMEMLIMIT, when set, win.
const exportGCPercent = 50

func limitMemory() {
	if os.Getenv("GOGC") == "" && os.Getenv("GOMEMLIMIT") == "" {
		debug.SetGCPercent(exportGCPercent)
	}
}

// exportFlags are the flags of `cq-source-x export`.
type exportFlags struct {
	spec, out      string
	compression    string
	json, quiet    bool
	sandbox        bool
	stdout, stderr io.Writer
}

func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	fs.SetOutput(stderr)
	f := exportFlags{stdout: stdout, stderr: stderr}
	fs.StringVar(&f.spec, "spec", "", "CloudQuery spec file with the plugin's source spec")
	fs.StringVar(&f.out, "out", "", "output directory: Parquet files per table, and the incremental state")
	fs.StringVar(&f.compression, "compression", pqfile.DefaultCodec, "Parquet compression: snappy, zstd, gzip, lz4_raw or none")
	fs.BoolVar(&f.json, "json", false, "print the summary as JSON on stdout")
	fs.BoolVar(&f.quiet, "quiet", false, "print only errors")
	fs.BoolVar(&f.sandbox, "sandbox", false, "run the demo against the built-in simulator (no --spec)")
	fs.Usage = func() {
		fmt.Fprint(stderr, exportUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("export: unexpected argument %q", fs.Arg(0))
	case f.out == "":
		return errors.New("export: --out DIR is required")
	case f.sandbox && f.spec != "":
		return errors.New("export: --sandbox brings its own spec; drop --spec")
	case !f.sandbox && f.spec == "":
		return errors.New("export: --spec FILE is required (or --sandbox for the demo)")
	}
	if _, err := pqfile.ParseCodec(f.compression); err != nil {
		return fmt.Errorf("export: --compression: %w", err)
	}
	limitMemory()
	if f.sandbox {
		return exportSandbox(ctx, f)
	}
	src, err := export.ReadSpecFile(f.spec)
	if err != nil {
		return err
	}
	res, err := export.Run(ctx, f.options(src, f.out))
	if err != nil {
		return err
	}
	sum := res.Summary()
	if err := f.report(sum); err != nil {
		return err
	}
	return accountsError(res)
}

func (f exportFlags) options(src *export.SourceSpec, out string) export.Options {
	o := export.Options{Spec: src, Out: out, Quiet: f.quiet, Compression: f.compression, Step: stepHookFromEnv()}
	if !f.quiet {
		o.Progress = f.stderr
		if file, ok := f.stderr.(*os.File); ok && isatty.IsTerminal(file.Fd()) {
			o.Terminal = true
		}
	}
	return o
}

// report prints a run's summary: the table on stderr (unless --quiet), the
// JSON on stdout with --json.
func (f exportFlags) report(sum *export.Summary) error {
	if !f.quiet {
		sum.WriteText(f.stderr)
	}
	if f.json {
		return sum.WriteJSON(f.stdout)
	}
	return nil
}

// accountsError names the accounts that failed; the run committed the
// others.
func accountsError(res *export.Result) error {
	failed := res.Failed()
	if len(failed) == 0 {
		return nil
	}
	msgs := make([]string, len(failed))
	for i, e := range failed {
		msgs[i] = strings.ReplaceAll(e.Error(), "\n", "; ")
	}
	what := "1 account failed"
	if len(failed) > 1 {
		what = strconv.Itoa(len(failed)) + " accounts failed"
	}
	return fmt.Errorf("%s (the files of this run were written; the failed walks did not advance and the next run retries them):\n  %s", what, strings.Join(msgs, "\n  "))
}

// exportSandbox runs the demo: export, change the lists, export again.
func exportSandbox(ctx context.Context, f exportFlags) error {
	if _, err := os.Stat(filepath.Join(f.out, ".state")); err == nil {
		return fmt.Errorf("export --sandbox: %s already holds an export; the demo needs a new directory", f.out)
	}
	sb, err := sandbox.Start(sandbox.Options{})
	if err != nil {
		return err
	}
	defer sb.Close()
	exe, err := os.Executable()
	if err != nil {
		exe = "./cq-source-x"
	}
	src, err := export.ParseSpec([]byte(sb.Spec(exe)), "sandbox spec", os.LookupEnv, time.Now())
	if err != nil {
		return fmt.Errorf("the sandbox spec: %w", err)
	}
	say := func(format string, a ...any) {
		if !f.quiet {
			fmt.Fprintf(f.stderr, format, a...)
		}
	}
	say("Sandbox: a simulated X API at %s with %d demo accounts (no credentials, no cost).\n\n", sb.URL(), len(sb.Accounts))

	run := func() (*export.Result, *export.Summary, error) {
		res, err := export.Run(ctx, f.options(src, f.out))
		if err != nil {
			return nil, nil, err
		}
		sum := res.Summary()
		if !f.quiet {
			sum.WriteText(f.stderr)
		}
		return res, sum, nil
	}

	say("== Run 1: nothing archived yet, every bookmark and folder entry is read ==\n")
	res1, sum1, err := run()
	if err != nil {
		return err
	}

	changes := sb.Mutate()
	say("\n== Meanwhile, the users change their bookmarks ==\n")
	for _, l := range changes.Lines {
		say("  - %s\n", l)
	}

	say("\n== Run 2: only what changed ==\n")
	res2, sum2, err := run()
	if err != nil {
		return err
	}
	cmp := sandboxComparison{
		BilledPosts:      sum2.Totals.PostsBilled,
		BookmarkReads:    sum2.BilledFor(client.OpListBookmarks),
		NewBookmarks:     changes.NewBookmarks,
		FolderReads:      sum2.BilledFor(client.OpGetFolder),
		FolderAdditions:  changes.FolderAdds,
		FullReadPosts:    sb.FullReadPosts(),
		FirstRunBilled:   sum1.Totals.PostsBilled,
		BookmarksWritten: sum2.Totals.BookmarksWritten,
	}
	say("\nRun 2 billed %d bookmark reads for %d new bookmarks (each walk also reads where it stops and one confirmation, "+
		"plus alice's re-bookmarked post) and %d folder reads for %d folder additions: %d posts, where reading everything "+
		"again would bill %d (run 1 billed %d).\n",
		cmp.BookmarkReads, cmp.NewBookmarks, cmp.FolderReads, cmp.FolderAdditions, cmp.BilledPosts, cmp.FullReadPosts, cmp.FirstRunBilled)
	say("\nThe files are in %s. For example, with DuckDB:\n  duckdb -c \"SELECT user_id, post_id, created_at, text FROM '%s/x_bookmarks/*.parquet' ORDER BY first_seen_at DESC LIMIT 5\"\n",
		res2.Out, res2.Out)
	if f.json {
		enc := json.NewEncoder(f.stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"run1": sum1, "changes": changes.Lines, "run2": sum2, "comparison": cmp}); err != nil {
			return err
		}
	}
	if err := accountsError(res1); err != nil {
		return err
	}
	return accountsError(res2)
}

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

// Crash points for the kill tests (test-only; see export/crash_test.go):
// CQ_SOURCE_X_EXPORT_TRACE=FILE appends the name of each step reached to
// FILE; CQ_SOURCE_X_EXPORT_KILL_AT=N kills the process (SIGKILL on Unix)
// at the N-th step.
const (
	envTrace  = "CQ_SOURCE_X_EXPORT_TRACE"
	envKillAt = "CQ_SOURCE_X_EXPORT_KILL_AT"
)

func stepHookFromEnv() func(string) {
	trace, killAt := os.Getenv(envTrace), os.Getenv(envKillAt)
	if trace == "" && killAt == "" {
		return nil
	}
	n, _ := strconv.Atoi(killAt)
	step := 0
	return func(name string) {
		step++
		if trace != "" {
			if f, err := os.OpenFile(trace, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644); err == nil {
				fmt.Fprintf(f, "%d %s\n", step, name)
				f.Close()
			}
		}
		if step == n {
			p, _ := os.FindProcess(os.Getpid())
			p.Kill()
			select {} // never returns
		}
	}
}
