// Package cqspec reads CloudQuery spec files as the CloudQuery CLI does:
// the documents of a YAML file, their ${file:...}, ${time:...} and ${ENV}
// substitutions, the checks of a source spec, the plugin's own spec
// (spec.Parse) and the table selection. The exporter and the program's
// commands read the spec file a CloudQuery sync uses with it.
package cqspec

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/configtype"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/internal/plural"
	"github.com/cq-source-x/cq-source-x/internal/smallfile"
	"github.com/cq-source-x/cq-source-x/internal/suggest"
	"github.com/cq-source-x/cq-source-x/resources"
	"github.com/cq-source-x/cq-source-x/spec"
	"github.com/ghodss/yaml"
	yamlv3 "gopkg.in/yaml.v3"
)

// Source is the source document of a CloudQuery spec file, checked as the
// CloudQuery CLI checks it: its fields are the CLI's source spec
// (cli/internal/specs, "Source Spec Reference"), every documented one and
// no other.
type Source struct {
	Document int `json:"-"` // the source document's index in the file, from 1

	Name                    string          `json:"name"`
	Version                 string          `json:"version"`
	Path                    string          `json:"path"`
	Registry                string          `json:"registry"`
	DockerRegistryAuthToken string          `json:"docker_registry_auth_token"`
	Tables                  []string        `json:"tables"`
	SkipTables              []string        `json:"skip_tables"`
	SkipDependentTables     bool            `json:"skip_dependent_tables"` // default true
	Destinations            []string        `json:"destinations"`
	BackendOptions          json.RawMessage `json:"backend_options"` // checked only: the exporter keeps its state in its output directory
	DeterministicCQID       bool            `json:"deterministic_cq_id"`
	OtelEndpoint            string          `json:"otel_endpoint"`
	OtelEndpointInsecure    bool            `json:"otel_endpoint_insecure"`
	// Plugin is the nested `spec:` (the plugin's own spec), parsed and
	// validated by spec.Parse; PluginSpec, what the plugin is started with:
	// Plugin as JSON, its token files' paths made absolute.
	PluginSpec json.RawMessage `json:"spec"`
	Plugin     *spec.Spec      `json:"-"`
}

var sourceFieldNames = []string{
	"name", "path", "registry", "version", "docker_registry_auth_token", "tables", "skip_tables",
	"skip_dependent_tables", "destinations", "backend_options", "spec", "deterministic_cq_id",
	"otel_endpoint", "otel_endpoint_insecure",
}

// deprecatedFields were removed from the CLI's source spec in v3.6.0; the
// CLI rejects them as unknown.
var deprecatedFields = map[string]string{
	"concurrency":  "set the plugin's own `spec.concurrency` instead",
	"scheduler":    "it was removed in CloudQuery CLI v3.6.0",
	"backend":      "use `backend_options` (the exporter keeps its state in the output directory and ignores it)",
	"backend_spec": "use `backend_options` (the exporter keeps its state in the output directory and ignores it)",
}

var registries = []string{"cloudquery", "github", "local", "grpc", "docker"}

// The CLI's substitutions (expand).
var (
	fileRef = regexp.MustCompile(`\$\{file:([^}]+)\}`)
	timeRef = regexp.MustCompile(`\$\{time:([^}]+)\}`)
	envRef  = regexp.MustCompile(`\$\{([^}]+)\}`)
)

// Env looks up environment variables (os.LookupEnv).
type Env func(string) (string, bool)

// Read reads and checks a CloudQuery spec file and returns its source
// document for this plugin, with the token files' relative paths made
// relative to the spec file's directory: the exporter is run from cron and
// scripts, from any directory.
func Read(path string) (*Source, error) {
	data, err := smallfile.Read(path, maxFile)
	if err != nil {
		return nil, fmt.Errorf("reading the spec file: %w", err)
	}
	src, err := Parse(data, path, os.LookupEnv, time.Now())
	if err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	if err := src.resolveTokenFiles(filepath.Dir(abs)); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return src, nil
}

