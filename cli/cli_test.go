package cli

import (
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/serve"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// A mistyped command is named once, with the program's name and the
// command meant, and is a usage error.
func TestAnUnknownCommandSuggestsTheCommandMeant(t *testing.T) {
	code, stdout, stderr := runCLI(t, "exprot")
	if code != ExitUsage || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	mustContain(t, stderr, `Error: unknown command "exprot" for "cq-source-x"`, "Did you mean this?\n\texport\n", "Run 'cq-source-x --help' for usage.")
	if n := strings.Count(stderr, "unknown command"); n != 1 {
		t.Errorf("told %d times:\n%s", n, stderr)
	}
	if strings.Contains(stderr, `"x"`) || strings.Contains(stderr, "'x ") {
		t.Errorf("the program calls itself x:\n%s", stderr)
	}
}

// An unknown subcommand of a command that groups others is refused, with
// suggestions, as at the top.
func TestAnUnknownSubcommandOfAGroupIsAUsageError(t *testing.T) {
	code, _, stderr := runCLI(t, "completion", "bsh")
	if code != ExitUsage {
		t.Fatalf("exit %d", code)
	}
	mustContain(t, stderr, `unknown command "bsh" for "cq-source-x completion"`, "Did you mean this?\n\tbash")
}

// A mistyped flag is a usage error that names the flag meant.
func TestAnUnknownFlagSuggestsTheFlagMeant(t *testing.T) {
	code, _, stderr := runCLI(t, "export", "--spce", "x.yml", "--out", t.TempDir())
	if code != ExitUsage {
		t.Fatalf("exit %d", code)
	}
	mustContain(t, stderr, "Error: unknown flag: --spce", "Did you mean this?\n\t--spec", "Run 'cq-source-x export --help' for usage.")
}

// `help COMMAND` is that command's help; help for a command that does not
// exist is a usage error with suggestions.
func TestHelpCommandShowsTheCommandsHelp(t *testing.T) {
	_, viaHelp, _ := runCLI(t, "help", "export")
	code, viaFlag, _ := runCLI(t, "export", "--help")
	if code != ExitOK || viaHelp != viaFlag || !strings.Contains(viaHelp, "cq-source-x export --spec FILE --out DIR") {
		t.Fatalf("help export:\n%s\nexport --help:\n%s", viaHelp, viaFlag)
	}
	code, _, stderr := runCLI(t, "help", "exprot")
	if code != ExitUsage {
		t.Errorf("help exprot: exit %d", code)
	}
	mustContain(t, stderr, "Did you mean this?\n\texport", "Run 'cq-source-x --help' for usage.")
}

// Every command's flags are --long (and -x shorthands), subcommands' too,
// in one tree; each command's help lists its subcommands, and the root's
// the exit codes.
func TestEveryCommandHasDoubleDashFlags(t *testing.T) {
	_, root, _ := runCLI(t, "--help")
	mustContain(t, root, exitCodesHelp)
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	var paths []string
	var check func(parent *cobra.Command, parentHelp string)
	check = func(parent *cobra.Command, parentHelp string) {
		for _, c := range parent.Commands() {
			path := c.CommandPath() // cq-source-x bookmarks remove
			paths = append(paths, strings.TrimPrefix(path, Name+" "))
			if !strings.Contains(parentHelp, "\n  "+c.Name()+" ") {
				t.Errorf("%s --help does not list %s", parent.CommandPath(), c.Name())
			}
			_, help, _ := runCLI(t, append(strings.Fields(path)[1:], "--help")...)
			if single := regexp.MustCompile(`(?m)^\s+-[a-z][a-z-]+`).FindString(help); single != "" {
				t.Errorf("%s --help shows a single-dash flag %q:\n%s", path, single, help)
			}
			if !strings.Contains(help, path) {
				t.Errorf("%s --help does not say %s:\n%s", path, path, help)
			}
			check(c, help)
		}
	}
	check(a.rootCommand(), root)
	for _, want := range []string{"export", "status", "sandbox", "login", "logout", "serve", "doc", "package", "info", "version", "completion", "help", "bookmarks remove", "bookmarks add"} {
		if !slices.Contains(paths, want) {
			t.Errorf("no command %s in %v", want, paths)
		}
	}
}

// A client secret given in the environment is not shown in any help (a
// flag's default is).
func TestHelpDoesNotShowTheClientSecret(t *testing.T) {
	t.Setenv("X_CLIENT_SECRET", "s3cret-from-env")
	t.Setenv("X_CLIENT_ID", "id-from-env")
	for _, cmd := range []string{"login", "logout", "status"} {
		if _, help, _ := runCLI(t, cmd, "--help"); strings.Contains(help, "s3cret-from-env") {
			t.Errorf("%s --help shows the secret:\n%s", cmd, help)
		}
	}
}

// `completion SHELL` writes the shell's script, and the shell's requests
// complete commands and flags.
func TestCompletion(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "__start_cq-source-x", "zsh": "#compdef cq-source-x", "fish": "complete -c cq-source-x", "powershell": "Register-ArgumentCompleter",
	} {
		code, stdout, stderr := runCLI(t, "completion", shell)
		if code != ExitOK || !strings.Contains(stdout, want) {
			t.Errorf("completion %s: exit %d, %s; script lacks %q", shell, code, stderr, want)
		}
	}
	_, stdout, _ := runCLI(t, "__complete", "ex")
	mustContain(t, stdout, "export\t")
	_, stdout, _ = runCLI(t, "__complete", "export", "--sp")
	mustContain(t, stdout, "--spec\t")
	_, stdout, _ = runCLI(t, "__complete", "login", "--scopes", "")
	mustContain(t, stdout, "bookmark.write")
}

