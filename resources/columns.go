package resources

import (
	"context"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cloudquery/plugin-sdk/v4/scalar"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/types"
)

// column is a column of a table whose rows are of type T: the SDK column
// with a resolver that reads its value from the row by a typed getter. A
// table's columns are a []column[T], so that every getter takes the same
// row type (the resolvers assert the row to T). The constructors below fix,
// per Go type, how a value maps to Arrow and when it is null.
type column[T any] struct {
	schema.Column
}

// typedColumn is the column of type typ whose value is get(row); a nil
// pointer is null.
func typedColumn[T, V any](name, description string, typ arrow.DataType, get func(T) V) column[T] {
	return column[T]{schema.Column{Name: name, Type: typ, Description: description,
		Resolver: func(_ context.Context, _ schema.ClientMeta, r *schema.Resource, c schema.Column) error {
			return r.Set(c.Name, get(r.Item.(T)))
		}}}
}

// stringColumn: a string; "" is stored as "". Every string column holds
// valid UTF-8 (a reader such as DuckDB refuses a Parquet file whose strings
// are not): the API client makes what X sends valid, once.
func stringColumn[T any](name, description string, get func(T) string) column[T] {
	return typedColumn(name, description, arrow.BinaryTypes.String, get)
}

// optStringColumn: a string; "" (an absent field) is null.
func optStringColumn[T any](name, description string, get func(T) string) column[T] {
	return typedColumn(name, description, arrow.BinaryTypes.String, func(row T) any { return optString(get(row)) })
}

// timeColumn: a time, in microseconds, UTC.
func timeColumn[T any](name, description string, get func(T) time.Time) column[T] {
	return typedColumn(name, description, arrow.FixedWidthTypes.Timestamp_us, get)
}

// optTimeColumn: a time; nil is null.
func optTimeColumn[T any](name, description string, get func(T) *time.Time) column[T] {
	return typedColumn(name, description, arrow.FixedWidthTypes.Timestamp_us, get)
}

// boolColumn: a boolean.
func boolColumn[T any](name, description string, get func(T) bool) column[T] {
	return typedColumn(name, description, arrow.FixedWidthTypes.Boolean, get)
}

// optBoolColumn: a boolean; nil is null.
func optBoolColumn[T any](name, description string, get func(T) *bool) column[T] {
	return typedColumn(name, description, arrow.FixedWidthTypes.Boolean, get)
}

// int64Column: an integer.
func int64Column[T any](name, description string, get func(T) int64) column[T] {
	return typedColumn(name, description, arrow.PrimitiveTypes.Int64, get)
}

// optInt64Column: an integer; nil is null.
func optInt64Column[T any](name, description string, get func(T) *int64) column[T] {
	return typedColumn(name, description, arrow.PrimitiveTypes.Int64, get)
}

// float64Column: a floating-point number.
func float64Column[T any](name, description string, get func(T) float64) column[T] {
	return typedColumn(name, description, arrow.PrimitiveTypes.Float64, get)
}

// stringListColumn: a list of strings; a nil list is null and a non-nil
// empty one is empty, as the SDK's list scalar has them. (The API client
// decodes an empty JSON array as nil, so it is stored as null.)
func stringListColumn[T any](name, description string, get func(T) []string) column[T] {
	return typedColumn(name, description, arrow.ListOf(arrow.BinaryTypes.String), get)
}

// jsonColumn: raw JSON the API client has already decoded, and so
// validated, stored as is. (Setting it through Resource.Set would validate
// every value again, which was the most expensive step of a large export.)
// Absent values and JSON null are null.
func jsonColumn[T any](name, description string, get func(T) []byte) column[T] {
	return column[T]{schema.Column{
		Name:        name,
		Type:        types.ExtensionTypes.JSON,
		Description: description,
		Resolver: func(_ context.Context, _ schema.ClientMeta, r *schema.Resource, c schema.Column) error {
			raw := jsonValue(get(r.Item.(T)))
			if raw == nil {
				return nil
			}
			value, ok := r.Get(c.Name).(*scalar.JSON)
			if !ok {
				return r.Set(c.Name, raw)
			}
			value.Value, value.Valid = raw, true
			return nil
		},
	}}
}

// jsonValue is raw, or nil for an absent value or JSON null.
func jsonValue(raw []byte) []byte {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return raw
}

// primaryKey marks a column as part of the primary key. Primary-key columns
// must never be null: the SDK drops such rows, with their whole batch.
func primaryKey[T any](c column[T]) column[T] {
	c.PrimaryKey = true
	c.NotNull = true
	return c
}

// incrementalKey marks the column the table's increments are keyed by.
func incrementalKey[T any](c column[T]) column[T] {
	c.IncrementalKey = true
	c.NotNull = true
	return c
}

// columnList is the SDK's view of a table's columns.
func columnList[T any](cols []column[T]) schema.ColumnList {
	out := make(schema.ColumnList, len(cols))
	for i, c := range cols {
		out[i] = c.Column
	}
	return out
}

// optString returns nil for "", so absent fields are null, not empty.
func optString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// columnNames is names in prose: "`a`, `b` and `c`".
func columnNames(names []string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = "`" + n + "`"
	}
	if len(quoted) < 2 {
		return strings.Join(quoted, "")
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " and " + quoted[len(quoted)-1]
}
