package resources

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cloudquery/plugin-sdk/v4/scalar"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/types"
)

// column is a column of a table whose rows are of type T: the SDK column
// with a resolver that reads its value from the row by a typed getter, so
// that every getter of a []column[T] takes the same row type.
type column[T any] struct {
	schema.Column
}

// col is the column whose value is get(row), of the Arrow type of the
// getter's Go type; a nil pointer or list is null
// (docs/design/plugin.md#resolvers).
func col[T, V any](name, description string, get func(T) V) column[T] {
	var typ arrow.DataType
	switch any(*new(V)).(type) {
	case string, *string:
		typ = arrow.BinaryTypes.String
	case time.Time, *time.Time:
		typ = arrow.FixedWidthTypes.Timestamp_us
	case bool, *bool:
		typ = arrow.FixedWidthTypes.Boolean
	case int64, *int64:
		typ = arrow.PrimitiveTypes.Int64
	case float64:
		typ = arrow.PrimitiveTypes.Float64
	case []string:
		typ = arrow.ListOf(arrow.BinaryTypes.String)
	default:
		panic(fmt.Sprintf("resources: column %s: no Arrow type for %T", name, *new(V)))
	}
	return column[T]{schema.Column{Name: name, Type: typ, Description: description,
		Resolver: func(_ context.Context, _ schema.ClientMeta, r *schema.Resource, c schema.Column) error {
			return r.Set(c.Name, get(r.Item.(T)))
		}}}
}

// optStringColumn: a string; "" (an absent field) is null.
func optStringColumn[T any](name, description string, get func(T) string) column[T] {
	return col(name, description, func(row T) *string {
		if s := get(row); s != "" {
			return &s
		}
		return nil
	})
}

// jsonColumn: raw JSON the API client has validated, stored as is, not
// validated again by Resource.Set; absent values and JSON null are null.
func jsonColumn[T any](name, description string, get func(T) []byte) column[T] {
	return column[T]{schema.Column{Name: name, Type: types.ExtensionTypes.JSON, Description: description,
		Resolver: func(_ context.Context, _ schema.ClientMeta, r *schema.Resource, c schema.Column) error {
			raw := get(r.Item.(T))
			if len(raw) == 0 || string(raw) == "null" {
				return nil
			}
			value, ok := r.Get(c.Name).(*scalar.JSON)
			if !ok {
				return r.Set(c.Name, raw)
			}
			value.Value, value.Valid = raw, true
			return nil
		}}}
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

// columnNames is two or more names in prose: "`a`, `b` and `c`".
func columnNames(names []string) string {
	last := len(names) - 1
	return "`" + strings.Join(names[:last], "`, `") + "` and `" + names[last] + "`"
}
