// Package pqfile writes one table's rows, the Arrow records the CloudQuery
// SDK's scheduler builds, to a Parquet file as CloudQuery's file destination
// does (docs/parquet.md says how), and reads such files back.
package pqfile

import (
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/arrow/scalar"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/types"
)

// Metadata keys added to every file's schema metadata, beside the SDK's
// cq:table_* keys.
const (
	MetadataPrimaryKeys   = "cq:table_primary_keys" // comma-separated column names
	MetadataDescription   = "description"           // field metadata: the column's description
	MetadataJSON          = "cq:extension:json"     // field metadata: "true" on JSON text columns
	MetadataSourceName    = "cq:source_name"
	MetadataPluginName    = "cq:source_plugin"
	MetadataPluginVersion = "cq:source_plugin_version"
	MetadataSyncTime      = "cq:sync_time" // RFC 3339, UTC
)

// converter turns the records of one table into the records written.
type converter struct {
	table                *schema.Table
	out                  *arrow.Schema
	syncTime, sourceName scalar.Scalar // the CLI's columns, the same in every row
}

// newConverter prepares the conversion of table's records; extra is added
// to the schema metadata.
func newConverter(table *schema.Table, syncTime time.Time, sourceName string, extra map[string]string) (*converter, error) {
	in := table.ToArrowSchema()
	md := in.Metadata().ToMap()
	md[MetadataPrimaryKeys] = strings.Join(table.PrimaryKeys(), ",")
	md[MetadataSourceName] = sourceName
	md[MetadataSyncTime] = syncTime.UTC().Format(time.RFC3339Nano)
	maps.Copy(md, extra)
	ts, err := arrow.TimestampFromTime(syncTime, arrow.Microsecond)
	if err != nil {
		return nil, err
	}
	c := &converter{table: table, syncTime: scalar.NewTimestampScalar(ts, arrow.FixedWidthTypes.Timestamp_us), sourceName: scalar.NewStringScalar(sourceName)}
	// The CLI's columns, in front as the CLI puts them.
	syncTimeColumn, sourceNameColumn := schema.CqSyncTimeColumn.Name, schema.CqSourceNameColumn.Name
	fields := []arrow.Field{
		{Name: syncTimeColumn, Type: arrow.FixedWidthTypes.Timestamp_us, Nullable: true,
			Metadata: arrow.NewMetadata([]string{MetadataDescription}, []string{schema.CqSyncTimeColumn.Description})},
		{Name: sourceNameColumn, Type: arrow.BinaryTypes.String, Nullable: true,
			Metadata: arrow.NewMetadata([]string{MetadataDescription}, []string{schema.CqSourceNameColumn.Description})},
	}
	if in.HasField(syncTimeColumn) || in.HasField(sourceNameColumn) {
		return nil, fmt.Errorf("table %s already has a %s or %s column", table.Name, syncTimeColumn, sourceNameColumn)
	}
	for i, f := range in.Fields() {
		fm := f.Metadata.ToMap()
		switch {
		case arrow.TypeEqual(f.Type, types.ExtensionTypes.JSON):
			fm[MetadataJSON] = "true"
			f.Type = arrow.BinaryTypes.String
		case arrow.TypeEqual(f.Type, types.ExtensionTypes.UUID):
			f.Type = arrow.BinaryTypes.String
		default:
			if err := plain(f.Type); err != nil {
				return nil, fmt.Errorf("table %s, column %s: %w", table.Name, f.Name, err)
			}
		}
		if d := table.Columns[i].Description; d != "" {
			fm[MetadataDescription] = d
		}
		f.Metadata = arrow.MetadataFrom(fm)
		fields = append(fields, f)
	}
	smd := arrow.MetadataFrom(md)
	c.out = arrow.NewSchema(fields, &smd)
	return c, nil
}

// plain rejects extension types nested in other types: the SDK's tables of
// this plugin have none, and writing their storage silently would lose the
// type.
func plain(t arrow.DataType) error {
	switch t := t.(type) {
	case arrow.ExtensionType:
		return fmt.Errorf("extension type %s is not supported here", t.ExtensionName())
	case arrow.NestedType:
		for _, f := range t.Fields() {
			if err := plain(f.Type); err != nil {
				return err
			}
		}
	}
	return nil
}

// convert returns rec in the output schema; the caller releases it.
func (c *converter) convert(rec arrow.RecordBatch) (arrow.RecordBatch, error) {
	if int(rec.NumCols())+2 != c.out.NumFields() {
		return nil, fmt.Errorf("table %s: record has %d columns, the table %d", c.table.Name, rec.NumCols(), c.out.NumFields()-2)
	}
	n := int(rec.NumRows())
	cols := make([]arrow.Array, 0, c.out.NumFields())
	defer func() {
		for _, a := range cols {
			a.Release()
		}
	}()
	for _, value := range []scalar.Scalar{c.syncTime, c.sourceName} {
		col, err := scalar.MakeArrayFromScalar(value, n, memory.DefaultAllocator)
		if err != nil {
			return nil, err
		}
		cols = append(cols, col)
	}
	for i, col := range rec.Columns() {
		if want := c.table.Columns[i].Type; !arrow.TypeEqual(col.DataType(), want) {
			return nil, fmt.Errorf("table %s, column %s: want %s values, got %s", c.table.Name, c.table.Columns[i].Name, want, col.DataType())
		}
		// The table's extension arrays are JSON or UUID (plain).
		switch ext, _ := col.(array.ExtensionArray); {
		case ext == nil:
			col.Retain()
			cols = append(cols, col)
		case arrow.TypeEqual(col.DataType(), types.ExtensionTypes.UUID):
			cols = append(cols, uuidStrings(col))
		default: // JSON: Binary and String share their layout, so it keeps its buffers as a string
			storage := ext.Storage().Data()
			str := array.NewData(arrow.BinaryTypes.String, storage.Len(), storage.Buffers(), nil, storage.NullN(), storage.Offset())
			cols = append(cols, array.MakeFromData(str))
			str.Release()
		}
	}
	return array.NewRecordBatch(c.out, cols, int64(n)), nil
}

// uuidStrings is the text of a UUID column (types.UUIDArray.ValueStr).
func uuidStrings(col arrow.Array) arrow.Array {
	b := array.NewStringBuilder(memory.DefaultAllocator)
	defer b.Release()
	for i := range col.Len() {
		if col.IsNull(i) {
			b.AppendNull()
		} else {
			b.Append(col.ValueStr(i))
		}
	}
	return b.NewArray()
}
