package cqspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/spec"
)

var specNow = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func envOf(m map[string]string) Env {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

const minimalSpec = `kind: source
spec:
  name: x
  path: ./cq-source-x
  registry: local
  version: v0.0.0
  tables: ["x_bookmarks"]
  destinations: ["file"]
  spec:
    base_url: http://127.0.0.1:9999
    accounts:
      - user_id: "1001"
        access_token: "tok-1001"
`

func TestParse_Minimal(t *testing.T) {
	s, err := Parse([]byte(minimalSpec), "spec.yml", envOf(nil), specNow)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "x" || s.Registry != "local" || s.Document != 1 || !s.SkipDependentTables ||
		len(s.Tables) != 1 || s.Tables[0] != "x_bookmarks" || s.Plugin == nil ||
		s.Plugin.BaseURL != "http://127.0.0.1:9999" || s.Plugin.Accounts[0].AccessToken != "tok-1001" {
		t.Errorf("parsed %+v", s)
	}
}

func TestParse_EnvExpansionAsTheCLI(t *testing.T) {
	text := `# a comment may mention ${NOT_SET_ANYWHERE} without failing
kind: source
spec:
  name: x
  path: ./cq-source-x
  registry: local
  tables: ["${TABLE}"]
  destinations: ["file"]
  spec:
    base_url: "http://127.0.0.1:${PORT}"
    accounts:
      - user_id: "${USER_ID}"
        access_token: ${TOKEN}
        client_id: "${EMPTY}"
`
	env := envOf(map[string]string{"TABLE": "x_bookmarks", "PORT": "8080", "USER_ID": "1001", "TOKEN": "secret-token", "EMPTY": ""})
	s, err := Parse([]byte(text), "spec.yml", env, specNow)
	if err != nil {
		t.Fatal(err)
	}
	a := s.Plugin.Accounts[0]
	if s.Plugin.BaseURL != "http://127.0.0.1:8080" || a.UserID != "1001" || a.AccessToken != "secret-token" || a.ClientID != "" {
		t.Errorf("expanded: base_url %q, account %+v", s.Plugin.BaseURL, a)
	}
	// An unset variable is an error naming it (and every other unset one).
	_, err = Parse([]byte(text), "spec.yml", envOf(map[string]string{"TABLE": "x_bookmarks"}), specNow)
	if err == nil || !strings.Contains(err.Error(), "${PORT}") || !strings.Contains(err.Error(), "${TOKEN}") ||
		!strings.Contains(err.Error(), "not set") || strings.Contains(err.Error(), "NOT_SET_ANYWHERE") {
		t.Errorf("unset variables: %v", err)
	}
}

func TestParse_FileAndTimeExpansion(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token.txt")
	if err := os.WriteFile(tokenFile, []byte("tok-from-file"), 0o600); err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(minimalSpec, `"tok-1001"`, `"${file:`+tokenFile+`}"`, 1)
	text = strings.Replace(text, "version: v0.0.0", "version: v0.0.0\n  otel_endpoint: \"${time:2 days ago}\"", 1)
	s, err := Parse([]byte(text), "spec.yml", envOf(nil), specNow)
	if err != nil {
		t.Fatal(err)
	}
	if s.Plugin.Accounts[0].AccessToken != "tok-from-file" {
		t.Errorf("token %q", s.Plugin.Accounts[0].AccessToken)
	}
	missing := strings.Replace(minimalSpec, `"tok-1001"`, `"${file:`+filepath.Join(dir, "nope")+`}"`, 1)
	if _, err := Parse([]byte(missing), "spec.yml", envOf(nil), specNow); err == nil || !strings.Contains(err.Error(), "${file:") {
		t.Errorf("missing file: %v", err)
	}
	badTime := strings.Replace(minimalSpec, "version: v0.0.0", "version: v0.0.0\n  otel_endpoint: \"${time:whenever}\"", 1)
	if _, err := Parse([]byte(badTime), "spec.yml", envOf(nil), specNow); err == nil || !strings.Contains(err.Error(), "${time:whenever}") {
		t.Errorf("bad time: %v", err)
	}
}

func TestParse_Errors(t *testing.T) {
	replace := func(old, new string) string {
		if !strings.Contains(minimalSpec, old) {
			t.Fatalf("no %q in the spec", old)
		}
		return strings.Replace(minimalSpec, old, new, 1)
	}
	cases := []struct {
		name, text string
		want       []string // all must appear in the error
	}{
		{"unknown outer field", replace("  registry: local\n", "  registry: local\n  tabels: [\"*\"]\n"),
			[]string{"spec.yml (kind: source): line 6: ", `unknown field "tabels" (did you mean "tables"?)`}},
		{"unknown outer field, nothing close", replace("  registry: local\n", "  registry: local\n  colour: blue\n"),
			[]string{"spec.yml (kind: source): line 6: ", `unknown field "colour"`, "accepted: name, path"}},
		{"deprecated outer field", replace("  registry: local\n", "  registry: local\n  concurrency: 10\n"),
			[]string{`"concurrency" is no longer supported`, "spec.concurrency"}},
		{"unknown backend_options field", replace("  registry: local\n", "  registry: local\n  backend_options:\n    table: x\n"),
			[]string{`unknown field "backend_options.table"`}},
		{"unknown top-level field", "kind: source\nspecs: {}\n", []string{`unknown field "specs"`, "kind", "spec"}},
		{"unknown plugin field", replace("    base_url:", "    base_urll: http://x\n    base_url:"),
			[]string{`spec.yml (source "x"): line 10: spec: unknown field "base_urll" (did you mean "base_url"?)`}},
		{"missing plugin spec", strings.Split(minimalSpec, "  spec:\n")[0], []string{`spec.yml (source "x"): spec: the plugin spec is empty`, "accounts"}},
		{"missing name", replace("  name: x\n", ""), []string{`field "name" is required`}},
		{"missing path", replace("  path: ./cq-source-x\n", ""), []string{`field "path" is required`}},
		{"missing tables", replace("  tables: [\"x_bookmarks\"]\n", ""), []string{`field "tables" is required`}},
		{"missing destinations", replace("  destinations: [\"file\"]\n", ""), []string{`field "destinations" is required`}},
		{"version for cloudquery registry", replace("  registry: local\n  version: v0.0.0\n", "  version: 1.0.0\n"),
			[]string{`field "version" must start with v`}},
		{"bad registry", replace("registry: local", "registry: nowhere"), []string{`field "registry"`, "nowhere"}},
		{"wrong type", replace(`tables: ["x_bookmarks"]`, `tables: x_bookmarks`), []string{`field "tables" must be a list of strings`}},
		{"unknown table", replace(`tables: ["x_bookmarks"]`, `tables: ["x_tweets"]`),
			[]string{`field "tables": pattern "x_tweets" matches no table`, "x_bookmarks"}},
		{"unknown skip table", replace(`tables: ["x_bookmarks"]`, "tables: [\"*\"]\n  skip_tables: [\"nope_*\"]"),
			[]string{`field "skip_tables": pattern "nope_*"`}},
		{"unknown kind", "kind: sauce\nspec: {}\n", []string{`unknown kind "sauce"`}},
		{"missing kind", "spec:\n  name: x\n", []string{"`kind` is missing"}},
		{"no source", "kind: destination\nspec:\n  name: file\n", []string{"no `kind: source` document"}},
		{"bad yaml", "kind: source\nspec: [unclosed\n", []string{"not valid YAML"}},
		// YAML-to-JSON keeps the last of two keys: the first account list would be dropped.
		{"a key twice", minimalSpec + "    accounts:\n      - user_id: \"1002\"\n        access_token: \"tok-1002\"\n",
			[]string{"spec.yml", "a key appears twice", `mapping key "accounts" already defined`}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.text), "spec.yml", envOf(nil), specNow)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// Problems in the plugin's own spec (the source's `spec:`) name the file,
// the line and the field, in every section of the spec, and a misspelt
// field gets the name it was probably meant to be.
func TestParse_PluginSpecErrorsSayWhere(t *testing.T) {
	head := "kind: source\nspec:\n  name: x\n  path: ./cq-source-x\n  registry: local\n  tables: [\"*\"]\n  destinations: [file]\n  spec:\n"
	for _, tc := range []struct{ name, plugin, want string }{
		{"top level", "    acounts: []\n",
			`spec.yml (source "x"): line 9: spec: unknown field "acounts" (did you mean "accounts"?)`},
		{"account", "    accounts:\n      - access_token: a\n      - user_id: \"2\"\n        acess_token: b\n",
			`spec.yml (source "x"): line 12: spec.accounts[1]: unknown field "acess_token" (did you mean "access_token"?)`},
		{"oauth", "    oauth:\n      client_secrt: s\n    accounts: [{access_token: a}]\n",
			`spec.yml (source "x"): line 10: spec.oauth: unknown field "client_secrt" (did you mean "client_secret"?)`},
		{"fields", "    fields:\n      expansion: [author_id]\n    accounts: [{access_token: a}]\n",
			`spec.yml (source "x"): line 10: spec.fields: unknown field "expansion" (did you mean "expansions"?)`},
		{"planner", "    planner:\n      max_biled_posts: 100\n    accounts: [{access_token: a}]\n",
			`spec.yml (source "x"): line 10: spec.planner: unknown field "max_biled_posts" (did you mean "max_billed_posts"?)`},
		{"type in a list element", "    accounts:\n      - access_token: a\n        user_id: 1001\n",
			`spec.yml (source "x"): line 11: spec.accounts[0].user_id: must be a string, not the number 1001`},
		{"validation", "    base_url: api.x.com\n    accounts: [{access_token: a}]\n",
			`spec.yml (source "x"): line 9: spec.base_url: must be an absolute http(s) URL, got "api.x.com"`},
		{"several", "    planner:\n      max_page_size: big\n    accounts:\n      - acess_token: a\n",
			"spec.yml (source \"x\"): 2 problems in the plugin's spec (`spec:`):\n" +
				"  line 12: spec.accounts[0]: unknown field \"acess_token\" (did you mean \"access_token\"?)\n" +
				"  line 10: spec.planner.max_page_size: must be a whole number, not a string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(head+tc.plugin), "spec.yml", envOf(nil), specNow)
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error\n  %v\nwant\n  %s", err, tc.want)
			}
		})
	}
	// In a later document, the line is the file's.
	dest := "kind: destination\nspec:\n  name: file\n"
	_, err := Parse([]byte(dest+"---\n"+head+"    accounts: [{acess_token: a}]\n"), "multi.yml", envOf(nil), specNow)
	want := `multi.yml, document 2 (source "x"): line 13: spec.accounts[0]: unknown field "acess_token" (did you mean "access_token"?)`
	if err == nil || err.Error() != want {
		t.Fatalf("error\n  %v\nwant\n  %s", err, want)
	}
}