// `completion --help` lists every flag and argument the shell completes
// other than as any file (which the shell does for the rest): asked for
// each flag of each command, the completion gives files of some
// extensions, directories or values only for those it names.
func TestCompletionHelpListsAllItCompletes(t *testing.T) {
	_, help, _ := runCLI(t, "completion", "--help")
	_, listed, ok := strings.Cut(help, "Completed: ")
	listed, _, _ = strings.Cut(listed, "\n")
	if !ok {
		t.Fatalf("completion --help says nothing of what is completed:\n%s", help)
	}
	a := &app{}
	n := 0
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.Fields(c.CommandPath())[1:]
		c.LocalFlags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden || f.Value.Type() == "bool" || f.Name == "help" {
				return
			}
			_, out, _ := runCLI(t, append(append([]string{"__complete"}, path...), "--"+f.Name, "")...)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			completes, listed := len(lines) > 1 || lines[0] != ":0", regexp.MustCompile("--"+f.Name+"[,;.]").MatchString(listed)
			if completes != listed {
				t.Errorf("%s --%s: completes %v (%q), listed by completion --help %v", c.CommandPath(), f.Name, completes, lines, listed)
			}
			n++
		})
		if c.ValidArgsFunction != nil && c.Name() != "help" && !strings.HasPrefix(c.CommandPath(), "cq-source-x completion") {
			_, out, _ := runCLI(t, append(append([]string{"__complete"}, path...), "")...)
			if lines := strings.Split(strings.TrimSpace(out), "\n"); (len(lines) > 1 || lines[0] != ":0") != strings.Contains(listed, c.Name()+"'s argument") {
				t.Errorf("%s completes its argument (%q), and completion --help lists: %s", c.CommandPath(), lines, listed)
			}
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(a.rootCommand())
	if n < 30 {
		t.Fatalf("asked for %d flags only", n)
	}
	for _, want := range []string{"--spec", "--out", "--compression", "--scopes", "--target"} {
		if !strings.Contains(listed, want) {
			t.Errorf("the help does not list %s: %s", want, listed)
		}
	}
}

// version and --version print the resolved version, the commit and the
// build date; info and the plugin carry the same version.
func TestVersionSaysTheResolvedVersion(t *testing.T) {
	code, version, _ := runCLI(t, "version")
	_, flag, _ := runCLI(t, "--version")
	if code != ExitOK || version != flag {
		t.Fatalf("version (exit %d):\n%s--version:\n%s", code, version, flag)
	}
	mustContain(t, version, "cq-source-x version "+xplugin.Version+"\n", "commit:", "built:", "plugin:  cq-source-x/source/x@"+xplugin.Version)
	_, info, _ := runCLI(t, "info")
	if info != "Package and version: cq-source-x/source/x@"+xplugin.Version+"\n" {
		t.Errorf("info: %q", info)
	}
	_, js, _ := runCLI(t, "version", "--json")
	var b struct{ Version, Plugin string }
	if err := json.Unmarshal([]byte(js), &b); err != nil || b.Version != xplugin.Version || b.Plugin != "cq-source-x/source/x@"+xplugin.Version {
		t.Errorf("version --json: %v %s", err, js)
	}
}

