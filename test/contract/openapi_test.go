package contract

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// revision is one revision of X's OpenAPI description, as testdata holds
// its parts: the operations the project uses, and the schemas of their
// responses, compiled.
type revision struct {
	version  string
	paths    map[string]map[string]operation // path → method → operation
	params   map[string]parameter            // components.parameters
	schemas  map[string]map[string]any       // components.schemas, as the description has them
	compiler *jsonschema.Compiler
	base     string // the URL the components' schemas are a resource at
	n        int    // inline schemas added
}

type operation struct {
	Parameters  []parameter `json:"parameters"`
	RequestBody *struct {
		Content map[string]struct {
			Schema map[string]any `json:"schema"`
		} `json:"content"`
	} `json:"requestBody"`
	Responses map[string]struct {
		Content map[string]struct {
			Schema map[string]any `json:"schema"`
		} `json:"content"`
	} `json:"responses"`
}

type parameter struct {
	Ref      string         `json:"$ref"`
	Name     string         `json:"name"`
	In       string         `json:"in"`
	Required bool           `json:"required"`
	Schema   map[string]any `json:"schema"`
}

// loadRevision reads testdata/openapi-<version>.json.
func loadRevision(t *testing.T, version string) *revision {
	t.Helper()
	data, err := os.ReadFile("testdata/openapi-" + version + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Info       struct{ Version string }
		Paths      map[string]map[string]json.RawMessage
		Components struct {
			Parameters map[string]parameter
			Schemas    map[string]map[string]any
		}
	}
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Info.Version != version {
		t.Fatalf("testdata/openapi-%s.json is revision %s", version, doc.Info.Version)
	}
	r := &revision{version: version, paths: map[string]map[string]operation{}, params: doc.Components.Parameters,
		schemas: doc.Components.Schemas, compiler: jsonschema.NewCompiler(), base: "mem://openapi-" + version + "/components.json"}
	for path, methods := range doc.Paths {
		r.paths[path] = map[string]operation{}
		for method, raw := range methods {
			if method == "parameters" {
				continue // path-level parameters: none in the operations used
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatalf("%s %s: %v", method, path, err)
			}
			r.paths[path][strings.ToUpper(method)] = op
		}
	}
	schemas := map[string]any{}
	for name, s := range doc.Components.Schemas {
		schemas[name] = asJSONSchema(s, r.schemas)
	}
	r.compiler.DefaultDraft(jsonschema.Draft2020)
	if err := r.compiler.AddResource(r.base, r.rebased(map[string]any{"$defs": schemas})); err != nil {
		t.Fatal(err)
	}
	return r
}

// rebased is v (decoded JSON) with its references to components.schemas
// made references to the components resource, and its numbers
// json.Numbers, as the validator wants.
func (r *revision) rebased(v any) any {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	b = bytes.ReplaceAll(b, []byte(`"#/components/schemas/`), []byte(`"`+r.base+`#/$defs/`))
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		panic(err)
	}
	return doc
}

// asJSONSchema makes an OpenAPI 3.0 schema a JSON schema: "nullable" adds
// null to the types, and a discriminator whose mapping names schemas that
// extend this one (allOf this one and more) checks an object against the
// extension its discriminating property names, as OpenAPI means it.
func asJSONSchema(v any, all map[string]map[string]any) any {
	switch v := v.(type) {
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = asJSONSchema(e, all)
		}
		return out
	case map[string]any:
		out := map[string]any{}
		for k, e := range v {
			out[k] = asJSONSchema(e, all)
		}
		if nullable, _ := v["nullable"].(bool); nullable {
			if t, ok := v["type"].(string); ok {
				out["type"] = []any{t, "null"}
			}
			if enum, ok := v["enum"].([]any); ok {
				out["enum"] = append(slices.Clone(enum), nil)
			}
		}
		if d, ok := v["discriminator"].(map[string]any); ok {
			if conds := extensions(d, all); len(conds) > 0 {
				out["allOf"] = append(asSlice(out["allOf"]), conds...)
			}
		}
		return out
	}
	return v
}

// extensions are the if/then conditions of a discriminator over schemas
// that extend the discriminated one: for each value its mapping names, the
// parts of the extension beside the discriminated schema.
func extensions(d map[string]any, all map[string]map[string]any) []any {
	prop, _ := d["propertyName"].(string)
	mapping, _ := d["mapping"].(map[string]any)
	var conds []any
	for _, value := range slices.Sorted(mapKeys(mapping)) {
		ref, _ := mapping[value].(string)
		ext := all[strings.TrimPrefix(ref, "#/components/schemas/")]
		var rest []any
		for _, part := range asSlice(ext["allOf"]) {
			if m, ok := part.(map[string]any); ok && m["$ref"] == nil {
				rest = append(rest, asJSONSchema(m, all))
			}
		}
		if len(rest) > 0 {
			conds = append(conds, map[string]any{
				"if":   map[string]any{"properties": map[string]any{prop: map[string]any{"const": value}}, "required": []any{prop}},
				"then": map[string]any{"allOf": rest},
			})
		}
	}
	return conds
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}

func mapKeys(m map[string]any) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// operation finds the operation of a request: the path of the description
// its path matches, with most segments the same.
func (r *revision) operation(method, path string) (string, operation, bool) {
	best, score := "", -1
	for template, methods := range r.paths {
		if _, ok := methods[method]; !ok {
			continue
		}
		if same, ok := matches(strings.Split(template, "/"), strings.Split(path, "/")); ok && same > score {
			best, score = template, same
		}
	}
	if best == "" {
		return "", operation{}, false
	}
	return best, r.paths[best][method], true
}