// resolveTokenFiles joins dir to every relative path of a token file, in
// Plugin and in PluginSpec (what the plugin is started with: Plugin, as
// JSON). It then refuses, before any request, what a sync finds only as it
// runs: two accounts whose token files are one file named in other words
// (spec.Validate compares the paths as written), and a
// compliance.bearer_token_file that holds no bearer token.
func (s *Source) resolveTokenFiles(dir string) (err error) {
	resolve := func(path string) string {
		if filepath.IsAbs(path) {
			return path
		}
		return filepath.Join(dir, path)
	}
	seen := map[string]int{}
	for i := range s.Plugin.Accounts {
		a := &s.Plugin.Accounts[i]
		if a.TokenFile == "" {
			continue
		}
		a.TokenFile = resolve(a.TokenFile)
		if j, dup := seen[a.TokenFile]; dup {
			return fmt.Errorf("spec.accounts[%d].token_file: %s is accounts[%d].token_file too: a token file is one user's, whose posts would be read, and billed, twice", i, a.TokenFile, j)
		}
		seen[a.TokenFile] = i
	}
	if c := s.Plugin.Compliance; c != nil && c.BearerTokenFile != "" {
		c.BearerTokenFile = resolve(c.BearerTokenFile)
		if _, err := c.ReadBearerToken(); err != nil {
			return fmt.Errorf("spec.%w", err)
		}
	}
	s.PluginSpec, err = json.Marshal(s.Plugin)
	return err
}

// Parse parses the text of a spec file named name as the CloudQuery CLI
// does: documents separated by "---" lines, comments dropped, then in each
// document ${file:PATH} (relative to the current directory), ${time:...}
// and ${VAR} (an unset variable is an error) replaced. Unknown fields and
// missing required ones are errors naming the document, line and field.
func Parse(data []byte, name string, env Env, now time.Time) (*Source, error) {
	text := bytes.ReplaceAll(data, []byte("\r\n"), []byte("\n"))
	docs := bytes.Split(text, []byte("\n---\n"))
	firstLines := make([]int, len(docs)) // line of the file each document starts on
	firstLines[0] = 1
	for i := 1; i < len(docs); i++ {
		firstLines[i] = firstLines[i-1] + bytes.Count(docs[i-1], []byte("\n")) + 2
	}
	docName := func(i int) string { // i is 1-based
		if len(docs) == 1 {
			return name
		}
		return fmt.Sprintf("%s, document %d", name, i)
	}
	var sources []*Source
	for i, doc := range docs {
		where := docName(i + 1)
		kind, body, err := readDocument(doc, env, now)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", where, locate(err, doc, firstLines[i]))
		}
		switch kind {
		case "": // an empty document (a leading or trailing ---)
		case "source":
			src, err := parseSource(body)
			if err != nil {
				return nil, fmt.Errorf("%s (kind: source): %w", where, locate(err, doc, firstLines[i]))
			}
			src.Document = i + 1
			sources = append(sources, src)
		case "destination", "transformer":
			// Not the exporter's business: it writes Parquet itself.
		default:
			return nil, fmt.Errorf("%s: unknown kind %q (want source, destination or transformer)", where, kind)
		}
	}
	src, err := pickSource(sources, name)
	if err != nil {
		return nil, err
	}
	if err := checkSource(src); err != nil {
		return nil, fmt.Errorf("%s (source %q): %w", docName(src.Document), src.Name, locate(err, docs[src.Document-1], firstLines[src.Document-1]))
	}
	return src, nil
}

// keyError is a problem at a key of a spec file's document: path leads
// from the document's root to the key (list indexes in decimal).
type keyError struct {
	path []string
	msg  string
}

func (e *keyError) Error() string { return e.msg }

// locate prefixes the problems err is about, a *keyError or what spec.Parse
// found in the source's `spec:`, with the lines of their keys in doc, a
// document of the spec file that starts on line first. The document before
// substitution is searched: ${...} references are values, so keys are
// where they were.
func locate(err error, doc []byte, first int) error {
	var problems []keyError
	var ke *keyError
	var se *spec.Error
	switch {
	case errors.As(err, &ke):
		problems = []keyError{*ke}
	case errors.As(err, &se):
		for _, p := range se.Problems {
			path := append([]string{"spec", "spec"}, splitPath(p.Path)...)
			if p.Key != "" {
				path = append(path, p.Key)
			}
			p.Path = strings.TrimSuffix("spec."+p.Path, ".")
			problems = append(problems, keyError{path, p.String()})
		}
	default:
		return err
	}
	lines := make([]string, len(problems))
	for i, p := range problems {
		lines[i] = p.msg
		if l := lineOf(doc, p.path); l > 0 {
			lines[i] = fmt.Sprintf("line %d: %s", first+l-1, p.msg)
		}
	}
	if len(lines) == 1 {
		return errors.New(lines[0])
	}
	return fmt.Errorf("%d problems in the plugin's spec (`spec:`):\n  %s", len(lines), strings.Join(lines, "\n  "))
}

