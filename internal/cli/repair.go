package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/cq-source-x/cq-source-x/export"
)

const repairUsage = `Usage:
  cq-source-x repair --out DIR [--dry-run]

Check the output directory of 'cq-source-x export' and repair its state when
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
something goes wrong".

Flags:
`

func runRepair(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("repair", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "the export's output directory")
	dryRun := fs.Bool("dry-run", false, "say what would be repaired, and change nothing")
	fs.Usage = func() {
		fmt.Fprint(stderr, repairUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return fmt.Errorf("repair: unexpected argument %q", fs.Arg(0))
	case *out == "":
		return errors.New("repair: --out DIR is required")
	}
	return repair(*out, *dryRun, stdout)
}

// repair repairs the output directory out and prints what it did.
func repair(out string, dryRun bool, stdout io.Writer) error {
	rep, err := export.Repair(out, export.RepairOptions{DryRun: dryRun})
	if rep != nil {
		rep.WriteText(stdout)
	}
	if err != nil {
		return fmt.Errorf("repair: %w", err)
	}
	return nil
}
