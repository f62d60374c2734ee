package cli

import (
	"cmp"
	"slices"
	"strings"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/spf13/cobra"
)

const compactLong = `Merge each table's files of a month into one file, in an export's output
directory. Each run of 'export' adds a file per table; after months of daily
runs, readers open hundreds of small files. Rows are neither added, dropped
nor changed: a merged file holds its files' rows in their order, each with
its _cq_sync_time.

Months are merged once they are over (UTC); --current-month merges the
current month's files too (they are merged again with the files the next
runs add). Files of different columns, written by different versions, are
merged apart.

Readers of DIR/<table>/*.parquet (DuckDB, pyarrow, Spark) need not stop:
compaction builds the table's new set of files in DIR/.tables/<table>/ and
makes DIR/<table> a link to it in one atomic rename. A reader that lists the
directory sees the old files or the new ones, never both and never neither;
one that listed the old files and opens one after the switch gets "no such
file", and its query can be run again. The replaced files are kept in
DIR/.tables/<table>/retired until the next compaction, so that a listing
running across the switch ends whole. A compaction killed at any point
leaves the old files or the new ones, and the next export or compaction
removes the rest. It takes the export's lock; it needs Linux or macOS.
See docs/export.md.`

func (a *app) compactCommand() *cobra.Command {
	var o archive.CompactOptions
	var out string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "compact --out DIR [--table NAME...] [--current-month] [--dry-run]",
		Short: "Merge each table's files of a month into one file",
		Long:  compactLong,
		Example: "  " + Name + " compact --out ./archive --dry-run\n" +
			"  " + Name + " compact --out ./archive\n" +
			"  " + Name + " compact --out ./archive --table x_api_usage --current-month",
		GroupID: groupArchive,
		RunE: func(*cobra.Command, []string) error {
			if _, err := pqfile.ParseCodec(o.Compression); err != nil {
				return usageErrorf("compact: --compression: %w", err)
			}
			for _, t := range o.Tables {
				if !slices.Contains(export.TableNames(), t) {
					return usageErrorf("compact: --table: no table %q; the tables are %s", t, strings.Join(export.TableNames(), ", "))
				}
			}
			o.Step, o.Program = a.step, export.Program
			rep, err := archive.Compact(out, o)
			if rep != nil && asJSON {
				return cmp.Or(writeIndentedJSON(a.stdout, rep), err)
			} else if rep != nil {
				rep.WriteText(a.stdout)
			}
			return err
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&out, "out", "", "the export's output directory")
	fs.StringSliceVar(&o.Tables, "table", nil, "compact only these tables (comma-separated or repeated; default: all)")
	fs.BoolVar(&o.CurrentMonth, "current-month", false, "merge the current month's files too")
	fs.BoolVar(&o.DryRun, "dry-run", false, "say what would be merged, and change nothing")
	compressionFlag(cmd, &o.Compression, "Parquet compression of the merged files: snappy, zstd, gzip, lz4_raw or none")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	_ = cmd.MarkFlagRequired("out")
	_ = cmd.MarkFlagDirname("out")
	_ = cmd.RegisterFlagCompletionFunc("table", cobra.FixedCompletions(export.TableNames(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}
