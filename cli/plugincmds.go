package cli

import (
	"bufio"
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/docs"
	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/serve"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/internal/plural"
	"github.com/cq-source-x/cq-source-x/internal/tabledoc"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/mod/semver"
)

// The plugin commands keep the flags of the SDK's serve.Plugin command
// line, which the CloudQuery CLI and the hub's tooling use. serve and
// package run the SDK's own command; doc and info are rewritten here, doc
// so that its Markdown works.

func (a *app) serveCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve the plugin over gRPC (the CloudQuery CLI runs this)",
		Long: `Serve the plugin over gRPC. The CloudQuery CLI runs it for a spec with
'registry: local' (` + Name + ` serve --network unix --address SOCKET --log-level LEVEL
--log-format json ...). For 'registry: grpc', run it yourself and point the spec's
path at the address:

  ` + Name + ` serve --address localhost:7777`,
		GroupID: groupPlugin,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sentry, _ := strconv.ParseBool(os.Getenv("CQ_SENTRY_ENABLED"))
			if noSentry, _ := cmd.Flags().GetBool("no-sentry"); sentry && noSentry {
				return usageError(errors.New("CQ_SENTRY_ENABLED and --no-sentry cannot be used together"))
			}
			return a.runSDK(cmd, xplugin.New(), sdkFlags(cmd.Flags()))
		},
	}
	f := cmd.Flags()
	f.String("address", "localhost:7777", "address to serve on. can be tcp: `localhost:7777` or unix socket: `/tmp/plugin.rpc.sock`")
	f.String("network", "tcp", `the network must be "tcp", "tcp4", "tcp6", "unix" or "unixpacket"`)
	f.Var(newEnum("info", "trace", "debug", "info", "warn", "error"), "log-level", "log level. one of: trace,debug,info,warn,error")
	f.Var(newEnum("text", "text", "json"), "log-format", "log format. one of: text,json")
	f.String("otel-endpoint", "", "Open Telemetry HTTP collector endpoint")
	f.Bool("otel-endpoint-insecure", false, "use Open Telemetry HTTP endpoint (for development only)")
	f.Bool("no-sentry", false, "disable sentry")
	f.String("license", "", "Path to offline license file or directory")
	_ = cmd.MarkFlagFilename("license")
	return cmd
}

func (a *app) docCommand() *cobra.Command {
	format := newEnum("markdown", "json", "markdown")
	cmd := &cobra.Command{
		Use:   "doc DIRECTORY",
		Short: "Write the tables' documentation (Markdown or JSON)",
		Long: `Write the documentation of the plugin's tables into DIRECTORY (created if
needed): with --format markdown (the default), a page per table with every
column and an index, README.md (the pages of docs/tables/, with the exporter's
own table x_bookmark_changes); with --format json, the SDK's __tables.json.`,
		GroupID: groupPlugin,
		Args:    exactArgs("DIRECTORY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			p := xplugin.New()
			if err := p.Init(cmd.Context(), nil, plugin.NewClientOptions{NoConnection: true}); err != nil {
				return err
			}
			tables, err := p.Tables(cmd.Context(), plugin.TableOptions{Tables: []string{"*"}})
			if err != nil {
				return err
			}
			if format.Value == "json" {
				return docs.NewGenerator(p.Name(), tables).GenerateJSON(args[0], docs.FormatJSON)
			}
			return tabledoc.Write(args[0], append(tables, archive.Tables()...))
		},
	}
	cmd.Flags().Var(format, "format", "output format. one of: json,markdown")
	cmd.ValidArgsFunction = cobra.FixedCompletions(nil, cobra.ShellCompDirectiveFilterDirs)
	return cmd
}

func (a *app) infoCommand() *cobra.Command {
	return &cobra.Command{
		Use:     "info",
		Short:   "Print the plugin's package and version",
		Long:    "Print the plugin's package and version, as the CloudQuery hub names it: team/kind/name@version.",
		GroupID: groupPlugin,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintln(a.stdout, "Package and version:", xplugin.New().PackageAndVersion())
			return err
		},
	}
}

