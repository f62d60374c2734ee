package pqfile

import (
	"fmt"
	"math"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
	"github.com/cloudquery/plugin-sdk/v4/schema"
)

// Columns holds rows of one table column by column, as the values a
// Parquet file stores: the way from a table's row items to a file without
// building Arrow records first (Writer.WriteColumns). Each column takes the
// value the table's Arrow column would hold, and stores it as a record
// converted by the Converter and written by pqarrow is stored — UUIDs as
// their text, JSON as its bytes, times in the column's unit — so that the
// file is the same byte for byte (TestColumnsWriteTheRecordsFile).
//
// Columns holds the table's own columns, in the table's order; the Writer
// adds _cq_sync_time and _cq_source_name. Text and binary values are
// copied as they are appended.
type Columns struct {
	table *schema.Table
	cols  []Column
	owner *Writer // the Writer whose NewColumns made it, which reuses it
}

// Column is one column of Columns. A value of the wrong kind for the column
// (an integer for a text column, a null for a required one) is an error
// that WriteColumns reports, naming the column.
type Column struct {
	name string
	kind physicalKind
	// Levels: maxDef is the definition level of a present value (0: a
	// required flat column, no levels kept); list columns keep repetition
	// levels too, and nullDef/emptyDef are the levels of a null and of an
	// empty list.
	maxDef, nullDef, emptyDef int16
	list, required            bool
	unit                      arrow.TimeUnit // of a timestamp column, as the file stores it

	// Text and binary values, one after the other in data (copied as they
	// are appended, while the page they were decoded from is still in the
	// CPU's cache), each ending at its ends[i]. No pointer per value: the
	// garbage collector does not scan a batch, and the decoded pages are
	// free once appended.
	data   []byte
	ends   []int32
	ints   []int64
	floats []float64
	bools  []bool
	def    []int16
	rep    []int16
	rows   int

	err error
}

type physicalKind int8

const (
	byteArrayKind physicalKind = iota
	int64Kind
	timestampKind // int64 values too, in the column's unit
	float64Kind
	boolKind
)

func (k physicalKind) String() string {
	return [...]string{"text/binary", "int64", "timestamp", "float64", "boolean"}[k]
}

// NewColumns returns an empty Columns for table's rows. A Writer only reads
// Columns made here: they must not change until the Writer is closed. (The
// exporter's come from Writer.NewColumns, which the Writer reuses.)
func NewColumns(table *schema.Table) (*Columns, error) {
	l, err := newLayout(table)
	if err != nil {
		return nil, err
	}
	return l.newColumns(), nil
}

// layout is how the columns of a table are stored: derived once per table
// from the Converter's schema and pqarrow's Parquet schema for it.
type layout struct {
	table *schema.Table
	cols  []Column // empty, with kinds and levels set
	sc    *arrow.Schema
	pq    *pqschema.Schema
}

func newLayout(table *schema.Table) (*layout, error) {
	conv, err := NewConverter(table, time.Time{}, "", nil)
	if err != nil {
		return nil, err
	}
	sc := conv.Schema()
	pq, err := pqarrow.ToParquet(sc, parquet.NewWriterProperties(), pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, fmt.Errorf("table %s: parquet schema: %w", table.Name, err)
	}
	if pq.NumColumns() != sc.NumFields() {
		return nil, fmt.Errorf("table %s: nested columns other than lists of one value are not written from Columns", table.Name)
	}
	l := &layout{table: table, sc: sc, pq: pq}
	for i := 2; i < sc.NumFields(); i++ { // past _cq_sync_time, _cq_source_name
		f, d := sc.Field(i), pq.Column(i)
		c := Column{name: f.Name, maxDef: d.MaxDefinitionLevel(), required: d.MaxDefinitionLevel() == 0}
		switch d.PhysicalType() {
		case parquet.Types.ByteArray:
			c.kind = byteArrayKind
		case parquet.Types.Int64:
			if err := c.setInt64Kind(f, d); err != nil {
				return nil, fmt.Errorf("table %s, column %s: %w", table.Name, f.Name, err)
			}
		case parquet.Types.Double:
			c.kind = float64Kind
		case parquet.Types.Boolean:
			c.kind = boolKind
		default:
			return nil, fmt.Errorf("table %s, column %s: Parquet type %s is not written from Columns", table.Name, f.Name, d.PhysicalType())
		}
		if lt, ok := f.Type.(*arrow.ListType); ok {
			if d.MaxRepetitionLevel() != 1 {
				return nil, fmt.Errorf("table %s, column %s: only lists of values are written from Columns", table.Name, f.Name)
			}
			// Levels of a list (nullable or not) of values (nullable or
			// not): below the present value's level come the present but
			// empty list, then the null list.
			c.list = true
			c.required = false
			c.emptyDef = c.maxDef - 1
			if lt.ElemField().Nullable {
				c.emptyDef--
			}
			c.nullDef = c.emptyDef - 1
			if !f.Nullable {
				c.nullDef = -1 // a null is an error
			}
		} else if d.MaxRepetitionLevel() != 0 {
			return nil, fmt.Errorf("table %s, column %s: repeated column of type %s is not written from Columns", table.Name, f.Name, f.Type)
		}
		l.cols = append(l.cols, c)
	}
	return l, nil
}