// matches reports whether path has the segments of template, a {name}
// standing for any, and how many are the same.
func matches(template, path []string) (int, bool) {
	if len(template) != len(path) {
		return 0, false
	}
	same := 0
	for i := range template {
		switch {
		case template[i] == path[i]:
			same++
		case !strings.HasPrefix(template[i], "{"):
			return 0, false
		}
	}
	return same, true
}

// resolve is p with its reference to components.parameters followed.
func (r *revision) resolve(p parameter) parameter {
	if p.Ref != "" {
		return r.params[strings.TrimPrefix(p.Ref, "#/components/parameters/")]
	}
	return p
}

// checkRequest returns what of a request the revision does not declare: a
// query parameter it does not have, a value its schema does not allow, a
// required parameter left out, a body of another shape.
func (r *revision) checkRequest(method, path string, query url.Values, body []byte) []string {
	template, op, ok := r.operation(method, path)
	if !ok {
		return []string{fmt.Sprintf("%s %s is no operation of revision %s", method, path, r.version)}
	}
	var problems []string
	declared := map[string]parameter{}
	segments := strings.Split(path, "/")
	for _, p := range op.Parameters {
		p = r.resolve(p)
		switch p.In {
		case "query":
			declared[p.Name] = p
		case "path":
			i := slices.Index(strings.Split(template, "/"), "{"+p.Name+"}")
			if problem := r.checkValue(p.Schema, segments[i]); problem != "" {
				problems = append(problems, fmt.Sprintf("%s %s: path parameter %s=%s: %s", method, template, p.Name, segments[i], problem))
			}
		}
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range query {
			if !yield(k) {
				return
			}
		}
	}) {
		p, ok := declared[name]
		if !ok {
			problems = append(problems, fmt.Sprintf("%s %s: query parameter %s is not one of revision %s", method, template, name, r.version))
			continue
		}
		for _, v := range query[name] {
			if problem := r.checkValue(p.Schema, v); problem != "" {
				problems = append(problems, fmt.Sprintf("%s %s: %s=%s: %s", method, template, name, v, problem))
			}
		}
	}
	for name, p := range declared {
		if p.Required && query.Get(name) == "" {
			problems = append(problems, fmt.Sprintf("%s %s: required query parameter %s is missing", method, template, name))
		}
	}
	if op.RequestBody != nil && len(body) > 0 {
		if err := r.validate(op.RequestBody.Content["application/json"].Schema, body); err != nil {
			problems = append(problems, fmt.Sprintf("%s %s: request body %s: %v", method, template, body, err))
		}
	}
	return problems
}

// checkValue says what is wrong with a query value under schema: a list
// (comma-separated) whose items are each of its enum, once; a number
// within its bounds; a string of its length and pattern.
func (r *revision) checkValue(schema map[string]any, v string) string {
	if ref, ok := schema["$ref"].(string); ok {
		return r.checkValue(r.schemas[strings.TrimPrefix(ref, "#/components/schemas/")], v)
	}
	switch schema["type"] {
	case "array":
		items := strings.Split(v, ",")
		item, _ := schema["items"].(map[string]any)
		seen := map[string]bool{}
		for _, it := range items {
			if problem := r.checkValue(item, it); problem != "" {
				return problem
			}
			if seen[it] && schema["uniqueItems"] == true {
				return it + " is repeated"
			}
			seen[it] = true
		}
		if n, ok := schema["minItems"].(float64); ok && float64(len(items)) < n {
			return "fewer items than " + strconv.Itoa(int(n))
		}
	case "integer":
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n != float64(int64(n)) {
			return "not an integer"
		}
		if min, ok := schema["minimum"].(float64); ok && n < min {
			return "below its minimum"
		}
		if max, ok := schema["maximum"].(float64); ok && n > max {
			return "above its maximum"
		}
	case "string":
		if min, ok := schema["minLength"].(float64); ok && float64(len(v)) < min {
			return "shorter than its minLength"
		}
		if pattern, ok := schema["pattern"].(string); ok && !regexp.MustCompile(pattern).MatchString(v) {
			return "does not match " + pattern
		}
	}
	if enum, ok := schema["enum"].([]any); ok && !slices.Contains(enum, any(v)) {
		return "not one of its values"
	}
	return ""
}

// checkResponse validates a 2xx response against the schema the revision
// gives its operation's status.
func (r *revision) checkResponse(method, path string, status int, body []byte) error {
	template, op, ok := r.operation(method, path)
	if !ok {
		return fmt.Errorf("%s %s is no operation of revision %s", method, path, r.version)
	}
	resp, ok := op.Responses[strconv.Itoa(status)]
	if !ok {
		return fmt.Errorf("%s %s: revision %s gives no response %d", method, template, r.version, status)
	}
	if err := r.validate(resp.Content["application/json"].Schema, body); err != nil {
		return fmt.Errorf("%s %s %d: %w", method, template, status, err)
	}
	return nil
}

// validate checks body against schema, a schema of the description.
func (r *revision) validate(schema map[string]any, body []byte) error {
	r.n++
	loc := fmt.Sprintf("mem://openapi-%s/inline-%d.json", r.version, r.n)
	if err := r.compiler.AddResource(loc, r.rebased(asJSONSchema(schema, r.schemas))); err != nil {
		return err
	}
	sch, err := r.compiler.Compile(loc)
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		return err
	}
	return sch.Validate(v)
}