func (a *app) packageCommand() *cobra.Command {
	var targets []string
	cmd := &cobra.Command{
		Use:   "package -m MESSAGE VERSION PLUGIN_DIRECTORY",
		Short: "Package the plugin for the CloudQuery hub",
		Long: `Package the plugin for the CloudQuery hub: the SDK's package command writes
into PLUGIN_DIRECTORY/dist (or --dist-dir) package.json, tables.json,
spec_json_schema.json, docs/ (the hub's pages: docs/overview.md and
docs/configuration.md, or every .md file of --docs-dir) and one zip archive
per OS and architecture, each holding a binary built with VERSION, the commit
of PLUGIN_DIRECTORY's git checkout and the build time ('version' prints them).

  ` + Name + ` package -m "First release" v1.0.0 .
  ` + Name + ` package -m @CHANGELOG-v1.0.0.md --target linux_amd64 v1.0.0 .

Then publish it (after 'cloudquery login'):

  cloudquery plugin publish -D dist --finalize`,
		GroupID: groupPlugin,
		Args:    exactArgs("VERSION", "PLUGIN_DIRECTORY"),
		RunE: func(cmd *cobra.Command, args []string) error {
			sel, err := buildTargets(targets)
			if err != nil {
				return usageError(err)
			}
			return a.pack(cmd, args[0], args[1], sel)
		},
	}
	f := cmd.Flags()
	f.StringP("dist-dir", "D", "", "dist directory to output the built plugin. (default: <plugin_directory>/dist)")
	f.StringP("docs-dir", "", "", "docs directory containing markdown files to copy to the dist directory. (default: the hub's pages, overview.md and configuration.md of <plugin_directory>/docs)")
	f.StringP("message", "m", "", "message that summarizes what is new or changed in this version. Use @<file> to read from file. Supports markdown.")
	f.StringSliceVar(&targets, "target", nil, "OS_ARCH to build, e.g. linux_amd64; repeat or separate with commas (default: "+strings.Join(targetNames(), ", ")+")")
	_ = cmd.MarkFlagRequired("message")
	_ = cmd.MarkFlagDirname("dist-dir")
	_ = cmd.MarkFlagDirname("docs-dir")
	_ = cmd.RegisterFlagCompletionFunc("target", cobra.FixedCompletions(targetNames(), cobra.ShellCompDirectiveNoFileComp))
	return cmd
}

// pack runs the SDK's package command for version, the plugin's source
// in dir and targets, each binary stamped with its commit and build date.
func (a *app) pack(cmd *cobra.Command, version, dir string, targets []plugin.BuildTarget) error {
	if !semver.IsValid(version) || semver.Canonical(version) != strings.SplitN(version, "+", 2)[0] {
		return usageErrorf("package: VERSION %q is not a semantic version such as v1.2.0 (the hub takes nothing else)", version)
	}
	for _, f := range []string{"go.mod", "main.go"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			return usageErrorf("package: %s is not this plugin's source directory: %v", dir, err)
		}
	}
	flags := sdkFlags(cmd.Flags(), "target")
	if !cmd.Flags().Changed("docs-dir") {
		staged, err := stageHubDocs(dir)
		if err != nil {
			return err
		}
		defer os.RemoveAll(staged)
		flags = append(flags, "--docs-dir="+staged)
	}
	removeStamp, err := writeReleaseStamp(dir, time.Now())
	if err != nil {
		return err
	}
	defer removeStamp()
	p := xplugin.New(xplugin.WithBuildTargets(stampedTargets(targets, os.Getenv("GOFLAGS"))))
	if err := a.runSDK(cmd, p, append(flags, "--", version, dir)); err != nil {
		return err
	}
	dist, _ := cmd.Flags().GetString("dist-dir")
	return a.packaged(cmp.Or(dist, filepath.Join(dir, "dist")))
}

// runSDK runs the SDK's command line for p with cmd's name and args.
func (a *app) runSDK(cmd *cobra.Command, p *plugin.Plugin, args []string) error {
	// The SDK's command line ends the process (os.Exit) when this is wrong.
	telemetryLevels := []string{"none", "errors", "stats", "all"}
	if v := os.Getenv("CQ_TELEMETRY_LEVEL"); v != "" && !slices.Contains(telemetryLevels, v) {
		return usageErrorf("CQ_TELEMETRY_LEVEL is %q, not one of %s", v, strings.Join(telemetryLevels, ", "))
	}
	return withoutSDKFailureText(a.stderr, func() error {
		return serve.Plugin(p, serve.WithArgs(append([]string{cmd.Name()}, args...)...)).Serve(cmd.Context())
	})
}

