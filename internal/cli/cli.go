// Package cli is the command line of cq-source-x: the program's own commands
// (login, export, sandbox) beside the CloudQuery SDK's (serve, doc, package,
// info), which run the plugin.
package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/cloudquery/plugin-sdk/v4/serve"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
)

const usage = `cq-source-x archives X bookmarks and bookmark folders, incrementally and at the lowest cost.

Usage: cq-source-x <command> [flags]

Standalone:
  login      log in to X (OAuth 2.0 with PKCE) and write a token file
  export     sync a spec's accounts into Parquet files: export --spec FILE --out DIR
  repair     rebuild an export's damaged or lost state from its files: repair --out DIR
  sandbox    run the built-in X API simulator and print a spec for it

CloudQuery plugin (run by the CloudQuery CLI):
  serve      serve the plugin over gRPC
  doc        write table documentation (JSON)
  package    package the plugin for the CloudQuery hub
  info       print plugin information

Run 'cq-source-x <command> --help' for a command's flags.
`

// Run runs the command in args (without the program name) and returns the
// process exit code.
func Run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprint(stdout, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	var err error
	switch args[0] {
	case "login":
		err = runLogin(ctx, args[1:], stdin, stdout, stderr)
	case "export":
		err = runExport(ctx, args[1:], stdout, stderr)
	case "repair":
		err = runRepair(ctx, args[1:], stdout, stderr)
	case "sandbox":
		err = runSandbox(ctx, args[1:], stdout, stderr)
	default:
		err = serve.Plugin(xplugin.New(), serve.WithArgs(args...)).Serve(ctx)
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 0
	default:
		fmt.Fprintln(stderr, "Error:", err)
		return 1
	}
}