// doc writes the pages of docs/tables/ by default (Markdown, as its help
// says), and the SDK's JSON with --format json.
func TestDocWritesMarkdownByDefaultAndJSON(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "doc", dir); code != ExitOK {
		t.Fatalf("doc: exit %d: %s", code, stderr)
	}
	committed, _ := filepath.Glob("../docs/tables/*.md")
	if len(committed) == 0 {
		t.Fatal("no docs/tables")
	}
	for _, c := range committed {
		want, _ := os.ReadFile(c)
		got, err := os.ReadFile(filepath.Join(dir, filepath.Base(c)))
		if err != nil || string(got) != string(want) {
			t.Errorf("doc's %s differs from docs/tables (%v)", filepath.Base(c), err)
		}
	}
	if code, _, stderr := runCLI(t, "doc", "--format", "json", dir); code != ExitOK {
		t.Fatalf("doc --format json: exit %d: %s", code, stderr)
	}
	var tables []struct{ Name string }
	b, _ := os.ReadFile(filepath.Join(dir, "__tables.json"))
	if err := json.Unmarshal(b, &tables); err != nil || len(tables) == 0 || tables[0].Name == "" {
		t.Errorf("__tables.json: %v %s", err, b)
	}
	if code, _, stderr := runCLI(t, "doc", "--format", "html", dir); code != ExitUsage || !strings.Contains(stderr, "html is not included in json,markdown") {
		t.Errorf("doc --format html: exit %d: %s", code, stderr)
	}
}

// sdkHelp is the help the SDK's own command line prints for args.
func sdkHelp(t *testing.T, args ...string) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stdout
	os.Stdout = w
	done := make(chan string)
	go func() { b, _ := io.ReadAll(r); done <- string(b) }()
	err = serve.Plugin(xplugin.New(), serve.WithArgs(append(args, "--help")...)).Serve(context.Background())
	os.Stdout = saved
	w.Close()
	out := <-done
	if err != nil {
		t.Fatalf("the SDK's %v --help: %v", args, err)
	}
	return out
}

// flagSignatures are the flags of a help text: "-m, --message string" and
// the default, one per flag, spaces squeezed.
func flagSignatures(help string) map[string]string {
	sigs := map[string]string{}
	_, flags, _ := strings.Cut(help, "\nFlags:\n")
	for _, l := range strings.Split(flags, "\n") {
		m := regexp.MustCompile(`^\s+((?:-\w, )?--[\w-]+(?: \S+)?)\s{2,}.*?(\(default .*\))?$`).FindStringSubmatch(l)
		if m != nil {
			name := regexp.MustCompile(`--[\w-]+`).FindString(m[1])
			sigs[name] = m[1] + " " + m[2]
		}
	}
	return sigs
}

// The plugin commands keep every flag of the SDK's serve.Plugin command
// line (the CloudQuery CLI runs `serve --network unix --address … --log-level
// … --log-format json --no-sentry --license … --otel-endpoint …`): same
// names, shorthands, types and defaults, and the same positional
// arguments.
func TestPluginCommandsKeepTheSDKsFlags(t *testing.T) {
	for _, cmd := range []string{"serve", "doc", "package", "info"} {
		sdk := flagSignatures(sdkHelp(t, cmd))
		_, ours, _ := runCLI(t, cmd, "--help")
		mine := flagSignatures(ours)
		if len(sdk) < 1 {
			t.Fatalf("no flags read from the SDK's %s help", cmd)
		}
		for name, sig := range sdk {
			if mine[name] != sig {
				t.Errorf("%s %s: the SDK has %q, we have %q", cmd, name, sig, mine[name])
			}
		}
	}
	// Positional arguments as the SDK's: serve and info none, doc one, package two.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "extra"}, `serve: unexpected argument "extra"`},
		{[]string{"info", "extra"}, `info: unexpected argument "extra"`},
		{[]string{"doc"}, "doc takes DIRECTORY (1 argument), got 0"},
		{[]string{"package", "-m", "x", "v1.0.0"}, "package takes VERSION PLUGIN_DIRECTORY (2 arguments), got 1"},
	} {
		if code, _, stderr := runCLI(t, c.args...); code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, stderr)
		}
	}
}

// serve refuses what the SDK's serve refuses before it listens.
func TestServeRefusesBadFlagValuesAsTheSDKDoes(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--log-level", "loud"}, "loud is not included in trace,debug,info,warn,error"},
		{[]string{"serve", "--log-format", "xml"}, "xml is not included in text,json"},
	} {
		if code, _, stderr := runCLI(t, c.args...); code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, stderr)
		}
	}
	t.Setenv("CQ_TELEMETRY_LEVEL", "loud") // the SDK would end the process
	if code, _, stderr := runCLI(t, "serve"); code != ExitUsage || !strings.Contains(stderr, `CQ_TELEMETRY_LEVEL is "loud", not one of none, errors, stats, all`) {
		t.Errorf("exit %d, %s", code, stderr)
	}
	t.Setenv("CQ_TELEMETRY_LEVEL", "")
	t.Setenv("CQ_SENTRY_ENABLED", "true")
	if code, _, stderr := runCLI(t, "serve", "--no-sentry"); code != ExitUsage || !strings.Contains(stderr, "CQ_SENTRY_ENABLED and --no-sentry cannot be used together") {
		t.Errorf("exit %d, %s", code, stderr)
	}
}

