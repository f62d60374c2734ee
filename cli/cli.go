// Package cli is the command line of cq-source-x: one cobra tree with the
// program's own commands beside the plugin commands the CloudQuery CLI runs.
package cli

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/cq-source-x/cq-source-x/internal/suggest"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Name is the program's name in every message and help text.
const Name = "cq-source-x"

// Command groups of the root's help.
const (
	groupArchive  = "archive"
	groupAccounts = "accounts"
	groupPlugin   = "plugin"
)

// Run runs the command line args (without the program name) and returns the
// process exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return RunWithSteps(ctx, nil, args, stdin, stdout, stderr)
}

// RunWithSteps is Run with step called at each step of export, compact and
// the bookmark commands that matters for crash safety, where the kill tests
// (a test binary of their own) stop the process. The program passes none.
func RunWithSteps(ctx context.Context, step func(string), args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, step: step}
	root := a.rootCommand()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	return a.finish(cmd, err)
}

// app is one run of the command line: its streams, and whether a command's
// own code started (an error before that is the command line's).
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	started        bool
	step           func(string) // see RunWithSteps
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   Name,
		Short: "Archive X bookmarks incrementally, as a CloudQuery source plugin or a standalone Parquet exporter",
		Long: Name + ` keeps a complete, incremental archive of X (Twitter) bookmarks and bookmark
folders, and reads (and so pays for) as few posts as possible doing it. It is a
CloudQuery source plugin and, with the same spec file, a standalone exporter to
Parquet.

Try it without credentials or cost:  ` + Name + ` export --sandbox --out ./demo

` + exitCodesHelp,
		Version:       versionText(),
		SilenceErrors: true,
		SilenceUsage:  true,
		// Cobra checks required and exclusive flags after this hook: check
		// them here, so that their errors are the command line's.
		PersistentPreRunE: func(cmd *cobra.Command, _ []string) error {
			if err := cmp.Or(cmd.ValidateRequiredFlags(), cmd.ValidateFlagGroups()); err != nil {
				return usageError(err)
			}
			a.started = true
			return nil
		},
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetVersionTemplate("{{.Version}}")
	root.SetFlagErrorFunc(flagError)
	root.AddGroup(
		&cobra.Group{ID: groupArchive, Title: "Archive:"},
		&cobra.Group{ID: groupAccounts, Title: "X accounts:"},
		&cobra.Group{ID: groupPlugin, Title: "CloudQuery plugin (run by the CloudQuery CLI and for the hub):"},
	)
	root.AddCommand(
		a.exportCommand(), a.bookmarksCommand(), a.compactCommand(), a.checkCommand(), a.repairCommand(), a.statusCommand(), a.browseCommand(), a.sandboxCommand(),
		a.loginCommand(), a.logoutCommand(),
		a.serveCommand(), a.docCommand(), a.packageCommand(), a.infoCommand(),
		a.versionCommand(),
	)
	root.InitDefaultHelpCmd()
	root.InitDefaultCompletionCmd()
	for _, c := range root.Commands() {
		switch c.Name() {
		case "help":
			c.Run, c.RunE = nil, helpRun
		case "completion":
			c.Long += completionHelp
		}
	}
	strictArgs(root)
	return root
}

// finish prints err (once) and returns the exit code.
func (a *app) finish(cmd *cobra.Command, err error) int {
	code := exitCode(err, a.started)
	if err == nil {
		return code
	}
	fmt.Fprintln(a.stderr, "Error:", strings.TrimRight(err.Error(), "\n"))
	if code == ExitUsage && cmd != nil {
		if cmd.Name() == "help" {
			cmd = cmd.Root()
		}
		fmt.Fprintf(a.stderr, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return code
}

// helpRun is `help [command]`: the command's help, or, for a command that
// does not exist, an error with suggestions (cobra's own prints the root's
// usage and succeeds).
func helpRun(c *cobra.Command, args []string) error {
	cmd, rest, err := c.Root().Find(args)
	switch {
	case err != nil:
		return usageError(err)
	case len(rest) > 0 && cmd.HasAvailableSubCommands():
		return usageError(unknownSubcommand(cmd, rest[0]))
	}
	cmd.InitDefaultHelpFlag()
	cmd.InitDefaultVersionFlag()
	return cmd.Help()
}

// strictArgs makes every command below the root that only groups others
// (`completion`, `bookmarks`) refuse an unknown subcommand with
// suggestions, as the root does, rather than print its help and succeed;
// and every other that names no arguments (help takes a command) refuse any.
func strictArgs(cmd *cobra.Command) {
	for _, c := range cmd.Commands() {
		if c.HasSubCommands() && !c.Runnable() {
			c.SuggestionsMinimumDistance = 2
			c.Args = cobra.ArbitraryArgs
			c.RunE = func(c *cobra.Command, args []string) error {
				if len(args) == 0 {
					return c.Help()
				}
				return usageError(unknownSubcommand(c, args[0]))
			}
		} else if c.Args == nil && c.Name() != "help" {
			c.Args = noArgs
		}
		strictArgs(c)
	}
}

func unknownSubcommand(cmd *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %q", name, cmd.CommandPath())
	if s := cmd.SuggestionsFor(name); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t")
	}
	return errors.New(msg)
}

// flagError marks flag errors as usage errors and suggests the flag meant.
func flagError(cmd *cobra.Command, err error) error {
	if name, ok := strings.CutPrefix(err.Error(), "unknown flag: --"); ok {
		var near []string
		cmd.Flags().VisitAll(func(f *pflag.Flag) {
			if !f.Hidden && (strings.HasPrefix(f.Name, name) || suggest.Distance(f.Name, name) <= 2) {
				near = append(near, "--"+f.Name)
			}
		})
		if len(near) > 0 {
			err = fmt.Errorf("%w\n\nDid you mean this?\n\t%s", err, strings.Join(near, "\n\t"))
		}
	}
	return usageError(err)
}

// completionHelp is the end of `completion --help`: an example, and what
// the commands complete (TestCompletionHelpListsAllItCompletes asks each).
const completionHelp = `
For example, in bash:
  source <(` + Name + ` completion bash)
or once for all new shells:
  ` + Name + ` completion bash > /etc/bash_completion.d/` + Name + `
Completed: commands and flags; files for --spec, --token-file; directories for --dist-dir, --docs-dir, --from, --out, doc's argument; the values for --compression, --scopes, --table, --target.`

// noArgs refuses positional arguments, as a usage error.
func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usageErrorf("%s: unexpected argument %q", cmd.Name(), args[0])
	}
	return nil
}