// withoutSDKFailureText runs the SDK's command line (run) with os.Stderr a
// pipe to w that drops the SDK's own failure text: see
// docs/design/cloudquery-sdk-notes.md#commands-of-the-plugin-binary-servepluginpservectx.
func withoutSDKFailureText(w io.Writer, run func() error) error {
	r, pw, err := os.Pipe()
	if err != nil {
		return run()
	}
	saved := os.Stderr
	os.Stderr = pw
	held := make(chan []byte, 1)
	go func() {
		var hold bytes.Buffer
		lines := bufio.NewReader(r)
		for {
			line, err := lines.ReadBytes('\n')
			if hold.Len() > 0 || bytes.HasPrefix(line, []byte("Error: ")) {
				hold.Write(line)
			} else {
				_, _ = w.Write(line)
			}
			if err != nil {
				held <- hold.Bytes()
				return
			}
		}
	}()
	runErr := run()
	os.Stderr = saved
	pw.Close()
	rest := <-held
	r.Close()
	if runErr == nil || !bytes.HasPrefix(rest, []byte("Error: "+runErr.Error())) {
		_, _ = w.Write(rest)
	}
	return runErr
}

// sdkFlags are the flags set on the command line, as arguments for the SDK's
// command, but for those named in skip (this program's own).
func sdkFlags(fs *pflag.FlagSet, skip ...string) []string {
	var args []string
	fs.Visit(func(f *pflag.Flag) {
		if !slices.Contains(skip, f.Name) {
			args = append(args, "--"+f.Name+"="+f.Value.String())
		}
	})
	return args
}

// targetNames are the SDK's default targets' OS_ARCH.
func targetNames() []string {
	names := make([]string, len(plugin.DefaultBuildTargets))
	for i, t := range plugin.DefaultBuildTargets {
		names[i] = t.OS + "_" + t.Arch
	}
	return names
}

// buildTargets picks the SDK's default targets named (OS_ARCH or OS/ARCH);
// none named is all of them.
func buildTargets(names []string) ([]plugin.BuildTarget, error) {
	if len(names) == 0 {
		return plugin.DefaultBuildTargets, nil
	}
	var out []plugin.BuildTarget
	all := targetNames()
	for _, n := range names {
		i := slices.Index(all, strings.ReplaceAll(strings.TrimSpace(n), "/", "_"))
		if i < 0 {
			return nil, fmt.Errorf("package: --target %q is not one of %s", n, strings.Join(all, ", "))
		}
		out = append(out, plugin.DefaultBuildTargets[i])
	}
	return out, nil
}

// stageHubDocs copies the pages the CloudQuery hub shows from dir/docs
// into a new temporary directory: the SDK copies every .md file of the one
// it is given, and docs/ also holds pages for the repository's readers.
func stageHubDocs(dir string) (string, error) {
	staged, err := os.MkdirTemp("", "cq-source-x-hub-docs-")
	if err != nil {
		return "", err
	}
	for _, name := range []string{"overview.md", "configuration.md"} {
		b, err := os.ReadFile(filepath.Join(dir, "docs", name))
		if err == nil {
			err = os.WriteFile(filepath.Join(staged, name), b, 0o644)
		}
		if err != nil {
			os.RemoveAll(staged)
			return "", fmt.Errorf("package: the hub's page %s: %w", name, err)
		}
	}
	return staged, nil
}

// packaged says what the package command wrote and how to publish it.
func (a *app) packaged(dist string) error {
	b, err := os.ReadFile(filepath.Join(dist, "package.json"))
	if err != nil {
		return err
	}
	var pkg serve.PackageJSON
	if err := json.Unmarshal(b, &pkg); err != nil {
		return fmt.Errorf("%s/package.json: %w", dist, err)
	}
	var files []string
	_ = filepath.WalkDir(dist, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dist, path)
			files = append(files, rel)
		}
		return nil
	})
	fmt.Fprintf(a.stdout, "\nPackaged %s/%s/%s@%s in %s:\n  %s\n\nPublish it to the hub (team %q must be yours: plugin.Team) with:\n  cloudquery login\n  cloudquery plugin publish -D %s --finalize\n",
		pkg.Team, pkg.Kind, pkg.Name, pkg.Version, dist, strings.Join(files, "\n  "), pkg.Team, dist)
	return nil
}

// enum is a string flag with a fixed set of values, as the SDK's.
type enum struct {
	allowed []string
	Value   string
}

func newEnum(def string, allowed ...string) *enum { return &enum{allowed: allowed, Value: def} }

func (e *enum) String() string { return e.Value }
func (e *enum) Type() string   { return "string" }
func (e *enum) Set(v string) error {
	if !slices.Contains(e.allowed, v) {
		return fmt.Errorf("%s is not included in %s", v, strings.Join(e.allowed, ","))
	}
	e.Value = v
	return nil
}

// exactArgs requires the named positional arguments.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != len(names) {
			return usageErrorf("%s takes %s (%s), got %d", cmd.Name(), strings.Join(names, " "), plural.Count(len(names), "argument", "arguments"), len(args))
		}
		return nil
	}
}