func TestParse_Documents(t *testing.T) {
	dest := "kind: destination\nspec:\n  name: file\n  path: cloudquery/file\n  version: v5.5.1\n  spec:\n    format: parquet\n"
	other := strings.NewReplacer("name: x", "name: aws", "path: ./cq-source-x", "path: cloudquery/aws").Replace(minimalSpec)
	other = strings.Replace(other, `tables: ["x_bookmarks"]`, `tables: ["x_api_usage"]`, 1) // still a valid table: only x is checked
	// Several documents: the destination is ignored, the source that is
	// this plugin is used.
	text := dest + "---\n" + other + "---\n" + minimalSpec
	s, err := Parse([]byte(text), "multi.yml", envOf(nil), specNow)
	if err != nil {
		t.Fatal(err)
	}
	if s.Document != 3 || s.Name != "x" {
		t.Errorf("picked document %d (%s)", s.Document, s.Name)
	}
	// A source named otherwise is still this plugin when its path is.
	renamed := strings.Replace(minimalSpec, "name: x", "name: my-x", 1)
	if s, err := Parse([]byte(other+"---\n"+renamed), "multi.yml", envOf(nil), specNow); err != nil || s.Name != "my-x" {
		t.Errorf("by path: %v %+v", err, s)
	}
	// Two sources of this plugin: ambiguous, listed.
	_, err = Parse([]byte(minimalSpec+"---\n"+renamed), "multi.yml", envOf(nil), specNow)
	if err == nil || !strings.Contains(err.Error(), `document 1: name "x"`) || !strings.Contains(err.Error(), `document 2: name "my-x"`) {
		t.Errorf("ambiguous: %v", err)
	}
	// Errors in a later document name it.
	_, err = Parse([]byte(dest+"---\n"+strings.Replace(minimalSpec, "name: x", "nam: x", 1)), "multi.yml", envOf(nil), specNow)
	if err == nil || !strings.Contains(err.Error(), "multi.yml, document 2 (kind: source)") {
		t.Errorf("document error: %v", err)
	}
	// CRLF line endings and a leading separator work.
	crlf := strings.ReplaceAll("---\n"+minimalSpec, "\n", "\r\n")
	if _, err := Parse([]byte(crlf), "crlf.yml", envOf(nil), specNow); err != nil {
		t.Errorf("CRLF: %v", err)
	}
}