// holds reports whether c has this layout's columns.
func (l *layout) holds(c *Columns) bool {
	if c.table.Name != l.table.Name || len(c.cols) != len(l.cols) {
		return false
	}
	for i := range c.cols {
		a, b := &c.cols[i], &l.cols[i]
		if a.name != b.name || a.kind != b.kind || a.unit != b.unit || a.maxDef != b.maxDef || a.list != b.list {
			return false
		}
	}
	return true
}

// setInt64Kind tells Arrow int64 columns from timestamps, which take times
// in the unit the file stores (pqarrow stores seconds as milliseconds).
// Other Arrow types stored as Parquet INT64 (uint64, time64, durations) have
// no Append method of their own and are refused.
func (c *Column) setInt64Kind(f arrow.Field, d *pqschema.Column) error {
	if ts, ok := d.LogicalType().(pqschema.TimestampLogicalType); ok {
		if _, ok := f.Type.(*arrow.TimestampType); !ok {
			return fmt.Errorf("Arrow type %s stored as %s is not written from Columns", f.Type, ts)
		}
		c.kind = timestampKind
		switch ts.TimeUnit() {
		case pqschema.TimeUnitMillis:
			c.unit = arrow.Millisecond
		case pqschema.TimeUnitMicros:
			c.unit = arrow.Microsecond
		case pqschema.TimeUnitNanos:
			c.unit = arrow.Nanosecond
		default:
			return fmt.Errorf("Parquet %s has no known time unit", ts)
		}
		return nil
	}
	if f.Type.ID() != arrow.INT64 {
		return fmt.Errorf("Arrow type %s is not written from Columns", f.Type)
	}
	c.kind = int64Kind
	return nil
}

func (l *layout) newColumns() *Columns {
	c := &Columns{table: l.table, cols: make([]Column, len(l.cols))}
	copy(c.cols, l.cols)
	return c
}

// columnSizes are the lengths of a Column's buffers.
type columnSizes struct{ data, values, levels int }

func (c *Column) sizes() columnSizes {
	return columnSizes{data: len(c.data), values: max(len(c.ends), len(c.ints), len(c.floats), len(c.bools)), levels: max(len(c.def), len(c.rep))}
}

func (s columnSizes) atLeast(o columnSizes) columnSizes {
	return columnSizes{data: max(s.data, o.data), values: max(s.values, o.values), levels: max(s.levels, o.levels)}
}

// reserve gives an empty Column's buffers room for s (those of its kind).
func (c *Column) reserve(s columnSizes) {
	switch c.kind {
	case byteArrayKind:
		c.data = make([]byte, 0, s.data)
		c.ends = make([]int32, 0, s.values)
	case int64Kind, timestampKind:
		c.ints = make([]int64, 0, s.values)
	case float64Kind:
		c.floats = make([]float64, 0, s.values)
	case boolKind:
		c.bools = make([]bool, 0, s.values)
	}
	if c.maxDef > 0 {
		c.def = make([]int16, 0, s.levels)
	}
	if c.list {
		c.rep = make([]int16, 0, s.levels)
	}
}

