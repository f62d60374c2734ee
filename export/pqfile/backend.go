package pqfile

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
)

// arrowFile writes records with pqarrow.
type arrowFile struct {
	fw      *pqarrow.FileWriter
	started bool
}

func (f *arrowFile) newRowGroup() error {
	f.started = true
	return f.fw.NewBufferedRowGroupChecked()
}

func (f *arrowFile) hasRowGroup() bool                       { return f.started }
func (f *arrowFile) writeRecord(rec arrow.RecordBatch) error { return f.fw.WriteBuffered(rec) }
func (f *arrowFile) close() error                            { return f.fw.Close() }

func (f *arrowFile) writeColumns(*Columns) error {
	return errors.New("this Parquet writer takes records, not Columns")
}

// columnFile writes Columns with arrow-go's column writers, into a file set
// up as pqarrow.NewFileWriter sets up its own: the Parquet schema pqarrow
// derives from the Arrow schema, the schema's metadata as key/value
// metadata, and the Arrow schema itself (ARROW:schema).
type columnFile struct {
	fw  *file.Writer
	rgw file.BufferedRowGroupWriter
	// the two columns the Converter puts in front: one value for every row
	syncTime   int64
	sourceName parquet.ByteArray
	frontDef   [2]int16 // their definition level (0: required)
	// buffers of the front columns, as long as the longest batch
	times []int64
	names []parquet.ByteArray
	defs  [2][]int16
	// values of the text column being written
	byteArrays []parquet.ByteArray
}

func newColumnFile(w io.Writer, sc *arrow.Schema, props *parquet.WriterProperties, conv *Converter) (*columnFile, error) {
	arrowProps := pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema())
	pq, err := pqarrow.ToParquet(sc, props, arrowProps)
	if err != nil {
		return nil, fmt.Errorf("parquet schema: %w", err)
	}
	md := sc.Metadata()
	meta := make(metadata.KeyValueMetadata, 0, md.Len()+1)
	for i, k := range md.Keys() {
		meta.Append(k, md.Values()[i])
	}
	stored, err := storedSchema(sc)
	if err != nil {
		return nil, err
	}
	meta.Append("ARROW:schema", base64.StdEncoding.EncodeToString(flight.SerializeSchema(stored, props.Allocator())))
	fw, err := file.NewParquetWriterWithError(w, pq.Root(), file.WithWriterProps(props), file.WithWriteMetadata(meta))
	if err != nil {
		return nil, err
	}
	syncTime, err := arrow.TimestampFromTime(conv.syncTime, arrow.Microsecond)
	if err != nil {
		return nil, err
	}
	return &columnFile{fw: fw, syncTime: int64(syncTime), sourceName: parquet.ByteArray(conv.sourceName),
		frontDef: [2]int16{pq.Column(0).MaxDefinitionLevel(), pq.Column(1).MaxDefinitionLevel()}}, nil
}

// storedSchema is sc as pqarrow stores it: list elements named "element",
// as the Parquet schema names them (pqarrow's normalizeSchemaForParquet, for
// the types Columns writes).
func storedSchema(sc *arrow.Schema) (*arrow.Schema, error) {
	fields := make([]arrow.Field, sc.NumFields())
	for i, f := range sc.Fields() {
		switch t := f.Type.(type) {
		case *arrow.ListType:
			elem := t.ElemField()
			if _, nested := elem.Type.(arrow.NestedType); nested {
				return nil, fmt.Errorf("column %s: lists of nested values are not written from Columns", f.Name)
			}
			elem.Name = "element"
			f = arrow.Field{Name: f.Name, Type: arrow.ListOfField(elem), Nullable: f.Nullable, Metadata: f.Metadata}
		case arrow.NestedType:
			return nil, fmt.Errorf("column %s: type %s is not written from Columns", f.Name, f.Type)
		}
		fields[i] = f
	}
	md := sc.Metadata()
	return arrow.NewSchema(fields, &md), nil
}

func (f *columnFile) newRowGroup() error {
	rgw, err := f.fw.AppendBufferedRowGroupChecked()
	if err != nil {
		return err
	}
	f.rgw = rgw
	return nil
}

func (f *columnFile) hasRowGroup() bool { return f.rgw != nil }

func (f *columnFile) writeRecord(arrow.RecordBatch) error {
	return errors.New("this Parquet writer takes Columns, not records")
}

func (f *columnFile) writeColumns(c *Columns) error {
	n := c.Len()
	for len(f.times) < n {
		f.times = append(f.times, f.syncTime)
		f.names = append(f.names, f.sourceName)
		f.defs[0] = append(f.defs[0], f.frontDef[0])
		f.defs[1] = append(f.defs[1], f.frontDef[1])
	}
	if err := writeLeaf(f.rgw, 0, "_cq_sync_time", f.times[:n], nil, nil, nil, levels(f.defs[0][:n], f.frontDef[0]), nil); err != nil {
		return err
	}
	if err := writeLeaf(f.rgw, 1, "_cq_source_name", nil, nil, nil, f.names[:n], levels(f.defs[1][:n], f.frontDef[1]), nil); err != nil {
		return err
	}
	for i := range c.cols {
		col := &c.cols[i]
		f.byteArrays = col.byteArrays(f.byteArrays[:0])
		if err := writeLeaf(f.rgw, i+2, col.name, col.ints, col.floats, col.bools, f.byteArrays, col.def, col.rep); err != nil {
			return err
		}
	}
	clear(f.byteArrays) // no reference to the batch's data once written
	return nil
}

// levels is def, or nil for a required column.
func levels(def []int16, maxDef int16) []int16 {
	if maxDef == 0 {
		return nil
	}
	return def
}

// writeLeaf writes one column's values of one batch; the values are in the
// slice of the column's type, the others are nil.
func writeLeaf(rgw file.BufferedRowGroupWriter, i int, name string, ints []int64, floats []float64, bools []bool, bytes []parquet.ByteArray, def, rep []int16) error {
	cw, err := rgw.Column(i)
	if err != nil {
		return fmt.Errorf("column %s: %w", name, err)
	}
	switch w := cw.(type) {
	case *file.Int64ColumnChunkWriter:
		_, err = w.WriteBatch(ints, def, rep)
	case *file.Float64ColumnChunkWriter:
		_, err = w.WriteBatch(floats, def, rep)
	case *file.BooleanColumnChunkWriter:
		_, err = w.WriteBatch(bools, def, rep)
	case *file.ByteArrayColumnChunkWriter:
		_, err = w.WriteBatch(bytes, def, rep)
	default:
		err = fmt.Errorf("column writer %T is not written from Columns", cw)
	}
	if err != nil {
		return fmt.Errorf("column %s: %w", name, err)
	}
	return nil
}

func (f *columnFile) close() error { return f.fw.Close() }
