package resources

import (
	"context"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cloudquery/plugin-sdk/v4/schema"
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

// rawJSON returns raw as the JSON column wants it: nil (null) when absent.
func rawJSON(raw []byte) any {
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	return []byte(raw)
}

// optString returns nil for "", so absent fields are null, not empty.
func optString(s string) any {
	if s == "" {
		return nil
	}
	return s
}