// splitPath splits a path such as accounts[1].user_id into keys and list
// indexes.
func splitPath(path string) []string {
	return strings.FieldsFunc(path, func(r rune) bool { return r == '.' || r == '[' || r == ']' })
}

// lineOf returns the line of the key or list element at path in doc, 0 if
// there is none.
func lineOf(doc []byte, path []string) int {
	var root yamlv3.Node
	if yamlv3.Unmarshal(doc, &root) != nil || len(root.Content) == 0 {
		return 0
	}
	n, line := root.Content[0], 0
	for _, step := range path {
		if n.Kind == yamlv3.AliasNode {
			n = n.Alias
		}
		switch n.Kind {
		case yamlv3.MappingNode:
			i := 0
			for i+1 < len(n.Content) && n.Content[i].Value != step {
				i += 2
			}
			if i+1 >= len(n.Content) {
				return 0
			}
			line, n = n.Content[i].Line, n.Content[i+1]
		case yamlv3.SequenceNode:
			i, err := strconv.Atoi(step)
			if err != nil || i >= len(n.Content) {
				return 0
			}
			n = n.Content[i]
			line = n.Line
		default:
			return 0
		}
	}
	return line
}

// readDocument expands one document and returns its kind and its `spec`
// as JSON; an empty document has neither.
func readDocument(doc []byte, env Env, now time.Time) (string, []byte, error) {
	if err := repeatedKeys(doc); err != nil {
		return "", nil, err
	}
	doc, err := stripComments(doc)
	if err != nil {
		return "", nil, fmt.Errorf("not valid YAML: %w", err)
	}
	if doc, err = expand(doc, env, now); err != nil {
		return "", nil, err
	}
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return "", nil, fmt.Errorf("not valid YAML after substitution: %w", err)
	}
	if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
		return "", nil, nil
	}
	var top struct {
		Kind string          `json:"kind"`
		Spec json.RawMessage `json:"spec"`
	}
	if err := strictDecode(j, &top); err != nil {
		ke := decodeError(err, nil, []string{"kind", "spec"})
		ke.msg += " (a document has only `kind` and `spec`)"
		return "", nil, ke
	}
	if top.Kind == "" {
		return "", nil, errors.New("`kind` is missing: each document needs `kind: source` or `kind: destination`")
	}
	return top.Kind, top.Spec, nil
}

// repeatedKeys refuses a mapping that holds a key twice. The YAML-to-JSON
// conversion keeps the last one silently: a second `accounts:` would drop
// every account of the first. (yaml.v3 reports repeats; its other errors
// are left to the conversion, which reads YAML as the CLI does.)
func repeatedKeys(doc []byte) error {
	var v any
	err := yamlv3.Unmarshal(doc, &v)
	var terr *yamlv3.TypeError
	if errors.As(err, &terr) {
		for _, e := range terr.Errors {
			if strings.Contains(e, "already defined") {
				return fmt.Errorf("a key appears twice: %s", e)
			}
		}
	}
	return nil
}

// stripComments drops YAML comments, as the CLI does, by converting to JSON
// and back with the ${...} references replaced by numbers meanwhile: one in
// a comment is not expanded, and one in a value keeps its quoting.
func stripComments(doc []byte) ([]byte, error) {
	r := rand.New(rand.NewSource(1))
	placeholders := map[string]string{}
	doc = envRef.ReplaceAllFunc(doc, func(m []byte) []byte {
		k := strconv.Itoa(r.Int())
		for bytes.Contains(doc, []byte(k)) || placeholders[k] != "" {
			k = strconv.Itoa(r.Int())
		}
		placeholders[k] = string(m)
		return []byte(k)
	})
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return nil, err
	}
	out, err := yaml.JSONToYAML(j)
	if err != nil {
		return nil, err
	}
	for k, v := range placeholders {
		out = bytes.ReplaceAll(out, []byte(k), []byte(v))
	}
	return out, nil
}

