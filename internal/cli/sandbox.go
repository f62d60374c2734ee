package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/cq-source-x/cq-source-x/export/sandbox"
)

const sandboxUsage = `Usage: cq-source-x sandbox [--addr 127.0.0.1:PORT]

Run the built-in X API simulator on loopback with three demo accounts
(alice: 3000 bookmarks and folders; bob: none; carol: 25 and a folder) and
print a spec for it on stdout. The spec works with
  cq-source-x export --spec FILE --out DIR
and with 'cloudquery sync FILE' (registry: local, this binary). The
simulator keeps serving until Ctrl-C. No credentials, no cost.

Flags:
`

func runSandbox(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("sandbox", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "", "address to listen on, e.g. 127.0.0.1:8099 (default: a free port on 127.0.0.1)")
	fs.Usage = func() {
		fmt.Fprint(stderr, sandboxUsage)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("sandbox: unexpected argument %q", fs.Arg(0))
	}
	sb, err := sandbox.Start(sandbox.Options{Addr: *addr})
	if err != nil {
		return err
	}
	defer sb.Close()
	exe, err := os.Executable()
	if err != nil {
		return errors.New("sandbox: cannot find this program's path for the spec's `path`")
	}
	fmt.Fprint(stdout, sb.Spec(exe, false))
	if f, ok := stdout.(*os.File); ok {
		f.Sync()
	}
	fmt.Fprintf(stderr, "\nSimulator listening on %s; the spec above is ready to use (save it to a file).\nPress Ctrl-C to stop.\n", sb.URL())
	<-ctx.Done()
	return nil
}
