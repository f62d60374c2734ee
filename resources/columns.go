package resources

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cloudquery/plugin-sdk/v4/scalar"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/types"
)

// column declares a column whose value is read from the row item, of type T,
// by get. Every column has its own resolver: a column without one makes the
// SDK look the value up by reflection, slowly, on every row.
func column[T any](name string, typ arrow.DataType, description string, get func(T) any) schema.Column {
	return schema.Column{
		Name:        name,
		Type:        typ,
		Description: description,
		Resolver: func(_ context.Context, _ schema.ClientMeta, r *schema.Resource, c schema.Column) error {
			return r.Set(c.Name, get(r.Item.(T)))
		},
	}
}

// primaryKey marks a column as part of the primary key. Primary-key columns
// must never be null: the SDK drops such rows, with their whole batch.
func primaryKey(c schema.Column) schema.Column {
	c.PrimaryKey = true
	c.NotNull = true
	return c
}

// jsonColumn declares a JSON column whose value is raw JSON the API client
// has already decoded, and so validated: it is stored as is. (Setting it
// through Resource.Set would validate every value again, which was the most
// expensive step of a large export.) Absent values and JSON null are null.
func jsonColumn[T any](name, description string, get func(T) []byte) schema.Column {
	return schema.Column{
		Name:        name,
		Type:        types.ExtensionTypes.JSON,
		Description: description,
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
		},
	}
}

// optString returns nil for "", so absent fields are null, not empty.
func optString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
