package resources

import (
	"context"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cloudquery/plugin-sdk/v4/scalar"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/types"

	"github.com/cq-source-x/cq-source-x/export/pqfile"
)

// A column is declared once, by a getter of its value from the row item
// (of type T). Both ways a row leaves the plugin come from that getter:
//
//   - the SDK resolver (Column.Resolver), used by the CloudQuery scheduler:
//     a scalar per column per row, then appended to an Arrow record;
//   - putTo, used by the exporter's direct path (columnsBuilder, direct.go),
//     which appends the value straight to the column of a Parquet file
//     (pqfile.Column).
//
// The constructors below fix, per Go type, how a value maps to Arrow and to
// Parquet and when it is null, for both paths at once;
// TestDirectColumnsEqualSDKRecords checks that they give the same values.
type column[T any] struct {
	schema.Column
	putTo func(c *pqfile.Column, row T)
	// text is the column's value as the SDK's scalar String() gives it, for
	// the deterministic _cq_id of primary-key columns; nil for non-strings.
	text func(row T) string
}

// resolver is the SDK resolver of a column whose value is get(row).
func resolver[T, V any](get func(T) V) schema.ColumnResolver {
	return func(_ context.Context, _ schema.ClientMeta, r *schema.Resource, c schema.Column) error {
		return r.Set(c.Name, get(r.Item.(T)))
	}
}

// stringColumn: a string; "" is stored as "".
func stringColumn[T any](name, description string, get func(T) string) column[T] {
	return column[T]{
		Column: schema.Column{Name: name, Type: arrow.BinaryTypes.String, Description: description, Resolver: resolver(get)},
		putTo:  func(c *pqfile.Column, row T) { c.AppendString(get(row)) },
		text:   get,
	}
}

// optStringColumn: a string; "" (an absent field) is null.
func optStringColumn[T any](name, description string, get func(T) string) column[T] {
	return column[T]{
		Column: schema.Column{Name: name, Type: arrow.BinaryTypes.String, Description: description,
			Resolver: resolver(func(row T) any { return optString(get(row)) })},
		putTo: func(c *pqfile.Column, row T) {
			if v := get(row); v != "" {
				c.AppendString(v)
			} else {
				c.AppendNull()
			}
		},
	}
}

// timeColumn: a time, in microseconds, UTC.
func timeColumn[T any](name, description string, get func(T) time.Time) column[T] {
	return column[T]{
		Column: schema.Column{Name: name, Type: arrow.FixedWidthTypes.Timestamp_us, Description: description, Resolver: resolver(get)},
		putTo:  func(c *pqfile.Column, row T) { c.AppendTime(get(row)) },
	}
}

// optColumn: a value of type V stored as typ, appended to a Parquet column
// by put; nil is null.
func optColumn[T, V any](name, description string, typ arrow.DataType, get func(T) *V, put func(*pqfile.Column, V)) column[T] {
	return column[T]{
		Column: schema.Column{Name: name, Type: typ, Description: description, Resolver: resolver(get)},
		putTo: func(c *pqfile.Column, row T) {
			if v := get(row); v != nil {
				put(c, *v)
			} else {
				c.AppendNull()
			}
		},
	}
}

// optTimeColumn: a time; nil is null.
func optTimeColumn[T any](name, description string, get func(T) *time.Time) column[T] {
	return optColumn(name, description, arrow.FixedWidthTypes.Timestamp_us, get, (*pqfile.Column).AppendTime)
}

// optBoolColumn: a boolean; nil is null.
func optBoolColumn[T any](name, description string, get func(T) *bool) column[T] {
	return optColumn(name, description, arrow.FixedWidthTypes.Boolean, get, (*pqfile.Column).AppendBool)
}

// int64Column: an integer.
func int64Column[T any](name, description string, get func(T) int64) column[T] {
	return column[T]{
		Column: schema.Column{Name: name, Type: arrow.PrimitiveTypes.Int64, Description: description, Resolver: resolver(get)},
		putTo:  func(c *pqfile.Column, row T) { c.AppendInt64(get(row)) },
	}
}

// float64Column: a floating-point number.
func float64Column[T any](name, description string, get func(T) float64) column[T] {
	return column[T]{
		Column: schema.Column{Name: name, Type: arrow.PrimitiveTypes.Float64, Description: description, Resolver: resolver(get)},
		putTo:  func(c *pqfile.Column, row T) { c.AppendFloat64(get(row)) },
	}
}

// stringListColumn: a list of strings; a nil list is null and a non-nil
// empty one is empty, as the SDK's list scalar has them. (The API client
// decodes an empty JSON array as nil, so both paths store it as null.)
func stringListColumn[T any](name, description string, get func(T) []string) column[T] {
	return column[T]{
		Column: schema.Column{Name: name, Type: arrow.ListOf(arrow.BinaryTypes.String), Description: description, Resolver: resolver(get)},
		putTo: func(c *pqfile.Column, row T) {
			if v := get(row); v != nil {
				c.AppendStrings(v)
			} else {
				c.AppendNull()
			}
		},
	}
}

// jsonColumn: raw JSON the API client has already decoded, and so
// validated, stored as is. (Setting it through Resource.Set would validate
// every value again, which was the most expensive step of a large export.)
// Absent values and JSON null are null.
func jsonColumn[T any](name, description string, get func(T) []byte) column[T] {
	return column[T]{
		Column: schema.Column{
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
		},
		putTo: func(c *pqfile.Column, row T) {
			if raw := jsonValue(get(row)); raw != nil {
				c.AppendBytes(raw)
			} else {
				c.AppendNull()
			}
		},
	}
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