// expand applies the CLI's substitutions, in its order: ${file:PATH},
// then ${time:...}, then ${ENV_VAR}.
func expand(doc []byte, env Env, now time.Time) ([]byte, error) {
	var missing []string
	for _, sub := range []struct {
		re    *regexp.Regexp // group 1 is the reference
		kind  string
		value func(ref string) ([]byte, error)
	}{
		{fileRef, "file", readRef},
		{timeRef, "time", func(ref string) ([]byte, error) {
			t, err := configtype.ParseTime(ref)
			if err != nil {
				return nil, err
			}
			return []byte(t.AsTime(now).Format(time.RFC3339)), nil
		}},
		{envRef, "", func(name string) ([]byte, error) {
			v, ok := env(name)
			if ref := "${" + name + "}"; !ok && !slices.Contains(missing, ref) {
				missing = append(missing, ref)
			}
			return []byte(v), nil
		}},
	} {
		var errs []error
		doc = sub.re.ReplaceAllFunc(doc, func(m []byte) []byte {
			ref := string(sub.re.FindSubmatch(m)[1])
			v, err := sub.value(ref)
			if err != nil {
				errs = append(errs, fmt.Errorf("${%s:%s}: %w", sub.kind, ref, err))
			}
			return v
		})
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
	}
	if n := len(missing); n > 0 {
		return nil, fmt.Errorf("%s %s %s not set (the CloudQuery CLI fails on unset variables too; set it, even to an empty value)",
			plural.Pick(n, "environment variable", "environment variables"), strings.Join(missing, ", "), plural.Pick(n, "is", "are"))
	}
	return doc, nil
}

// readRef reads the file of a ${file:PATH}.
func readRef(path string) ([]byte, error) {
	content, err := smallfile.Read(path, maxFile)
	if err != nil {
		return nil, err
	}
	if bytes.ContainsAny(content, "\n\r") && json.Valid(content) {
		// A multi-line JSON file goes inside a quoted YAML string: escape it.
		quoted := strconv.Quote(string(content))
		return []byte(quoted[1 : len(quoted)-1]), nil
	}
	return content, nil
}

// maxFile bounds the spec file and what a ${file:PATH} reads: a spec, a
// secret or a snippet of spec is a few kilobytes, and a file of more is a
// mistake (a data file, a device) that must not be read whole.
const maxFile = 1 << 20

func strictDecode(j []byte, out any) error {
	dec := json.NewDecoder(bytes.NewReader(j))
	dec.DisallowUnknownFields()
	dec.UseNumber()
	return dec.Decode(out)
}

// decodeError names the field of a JSON decoding error; path leads from the
// document's root to the object decoded.
func decodeError(err error, path []string, accepted []string) *keyError {
	prefix := ""
	if len(path) > 1 { // the source's fields are named from its `spec:`
		prefix = strings.Join(path[1:], ".") + "."
	}
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		want := typeErr.Type.String()
		switch typeErr.Type.Kind().String() {
		case "slice":
			want = "a list of " + typeErr.Type.Elem().String() + "s"
		case "string":
			want = "a string"
		case "bool":
			want = "true or false"
		case "struct", "map", "ptr":
			want = "an object"
		}
		return &keyError{path: append(path, splitPath(typeErr.Field)...),
			msg: fmt.Sprintf("field %q must be %s, not a %s", strings.TrimSuffix(prefix+typeErr.Field, "."), want, typeErr.Value)}
	}
	msg := err.Error()
	if f, ok := strings.CutPrefix(msg, "json: unknown field "); ok {
		f = strings.Trim(f, `"`)
		ke := &keyError{path: append(path, f)}
		if why, ok := deprecatedFields[f]; ok && len(path) == 1 {
			ke.msg = fmt.Sprintf("field %q is no longer supported: %s", f, why)
		} else if s := suggest.Phrase(f, accepted); s != "" {
			ke.msg = fmt.Sprintf("unknown field %q%s", prefix+f, s)
		} else {
			ke.msg = fmt.Sprintf("unknown field %q; accepted: %s", prefix+f, strings.Join(accepted, ", "))
		}
		return ke
	}
	return &keyError{msg: msg}
}

func parseSource(body []byte) (*Source, error) {
	if len(bytes.TrimSpace(body)) == 0 || bytes.Equal(bytes.TrimSpace(body), []byte("null")) {
		return nil, errors.New("`spec` is missing or empty: it needs at least name, path, tables, destinations and the plugin's own spec")
	}
	s := &Source{SkipDependentTables: true}
	if err := strictDecode(body, s); err != nil { // body is JSON: the error is the decoder's
		return nil, decodeError(err, []string{"spec"}, sourceFieldNames)
	}
	if len(s.BackendOptions) > 0 {
		var backend struct {
			TableName  string `json:"table_name"`
			Connection string `json:"connection"`
		}
		if err := strictDecode(s.BackendOptions, &backend); err != nil {
			return nil, decodeError(err, []string{"spec", "backend_options"}, []string{"table_name", "connection"})
		}
	}
	s.Registry = cmp.Or(s.Registry, "cloudquery")
	return s, nil
}