func TestSelectTables(t *testing.T) {
	names := func(tables, skip []string, skipDep bool) string {
		ts, err := SelectTables(tables, skip, skipDep)
		if err != nil {
			return "error: " + err.Error()
		}
		return strings.Join(ts.FlattenTables().TableNames(), ",")
	}
	for _, c := range []struct {
		tables, skip []string
		skipDep      bool
		want         string
	}{
		{[]string{"*"}, nil, true, "x_bookmarks,x_bookmark_authors,x_bookmark_media,x_bookmark_referenced_posts,x_bookmark_folders,x_bookmark_folder_posts,x_media_files,x_post_compliance,x_api_usage"},
		{[]string{"x_bookmarks"}, nil, true, "x_bookmarks"},
		{[]string{"x_bookmarks"}, nil, false, "x_bookmarks,x_bookmark_authors,x_bookmark_media,x_bookmark_referenced_posts"},
		{[]string{"x_bookmark*"}, nil, true, "x_bookmarks,x_bookmark_authors,x_bookmark_media,x_bookmark_referenced_posts,x_bookmark_folders,x_bookmark_folder_posts"},
		{[]string{"x_bookmark_folders"}, nil, true, "x_bookmark_folders"},
		{[]string{"x_bookmark_folders"}, nil, false, "x_bookmark_folders,x_bookmark_folder_posts"},
		{[]string{"*"}, []string{"x_bookmark_folder*", "x_bookmark_*s", "x_bookmark_media"}, true, "x_bookmarks,x_media_files,x_post_compliance,x_api_usage"},
		{[]string{"*"}, []string{"x_bookmark_folder_posts"}, true, "x_bookmarks,x_bookmark_authors,x_bookmark_media,x_bookmark_referenced_posts,x_bookmark_folders,x_media_files,x_post_compliance,x_api_usage"},
	} {
		if got := names(c.tables, c.skip, c.skipDep); got != c.want {
			t.Errorf("tables %v skip %v skip_dependent %v: %s, want %s", c.tables, c.skip, c.skipDep, got, c.want)
		}
	}
	if got := names([]string{"*"}, []string{"*"}, true); !strings.Contains(got, "leave no table") {
		t.Errorf("everything skipped: %s", got)
	}
}

