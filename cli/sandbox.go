package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"

	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/internal/bearer"
	"github.com/cq-source-x/cq-source-x/sandbox"
	"github.com/spf13/cobra"
)

// SandboxClientID is the demo X app the sandbox registers, for rehearsing
// `login`: a public client (no secret) whose callback is the login's
// default redirect URL.
const SandboxClientID = "cq-source-x-sandbox"

const sandboxLong = `Run the built-in X API simulator on loopback with three demo accounts
(alice: 3000 bookmarks and folders; bob: none; carol: 25 and a folder) and
print a spec for it on stdout. The spec works with
  ` + Name + ` export --spec FILE --out DIR
and with 'cloudquery sync FILE' (registry: local, this binary). No
credentials, no cost.

The sandbox also registers a demo X app, so that a login can be rehearsed:
it prints the login command line, whose browser page lets you pick the demo
account that approves the app, and the spec lines, status and logout
commands for the token file the login writes. The simulator keeps serving
until Ctrl-C.`

func (a *app) sandboxCommand() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:     "sandbox [--addr 127.0.0.1:PORT]",
		Short:   "Run the built-in X API simulator, and print a spec and a login for it",
		Long:    sandboxLong,
		GroupID: groupArchive,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return a.runSandbox(cmd.Context(), addr)
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "", "address to listen on, e.g. 127.0.0.1:8099 (default: a free port on 127.0.0.1)")
	return cmd
}

func (a *app) runSandbox(ctx context.Context, addr string) error {
	// The plugin sends a token over plain http only to a loopback host
	// (0.0.0.0 and :PORT would print a base_url export refuses).
	if addr != "" {
		if err := checkLoopbackAddr("sandbox", addr, "the sandbox serves plain http, which cq-source-x sends tokens over only to a loopback address"); err != nil {
			return err
		}
	}
	sb, err := sandbox.Start(sandbox.Options{Addr: addr})
	if err != nil {
		return err
	}
	defer sb.Close()
	exe, err := os.Executable()
	if err != nil {
		return errors.New("sandbox: cannot find this program's path for the spec's `path`")
	}
	sb.RegisterClient(SandboxClientID, "", auth.DefaultRedirectURL)
	sb.ShowConsentPage(SandboxClientID)
	fmt.Fprint(a.stdout, sb.Spec(exe, false))
	fmt.Fprintf(a.stderr, "\nSimulator listening on %s; the spec above is ready to use (save it to a file).\n", sb.URL())
	writeRehearsal(a.stderr, sb.URL())
	fmt.Fprintln(a.stderr, "\nPress Ctrl-C to stop.")
	<-ctx.Done()
	return nil
}

// checkLoopbackAddr refuses a command's --addr that is not HOST:PORT of a
// loopback host; why says what listening elsewhere would do.
func checkLoopbackAddr(command, addr, why string) error {
	host, _, err := net.SplitHostPort(addr)
	switch {
	case err != nil:
		return usageErrorf("%s: --addr %s: want HOST:PORT, such as 127.0.0.1:8099 (%v)", command, addr, err)
	case !bearer.Loopback(host):
		return usageErrorf("%s: --addr %s: %s: give 127.0.0.1:PORT, [::1]:PORT or localhost:PORT", command, addr, why)
	}
	return nil
}

// writeRehearsal tells how to rehearse a login against the sandbox at url.
func writeRehearsal(w io.Writer, url string) {
	authURL, tokenURL, revokeURL := url+"/2/oauth2/authorize", url+"/2/oauth2/token", url+"/2/oauth2/revoke"
	fmt.Fprintf(w, `
To rehearse a login, the sandbox registered a demo X app: client id %q
(a public client, callback %s). In another terminal:

  %s login --client-id %s --token-file alice.json \
      --auth-url %s --token-url %s --api-url %s

The browser shows the sandbox's consent page: pick alice, bob or carol (add
--headless to paste the address instead). Then use the token file in the spec
above, in place of an account's user_id and access_token, with the sandbox's
token endpoint for refreshing it:

    oauth:
      token_url: %q
    accounts:
      - token_file: "alice.json"   # the path the login prints

and try:

  %s status --token-file alice.json --api-url %s --token-url %s
  %s logout --token-file alice.json --revoke-url %s
`, SandboxClientID, auth.DefaultRedirectURL, Name, SandboxClientID, authURL, tokenURL, url, tokenURL, Name, url, tokenURL, Name, revokeURL)
}