// pickSource chooses the source document: the only one, or the only one
// that names this plugin.
func pickSource(sources []*Source, file string) (*Source, error) {
	switch len(sources) {
	case 0:
		return nil, fmt.Errorf("%s: no `kind: source` document", file)
	case 1:
		return sources[0], nil
	}
	mine := slices.DeleteFunc(slices.Clone(sources), func(s *Source) bool { return !isThisPlugin(s) })
	if len(mine) == 1 {
		return mine[0], nil
	}
	var list []string
	for _, s := range sources {
		list = append(list, fmt.Sprintf("document %d: name %q, path %q", s.Document, s.Name, s.Path))
	}
	why := "none of them is this plugin (name x, or a path ending in cq-source-x)"
	if len(mine) > 1 {
		why = fmt.Sprintf("%d of them are this plugin", len(mine))
	}
	return nil, fmt.Errorf("%s: %d source documents and %s; put the one to export in a file of its own:\n  %s",
		file, len(sources), why, strings.Join(list, "\n  "))
}

func isThisPlugin(s *Source) bool {
	base := strings.TrimSuffix(filepath.Base(filepath.ToSlash(s.Path)), ".exe")
	if i := strings.LastIndexAny(base, "@:"); i > 0 && s.Registry == "docker" {
		base = base[:i]
	}
	return s.Name == "x" || base == "cq-source-x" || s.Path == "cq-source-x/x"
}

// checkSource applies the CLI's checks of a source spec, then the plugin's
// own (spec.Parse) and the table selection.
func checkSource(s *Source) error {
	var errs []error
	if s.Name == "" {
		errs = append(errs, errors.New("field \"name\" is required"))
	}
	if s.Path == "" {
		errs = append(errs, errors.New("field \"path\" is required (for example ./cq-source-x with registry: local)"))
	}
	if !slices.Contains(registries, s.Registry) {
		errs = append(errs, fmt.Errorf("field \"registry\": %q is not one of %s", s.Registry, strings.Join(registries, ", ")))
	} else if s.Registry == "cloudquery" || s.Registry == "github" {
		switch {
		case s.Version == "":
			errs = append(errs, fmt.Errorf("field \"version\" is required with registry %s", s.Registry))
		case !strings.HasPrefix(s.Version, "v"):
			errs = append(errs, fmt.Errorf("field \"version\" must start with v, not %q", s.Version))
		}
	}
	if len(s.Tables) == 0 {
		errs = append(errs, errors.New("field \"tables\" is required: list the tables to export, e.g. [\"*\"] or [\"x_bookmarks\"]"))
	}
	if len(s.Destinations) == 0 {
		errs = append(errs, errors.New("field \"destinations\" is required by the CloudQuery CLI (export ignores it; any name will do)"))
	}
	for _, f := range []struct {
		name   string
		values []string
	}{{"tables", s.Tables}, {"skip_tables", s.SkipTables}, {"destinations", s.Destinations}} {
		if slices.Contains(f.values, "") {
			errs = append(errs, fmt.Errorf("field %q has an empty entry", f.name))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if _, err := SelectTables(s.Tables, s.SkipTables, s.SkipDependentTables); err != nil {
		return err
	}
	var err error
	s.Plugin, err = spec.Parse(s.PluginSpec)
	return err
}

// SelectTables returns the tables a sync with these patterns covers, in the
// plugin's order, as the CLI selects them (glob patterns; children of a
// selected table only when skipDependent is false).
func SelectTables(tables, skip []string, skipDependent bool) (schema.Tables, error) {
	all := resources.Tables()
	selected, err := all.FilterDfs(tables, skip, skipDependent)
	if err != nil {
		var pm *schema.PatternMatchError
		if errors.As(err, &pm) {
			return nil, fmt.Errorf("field %q: pattern %q matches no table of this plugin (%s)", pm.Key, pm.Pattern, strings.Join(all.FlattenTables().TableNames(), ", "))
		}
		return nil, err
	}
	if len(selected.FlattenTables()) == 0 {
		return nil, errors.New("fields \"tables\" and \"skip_tables\" leave no table to export")
	}
	return selected, nil
}