// Table is the table the rows belong to.
func (c *Columns) Table() *schema.Table { return c.table }

// Column is the i-th column of the table (table.Columns[i]).
func (c *Columns) Column(i int) *Column { return &c.cols[i] }

// Len is the number of rows.
func (c *Columns) Len() int {
	if len(c.cols) == 0 {
		return 0
	}
	return c.cols[0].rows
}

// Err is the first wrong value appended, or rows missing from a column.
func (c *Columns) Err() error {
	n := c.Len()
	for i := range c.cols {
		col := &c.cols[i]
		if col.err != nil {
			return fmt.Errorf("table %s: %w", c.table.Name, col.err)
		}
		if col.rows != n {
			return fmt.Errorf("table %s, column %s: %d rows, column %s has %d", c.table.Name, col.name, col.rows, c.cols[0].name, n)
		}
	}
	return nil
}

// Reset empties every column, keeping their memory.
func (c *Columns) Reset() {
	for i := range c.cols {
		col := &c.cols[i]
		col.data, col.ends = col.data[:0], col.ends[:0]
		col.ints, col.floats, col.bools = col.ints[:0], col.floats[:0], col.bools[:0]
		col.def, col.rep = col.def[:0], col.rep[:0]
		col.rows, col.err = 0, nil
	}
}

// Delete removes rows (ascending row numbers).
func (c *Columns) Delete(rows []int) {
	if len(rows) == 0 {
		return
	}
	for i := range c.cols {
		c.cols[i].delete(rows)
	}
}

func (c *Column) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

func (c *Column) want(k physicalKind, what string) bool {
	if c.kind != k || c.list {
		c.fail(fmt.Errorf("column %s (%s%s) was given %s", c.name, listOf(c.list), c.kind, what))
		return false
	}
	return true
}

func listOf(list bool) string {
	if list {
		return "list of "
	}
	return ""
}

// present records the levels of one present flat value.
func (c *Column) present() {
	if !c.required {
		c.def = append(c.def, c.maxDef)
	}
	c.rows++
}

// endValue marks the end of the value just added to data.
func (c *Column) endValue() {
	if len(c.data) > math.MaxInt32 {
		c.fail(fmt.Errorf("column %s: more than 2 GiB of values in one batch", c.name))
	}
	c.ends = append(c.ends, int32(len(c.data)))
}

// AppendNull appends a null.
func (c *Column) AppendNull() {
	switch {
	case c.list && c.nullDef >= 0:
		c.def = append(c.def, c.nullDef)
		c.rep = append(c.rep, 0)
	case !c.list && !c.required:
		c.def = append(c.def, 0)
	default:
		c.fail(fmt.Errorf("column %s is not nullable and was given a null", c.name))
	}
	c.rows++
}

// AppendString appends a text value.
func (c *Column) AppendString(s string) {
	if c.want(byteArrayKind, "text") {
		c.data = append(c.data, s...)
		c.endValue()
		c.present()
	}
}

// AppendBytes appends a binary (or JSON) value.
func (c *Column) AppendBytes(b []byte) {
	if c.want(byteArrayKind, "bytes") {
		c.data = append(c.data, b...)
		c.endValue()
		c.present()
	}
}

// AppendUUID appends a UUID as its canonical text (8-4-4-4-12, lowercase),
// as the Converter stores UUID columns.
func (c *Column) AppendUUID(u [16]byte) {
	if c.want(byteArrayKind, "a UUID") {
		n := len(c.data)
		c.data = append(c.data, make([]byte, 36)...)
		uuidText(c.data[n:], u[:])
		c.endValue()
		c.present()
	}
}

// AppendInt64 appends an integer.
func (c *Column) AppendInt64(v int64) {
	if c.want(int64Kind, "an integer") {
		c.ints = append(c.ints, v)
		c.present()
	}
}

// AppendTime appends a time to a timestamp column, in the column's unit
// since the epoch (microseconds for every timestamp the SDK makes).
func (c *Column) AppendTime(t time.Time) {
	if c.want(timestampKind, "a time") {
		v, err := arrow.TimestampFromTime(t, c.unit)
		if err != nil {
			c.fail(fmt.Errorf("column %s: %w", c.name, err))
			return
		}
		c.ints = append(c.ints, int64(v))
		c.present()
	}
}

