package spec

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/cq-source-x/cq-source-x/internal/suggest"
)

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	durationType    = reflect.TypeFor[Duration]()
)

// shape adds to ps every key of v, decoded JSON, that t has no field for,
// and every value of the wrong JSON type, each at its path (such as
// accounts[0]). encoding/json stops at the first and names neither the
// object nor the list element it is in. v holds json.Numbers.
func shape(v any, t reflect.Type, path string, ps *problems) {
	if v == nil {
		return // null leaves the field at its default
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		_, isString := v.(string)
		b, _ := json.Marshal(v) // v was decoded from JSON
		switch err := json.Unmarshal(b, reflect.New(t).Interface()); {
		case err == nil:
		case t == durationType && isString:
			ps.add(path, "must be %s", DurationHint) // a string may be a token: not repeated
		case t == durationType:
			ps.add(path, "must be %s, not %s", DurationHint, describeValue(v))
		default:
			ps.add(path, "%v", err)
		}
		return
	}
	want, ok := "", false
	switch t.Kind() {
	case reflect.String:
		_, ok = v.(string)
		want = "a string"
	case reflect.Int, reflect.Int64, reflect.Int32:
		n, isNum := v.(json.Number)
		_, err := n.Int64()
		ok = isNum && err == nil
		want = "a whole number"
	case reflect.Float64, reflect.Float32:
		_, ok = v.(json.Number)
		want = "a number"
	case reflect.Bool:
		_, ok = v.(bool)
		want = "true or false"
	case reflect.Slice:
		var items []any
		if items, ok = v.([]any); ok {
			for i, item := range items {
				shape(item, t.Elem(), fmt.Sprintf("%s[%d]", path, i), ps)
			}
		}
		want = "a list"
		if t.Elem().Kind() == reflect.String {
			want = "a list of strings, e.g. [a, b]"
		}
	case reflect.Struct:
		var m map[string]any
		if m, ok = v.(map[string]any); ok {
			shapeObject(m, t, path, ps)
		}
		want = "a map of settings"
	default:
		return
	}
	if !ok {
		ps.add(path, "must be %s, not %s", want, describeValue(v))
	}
}

func shapeObject(m map[string]any, t reflect.Type, path string, ps *problems) {
	fields := jsonFields(t)
	for _, key := range slices.Sorted(maps.Keys(m)) {
		// The field encoding/json decodes key into: the exact name, else
		// one that differs only in case.
		i := slices.IndexFunc(fields, func(f jsonField) bool { return f.name == key })
		if i < 0 {
			i = slices.IndexFunc(fields, func(f jsonField) bool { return strings.EqualFold(f.name, key) })
		}
		if i < 0 {
			*ps = append(*ps, Problem{Path: path, Key: key, Msg: fmt.Sprintf("unknown field %q%s", key, suggestField(key, fields))})
			continue
		}
		shape(m[key], t.Field(fields[i].index).Type, joinPath(path, fields[i].name), ps)
	}
}

// suggestField names the field key was probably meant to be: the field of
// that name in another section (a planner setting written at the top level,
// say), else a close one in the same section, else the section's fields.
func suggestField(key string, fields []jsonField) string {
	var siblings, elsewhere []string
	for _, f := range fields {
		siblings = append(siblings, f.name)
	}
	for _, p := range allFieldPaths() {
		if i := strings.LastIndexAny(p, ".]"); i >= 0 && strings.EqualFold(strings.TrimPrefix(p[i+1:], "."), key) {
			elsewhere = append(elsewhere, p)
		}
	}
	if len(elsewhere) == 1 {
		return fmt.Sprintf(" (did you mean %q? it belongs in another section)", elsewhere[0])
	}
	if s := suggest.Phrase(key, siblings); s != "" {
		return s
	}
	return "; this section has " + strings.Join(siblings, ", ")
}

type jsonField struct {
	name  string
	index int
}

func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if !f.IsExported() || name == "-" {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name: name, index: i})
	}
	return out
}

// allFieldPaths lists the path of every field of Spec, with [] for list
// elements: accounts[].user_id, planner.max_page_size, ...
func allFieldPaths() []string {
	var out []string
	var walk func(t reflect.Type, path string)
	walk = func(t reflect.Type, path string) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
			if t.Kind() == reflect.Slice {
				path += "[]"
			}
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || reflect.PointerTo(t).Implements(unmarshalerType) {
			return
		}
		for _, f := range jsonFields(t) {
			p := joinPath(path, f.name)
			out = append(out, p)
			walk(t.Field(f.index).Type, p)
		}
	}
	walk(reflect.TypeFor[Spec](), "")
	return out
}

func joinPath(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// describeValue names a JSON value's kind for a message. Strings are not
// quoted: a value in the wrong place may be a token.
func describeValue(v any) string {
	switch v := v.(type) {
	case string:
		return "a string"
	case json.Number:
		return "the number " + v.String()
	case bool:
		return fmt.Sprint(v)
	case []any:
		return "a list"
	case map[string]any:
		return "a map"
	}
	return "null"
}
