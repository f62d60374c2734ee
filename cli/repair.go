package cli

import (
	"fmt"
	"io"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/spf13/cobra"
)

func (a *app) repairCommand() *cobra.Command {
	var out string
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "repair --out DIR [--dry-run]",
		Short: "Rebuild an export's damaged or lost state from its files",
		Long: `Check the output directory of '` + Name + ` export' and repair its state when
it is damaged or lost, or when files were removed by hand. Nothing is fetched
and no Parquet file is changed; the export's lock keeps it apart from a
running export.

- The ids of the posts already written are rebuilt from the x_bookmarks
  files: the next export writes no row twice.
- Each list's walk memory is kept if it is intact and every post it holds is
  in a file. Any other is dropped (never guessed from the files): the next
  export reads that list in full once, and bills every post in it again.
- A committed run whose files were removed before they were published is
  published without them.

A directory that needs nothing is left as it is. See docs/export.md, "When
something goes wrong".`,
		Example: "  " + Name + " repair --out ./archive --dry-run\n  " + Name + " repair --out ./archive",
		GroupID: groupArchive,
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return repair(out, dryRun, a.stdout)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&out, "out", "", "the export's output directory")
	fs.BoolVar(&dryRun, "dry-run", false, "say what would be repaired, and change nothing")
	_ = cmd.MarkFlagRequired("out")
	_ = cmd.MarkFlagDirname("out")
	return cmd
}

// repair repairs the output directory out and prints what it did.
func repair(out string, dryRun bool, stdout io.Writer) error {
	rep, err := archive.Repair(out, archive.RepairOptions{DryRun: dryRun, Tables: export.BookmarkTables()})
	if rep != nil {
		rep.WriteText(stdout)
	}
	if err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	return nil
}