// AppendFloat64 appends a floating-point number.
func (c *Column) AppendFloat64(v float64) {
	if c.want(float64Kind, "a float") {
		c.floats = append(c.floats, v)
		c.present()
	}
}

// AppendBool appends a boolean.
func (c *Column) AppendBool(v bool) {
	if c.want(boolKind, "a boolean") {
		c.bools = append(c.bools, v)
		c.present()
	}
}

// AppendStrings appends a list of text values (empty: an empty list).
func (c *Column) AppendStrings(v []string) {
	if c.kind != byteArrayKind || !c.list {
		c.fail(fmt.Errorf("column %s (%s%s) was given a list of text", c.name, listOf(c.list), c.kind))
		return
	}
	if len(v) == 0 {
		c.def = append(c.def, c.emptyDef)
		c.rep = append(c.rep, 0)
	}
	for i, s := range v {
		c.data = append(c.data, s...)
		c.endValue()
		c.def = append(c.def, c.maxDef)
		rep := int16(1) // another value of the row's list
		if i == 0 {
			rep = 0 // the row's first
		}
		c.rep = append(c.rep, rep)
	}
	c.rows++
}

// Text is the value of row i of a required text column (user_id, post_id:
// the key columns the exporter reads back).
func (c *Column) Text(i int) ([]byte, error) {
	if c.kind != byteArrayKind || !c.required {
		return nil, fmt.Errorf("column %s is not a required text column", c.name)
	}
	return c.value(i), nil
}

// value is the i-th text or binary value.
func (c *Column) value(i int) []byte {
	start := int32(0)
	if i > 0 {
		start = c.ends[i-1]
	}
	return c.values()[start:c.ends[i]:c.ends[i]]
}

// values is data, never nil: a nil ByteArray is no value to arrow-go's
// statistics, so a batch whose values so far are all "" (data still nil)
// would leave "" out of the column chunk's min and max.
func (c *Column) values() []byte {
	if c.data == nil {
		return []byte{}
	}
	return c.data
}

// valueCount is the number of values (nulls and empty lists are none).
func (c *Column) valueCount() int {
	switch c.kind {
	case byteArrayKind:
		return len(c.ends)
	case int64Kind, timestampKind:
		return len(c.ints)
	case float64Kind:
		return len(c.floats)
	default:
		return len(c.bools)
	}
}

// delete removes rows (ascending) from the column.
func (c *Column) delete(rows []int) {
	entries := len(c.def) // one per value, null or list element
	if c.required {
		entries = c.rows
	}
	var keepValue []bool // per value
	row, d, kept := -1, 0, 0
	keep := false
	w := 0 // next level entry written
	for e := range entries {
		if c.rep == nil || c.rep[e] == 0 { // a row starts
			row++
			for d < len(rows) && rows[d] < row {
				d++
			}
			if keep = d >= len(rows) || rows[d] != row; keep {
				kept++
			}
		}
		if keep && !c.required {
			c.def[w] = c.def[e]
			if c.rep != nil {
				c.rep[w] = c.rep[e]
			}
			w++
		}
		if c.required || c.def[e] == c.maxDef {
			keepValue = append(keepValue, keep)
		}
	}
	if !c.required {
		c.def = c.def[:w]
		if c.rep != nil {
			c.rep = c.rep[:w]
		}
	}
	switch c.kind {
	case byteArrayKind:
		w, pos, start := 0, 0, int32(0)
		for v, end := range c.ends {
			if keepValue[v] {
				pos += copy(c.data[pos:], c.data[start:end])
				c.ends[w] = int32(pos)
				w++
			}
			start = end
		}
		c.data, c.ends = c.data[:pos], c.ends[:w]
	case int64Kind, timestampKind:
		c.ints = compact(c.ints, keepValue)
	case float64Kind:
		c.floats = compact(c.floats, keepValue)
	case boolKind:
		c.bools = compact(c.bools, keepValue)
	}
	c.rows = kept
}

// compact keeps the values whose keep is true.
func compact[V any](values []V, keep []bool) []V {
	w := 0
	for i, v := range values {
		if keep[i] {
			values[w] = v
			w++
		}
	}
	return values[:w]
}