// readSpecFromElsewhere writes text as dir/x.yml and reads it from another
// working directory: the spec parsed, and the one the plugin is started with.
func readSpecFromElsewhere(t *testing.T, dir, text string) (*Source, *spec.Spec) {
	t.Helper()
	path := filepath.Join(dir, "x.yml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	s, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	started, err := spec.Parse(s.PluginSpec)
	if err != nil {
		t.Fatal(err)
	}
	return s, started
}

// A relative token_file is relative to the spec file's directory, in the
// parsed spec and in the JSON the plugin is started with; an absolute one
// is left alone.
func TestRead_RelativeTokenFilesAreRelativeToTheSpecFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conf")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(minimalSpec, `      - user_id: "1001"
        access_token: "tok-1001"
`, `      - token_file: tokens/alice.json
      - Token_File: ./bob.json
      - token_file: /etc/x/carol.json
`, 1)
	s, started := readSpecFromElsewhere(t, dir, text)
	want := []string{filepath.Join(dir, "tokens/alice.json"), filepath.Join(dir, "bob.json"), "/etc/x/carol.json"}
	for i, w := range want {
		if s.Plugin.Accounts[i].TokenFile != w || started.Accounts[i].TokenFile != w {
			t.Errorf("accounts[%d].token_file: parsed %q, plugin started with %q, want %q", i, s.Plugin.Accounts[i].TokenFile, started.Accounts[i].TokenFile, w)
		}
	}
	if started.BaseURL != "http://127.0.0.1:9999" {
		t.Errorf("the rest of the spec changed: %+v", started)
	}
}

// A relative compliance.bearer_token_file is relative to the spec file too,
// in the spec parsed and in the one the plugin is started with, whatever
// the case of its keys; an absolute one is kept.
func TestRead_RelativeBearerTokenFileIsRelativeToTheSpecFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "conf")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	absolute := filepath.Join(t.TempDir(), "bearer-token.txt")
	for file, want := range map[string]string{
		"./bearer.txt":       filepath.Join(dir, "bearer.txt"),
		"secrets/bearer.txt": filepath.Join(dir, "secrets/bearer.txt"),
		absolute:             absolute,
	} {
		os.MkdirAll(filepath.Dir(want), 0o755)
		if err := os.WriteFile(want, []byte("app-only-token\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		text := minimalSpec + "    Compliance:\n      Bearer_Token_File: " + file + "\n"
		s, started := readSpecFromElsewhere(t, dir, text)
		if s.Plugin.Compliance.BearerTokenFile != want || started.Compliance.BearerTokenFile != want {
			t.Errorf("%s: parsed %q, plugin started with %q, want %q", file, s.Plugin.Compliance.BearerTokenFile, started.Compliance.BearerTokenFile, want)
		}
		if started.Accounts[0].AccessToken != "tok-1001" || started.Compliance.Every.Duration() != spec.DefaultComplianceEvery {
			t.Errorf("%s: the rest of the spec changed: %+v", file, started)
		}
	}
}

// A ${file:PATH} reads at most 1 MiB, as a token file does: more is an
// error naming the reference, not a spec of any size held in memory.
func TestParse_AFileReferenceReadsAtMostOneMiB(t *testing.T) {
	big := filepath.Join(t.TempDir(), "big")
	if err := os.WriteFile(big, make([]byte, 1<<20+1), 0o600); err != nil {
		t.Fatal(err)
	}
	text := strings.Replace(minimalSpec, `"tok-1001"`, `"${file:`+big+`}"`, 1)
	if _, err := Parse([]byte(text), "spec.yml", envOf(nil), specNow); err == nil || !strings.Contains(err.Error(), "${file:"+big+"}: "+big+" is larger than 1 MiB") {
		t.Errorf("a file of 1 MiB + 1 byte: %v", err)
	}
}
