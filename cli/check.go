package cli

import (
	"fmt"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/internal/plural"
	"github.com/spf13/cobra"
)

const checkLong = `Check an export's output directory, trusting nothing, and say what is not
whole, a line each, with the command that fixes it:

- every Parquet file's footer can be read (with --read-data, every page);
- every media file a row of x_media_files says stored is in DIR/media, of
  its size (with --read-data, its content hashes to the row's sha256), and
  every file of DIR/media has a row;
- the state agrees with the files: the posts it says archived are in
  x_bookmarks, its walk memories hold only those, and the files of the media
  it records stored have their rows;
- nothing is left of a stopped run (a run committed and not published, files
  of a run that did not commit, media files being fetched).

It reads the directory only: no token, no request, and nothing is changed
(it takes the export's lock, so it does not run beside an export).
'` + Name + ` repair' fixes what it can. See docs/export.md.

Exit codes: 0 the archive is whole, 3 it is not, 1 it could not be read.`

func (a *app) checkCommand() *cobra.Command {
	var out string
	var readData, asJSON bool
	cmd := &cobra.Command{
		Use:     "check --out DIR [--read-data]",
		Short:   "Check that an export's files, media files and state are whole, offline",
		Long:    checkLong,
		Example: "  " + Name + " check --out ./archive\n  " + Name + " check --out ./archive --read-data",
		GroupID: groupArchive,
		RunE: func(*cobra.Command, []string) error {
			rep, err := archive.Check(out, export.BookmarkTables(), readData)
			if err != nil {
				return fmt.Errorf("check: %w", err)
			}
			if !asJSON {
				rep.WriteText(a.stdout)
			} else if err := writeIndentedJSON(a.stdout, rep); err != nil {
				return err
			}
			if n := len(rep.Problems); n > 0 {
				return &exitError{code: ExitSomeAccountsFailed, err: fmt.Errorf("check: %s in %s", plural.Count(n, "problem", "problems"), rep.Out)}
			}
			return nil
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&out, "out", "", "the export's output directory")
	fs.BoolVar(&readData, "read-data", false, "read every page of every file, and hash every media file")
	fs.BoolVar(&asJSON, "json", false, "print the report as JSON")
	_ = cmd.MarkFlagRequired("out")
	_ = cmd.MarkFlagDirname("out")
	return cmd
}