// A failure of the SDK's serve (the address is taken) is told once, as
// every error, without the SDK's usage under the name "x".
func TestServeFailureIsToldOnceUnderTheProgramsName(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	code, stdout, stderr := runCLI(t, "serve", "--address", taken.Addr().String(), "--no-sentry")
	if code != ExitError || stdout != "" || !strings.HasPrefix(stderr, "Error: failed to listen") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// package refuses a version the hub does not take, a directory that is not
// the plugin's source, a target the SDK does not build and a missing
// message, before building anything.
func TestPackageRefusesBadArguments(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"package", "-m", "x", "1.0", ".."}, `VERSION "1.0" is not a semantic version`},
		{[]string{"package", "-m", "x", "v1.0", ".."}, `VERSION "v1.0" is not a semantic version`},
		{[]string{"package", "-m", "x", "v1.0.0", t.TempDir()}, "is not this plugin's source directory"},
		{[]string{"package", "-m", "x", "--target", "plan9_386", "v1.0.0", ".."}, `--target "plan9_386" is not one of linux_amd64, linux_arm64, windows_amd64, darwin_amd64, darwin_arm64`},
		{[]string{"package", "v1.0.0", ".."}, `required flag(s) "message" not set`},
	} {
		if code, _, stderr := runCLI(t, c.args...); code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, %s", c.args, code, stderr)
		}
	}
}

// package hands the SDK's package command the hub's two pages, and what it
// writes is what the hub takes: package.json, tables.json with every table,
// the spec's schema and docs/overview.md and docs/configuration.md (here
// with no target built; .ci/run builds one and runs it).
func TestPackageWritesWhatTheHubTakes(t *testing.T) {
	var stdout strings.Builder
	a := &app{stdin: strings.NewReader(""), stdout: &stdout, stderr: io.Discard}
	dist := t.TempDir()
	if err := a.pack(packageCommandFor(t, a, dist), "v1.2.3", "..", []plugin.BuildTarget{}); err != nil {
		t.Fatal(err)
	}
	var pkg serve.PackageJSON
	b, _ := os.ReadFile(filepath.Join(dist, "package.json"))
	if err := json.Unmarshal(b, &pkg); err != nil || pkg.Team != xplugin.Team || pkg.Name != xplugin.Name || pkg.Kind != "source" || pkg.Version != "v1.2.3" || pkg.Message != "Test release" {
		t.Errorf("package.json: %v %s", err, b)
	}
	var tables []struct{ Name string }
	b, _ = os.ReadFile(filepath.Join(dist, "tables.json"))
	if err := json.Unmarshal(b, &tables); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tb := range tables {
		names = append(names, tb.Name)
	}
	want := resources.Tables().FlattenTables().TableNames()
	slices.Sort(names)
	slices.Sort(want)
	if !slices.Equal(names, want) {
		t.Errorf("tables.json lists %v, want the plugin's tables %v", names, want)
	}
	if b, _ := os.ReadFile(filepath.Join(dist, "spec_json_schema.json")); !json.Valid(b) || !strings.Contains(string(b), "token_file") {
		t.Errorf("spec_json_schema.json: %.200s", b)
	}
	docs, _ := filepath.Glob(filepath.Join(dist, "docs", "*"))
	for i := range docs {
		docs[i] = filepath.Base(docs[i])
	}
	if strings.Join(docs, " ") != "configuration.md overview.md" {
		t.Errorf("docs: %v", docs)
	}
	mustContain(t, stdout.String(), "Packaged cq-source-x/source/x@v1.2.3", "cloudquery plugin publish -D "+dist)
}

// Every command in the tree that groups others refuses unknown ones (the
// rule strictArgs applies to commands added later, e.g. `bookmarks`).
func TestStrictGroupsAppliesToNewGroups(t *testing.T) {
	root := &cobra.Command{Use: "cq-source-x", SilenceErrors: true, SilenceUsage: true}
	group := &cobra.Command{Use: "bookmarks"}
	group.AddCommand(&cobra.Command{Use: "remove", Run: func(*cobra.Command, []string) {}})
	root.AddCommand(group)
	strictArgs(root)
	root.SetArgs([]string{"bookmarks", "remvoe"})
	root.SetOut(io.Discard)
	_, err := root.ExecuteC()
	if exitCode(err, true) != ExitUsage || !strings.Contains(err.Error(), "Did you mean this?\n\tremove") {
		t.Fatalf("%v", err)
	}
}
