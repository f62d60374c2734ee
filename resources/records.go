package resources

import (
	"crypto/sha1"
	"crypto/sha256"
	"fmt"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/types"
	"github.com/google/uuid"
)

// recordBuilder builds a table's Arrow records directly from its row items:
// each column's value is appended to its Arrow builder by the column's own
// definition (column.appendTo), with no SDK resource, scalar or resolver
// call per value. The records have the schema and the values the SDK
// scheduler would give the same rows — _cq_id included, random or
// deterministic as the SDK computes it — which
// TestDirectRecordsEqualSDKRecords checks. It is the exporter's fast path
// (account.RecordSink); a plugin sync uses the SDK's resources.
type recordBuilder[T any] struct {
	table    *schema.Table
	b        *array.RecordBuilder
	appendTo []func(array.Builder, T) // per table column; nil for _cq_id and _cq_parent_id
	cqID     int                      // index of _cq_id, or -1
	parentID int                      // index of _cq_parent_id, or -1
	// idKeys are the columns a deterministic _cq_id is hashed from, sorted
	// by name as the SDK sorts them; nil means random ids.
	idKeys   []idKey[T]
	reserve  []int // data bytes of each string/binary column in the last record
	lastRows int   // rows of the last record
	rows     int
}

type idKey[T any] struct {
	name string
	text func(T) string
}

// newRecordBuilder prepares records of table, whose columns (besides the
// SDK's _cq_id and _cq_parent_id) must all be in cols. Their buffers come
// from mem (nil: Go's allocator).
func newRecordBuilder[T any](table *schema.Table, cols []column[T], deterministicCQID bool, mem memory.Allocator) (*recordBuilder[T], error) {
	if table.Parent != nil {
		return nil, fmt.Errorf("table %s: direct records are for top-level tables (_cq_parent_id is always null here)", table.Name)
	}
	byName := map[string]column[T]{}
	for _, c := range cols {
		byName[c.Name] = c
	}
	rb := &recordBuilder[T]{table: table, cqID: -1, parentID: -1}
	for i, c := range table.Columns {
		switch c.Name {
		case schema.CqIDColumn.Name:
			rb.cqID = i
			rb.appendTo = append(rb.appendTo, nil)
			continue
		case schema.CqParentIDColumn.Name:
			rb.parentID = i
			rb.appendTo = append(rb.appendTo, nil)
			continue
		}
		def, ok := byName[c.Name]
		if !ok || !arrow.TypeEqual(def.Type, c.Type) {
			return nil, fmt.Errorf("table %s: column %s has no direct definition of type %s", table.Name, c.Name, c.Type)
		}
		rb.appendTo = append(rb.appendTo, def.appendTo)
	}
	// As schema.Resource.CalculateCQID: primary-key components first, then,
	// for a deterministic id, the primary keys; otherwise a random id.
	names := table.PrimaryKeyComponents()
	if len(names) == 0 && deterministicCQID {
		names = table.PrimaryKeys()
		if len(names) == 1 && names[0] == schema.CqIDColumn.Name {
			names = nil
		}
	}
	names = slices.Clone(names)
	slices.Sort(names)
	for _, name := range names {
		def, ok := byName[name]
		if !ok || def.text == nil {
			return nil, fmt.Errorf("table %s: _cq_id is hashed from column %s, which is not a string column", table.Name, name)
		}
		rb.idKeys = append(rb.idKeys, idKey[T]{name: name, text: def.text})
	}
	if mem == nil {
		mem = memory.DefaultAllocator
	}
	rb.b = array.NewRecordBuilder(mem, table.ToArrowSchema())
	rb.reserve = make([]int, len(table.Columns))
	return rb, nil
}

// Append adds rows.
func (rb *recordBuilder[T]) Append(rows []T) {
	if rb.rows == 0 {
		rb.grow(max(len(rows), rb.lastRows))
	}
	for _, row := range rows {
		for i, appendTo := range rb.appendTo {
			if appendTo != nil {
				appendTo(rb.b.Field(i), row)
			}
		}
		if rb.cqID >= 0 {
			rb.b.Field(rb.cqID).(*types.UUIDBuilder).Append(rb.id(row))
		}
		if rb.parentID >= 0 {
			rb.b.Field(rb.parentID).AppendNull()
		}
	}
	rb.rows += len(rows)
}

// id is the row's _cq_id, computed as schema.Resource.CalculateCQID does.
func (rb *recordBuilder[T]) id(row T) uuid.UUID {
	if rb.idKeys == nil {
		return uuid.New()
	}
	h := sha256.New()
	for _, k := range rb.idKeys {
		h.Write([]byte(k.name))
		h.Write([]byte(k.text(row)))
	}
	return uuid.NewHash(sha1.New(), uuid.UUID{}, h.Sum(nil), 5)
}

// grow reserves room for the coming record from the size of the last one,
// plus an eighth: Arrow builders otherwise start empty and double their
// buffers many times over for every record, and a record only a little
// larger than the last would still copy its largest buffers once.
func (rb *recordBuilder[T]) grow(n int) {
	for i := range rb.appendTo {
		f := rb.b.Field(i)
		f.Reserve(n)
		if data := rb.reserve[i]; data > 0 {
			data += data / 8
			switch f := f.(type) {
			case *array.StringBuilder:
				f.ReserveData(data)
			case *types.JSONBuilder:
				f.Builder.(*array.BinaryBuilder).ReserveData(data)
			}
		}
	}
}

// Len is the number of rows appended since the last record.
func (rb *recordBuilder[T]) Len() int { return rb.rows }

// NewRecord returns the rows appended so far as a record, and starts the
// next one. The caller releases it.
func (rb *recordBuilder[T]) NewRecord() arrow.RecordBatch {
	for i := range rb.appendTo {
		switch f := rb.b.Field(i).(type) {
		case *array.StringBuilder:
			rb.reserve[i] = f.DataLen()
		case *types.JSONBuilder:
			rb.reserve[i] = f.Builder.(*array.BinaryBuilder).DataLen()
		}
	}
	rb.lastRows, rb.rows = rb.rows, 0
	return rb.b.NewRecordBatch()
}

// Release frees the builders.
func (rb *recordBuilder[T]) Release() { rb.b.Release() }
