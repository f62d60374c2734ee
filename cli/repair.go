package cli

import (
	"fmt"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/spf13/cobra"
)

func (a *app) repairCommand() *cobra.Command {
	var out string
	o := archive.RepairOptions{Step: a.step}
	cmd := &cobra.Command{
		Use:   "repair --out DIR [--read-data] [--dry-run]",
		Short: "Make an export's files, media files and state whole where it can",
		Long: `Repair the output directory of '` + Name + ` export' where '` + Name + ` check'
finds it not whole: a state damaged or lost, files removed or damaged by hand,
media files lost, what a stopped run left. Nothing is fetched; the export's
lock keeps it apart from a running export.

- The ids of the posts already written are rebuilt from the x_bookmarks
  files: the next export writes no row twice.
- Each list's walk memory is kept if it is intact and every post it holds is
  in a file. Any other is dropped (never guessed from the files): the next
  export reads that list in full once, and bills every post in it again.
- A file that cannot be read (its footer; with --read-data, a page) is moved
  to DIR/.damaged/<table>/.
- A media file whose row of x_media_files was lost, or which DIR/media lost
  or holds damaged (with --read-data, by its hash), is marked for the next
  export, which writes its row, fetching it again if DIR/media lacks it (and
  recording it gone if X no longer serves it); each is marked once, so no row
  is written twice. A file of DIR/media no row names and no post uses is
  removed.
- A committed run is published (without the files removed from it by hand);
  the files of runs that did not commit, and of media being fetched, are
  removed.

A directory that needs nothing is left as it is. See docs/export.md, "When
something goes wrong".`,
		Example: "  " + Name + " repair --out ./archive --dry-run\n  " + Name + " repair --out ./archive --read-data",
		GroupID: groupArchive,
		RunE: func(*cobra.Command, []string) error {
			o.Tables = export.BookmarkTables()
			rep, err := archive.Repair(out, o)
			if rep != nil {
				rep.WriteText(a.stdout)
			}
			if err != nil {
				return fmt.Errorf("repair: %w", err)
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&out, "out", "", "the export's output directory")
	fs.BoolVar(&o.DryRun, "dry-run", false, "say what would be repaired, and change nothing")
	fs.BoolVar(&o.ReadData, "read-data", false, "read every page of every file, and hash every media file")
	_ = cmd.MarkFlagRequired("out")
	_ = cmd.MarkFlagDirname("out")
	return cmd
}
