package pqfile

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/flight"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	pqschema "github.com/apache/arrow-go/v18/parquet/schema"
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

func (f *arrowFile) hasRowGroup() bool { return f.started }

// endRowGroup leaves the row group to pqarrow, which writes it when the
// next one starts or the file closes.
func (f *arrowFile) endRowGroup() (bool, error)              { return false, nil }
func (f *arrowFile) writeRecord(rec arrow.RecordBatch) error { return f.fw.WriteBuffered(rec) }
func (f *arrowFile) close() error                            { return f.fw.Close() }

func (f *arrowFile) writeColumns(*Columns) error {
	return errors.New("this Parquet writer takes records, not Columns")
}

// columnFile writes Columns into a file set up as pqarrow.NewFileWriter
// sets up its own: the Parquet schema pqarrow derives from the Arrow
// schema, the schema's metadata as key/value metadata, and the Arrow schema
// itself (ARROW:schema). Its pages are written by chunkWriters, its page
// headers, column chunk metadata and footer by arrow-go, into the file
// arrow-go's own writer would write from the same values (a buffered row
// group at a time).
type columnFile struct {
	sink    *tellWriter
	w       io.Writer
	meta    *metadata.FileMetaDataBuilder
	rg      *metadata.RowGroupMetaDataBuilder // the row group being written; nil before the first
	rgIndex int16
	rgRows  int
	chunks  []*chunkWriter // one per leaf column
	// the two columns the Converter puts in front: one value for every row
	syncTime   int64
	sourceName []byte
	frontDef   [2]int16 // their definition level (0: required)
	// buffers of the front columns, as long as the longest batch
	times []int64
	defs  [2][]int16
}

func newColumnFile(w io.Writer, sc *arrow.Schema, props *parquet.WriterProperties, conv *Converter, l *layout) (*columnFile, error) {
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
	syncTime, err := arrow.TimestampFromTime(conv.syncTime, arrow.Microsecond)
	if err != nil {
		return nil, err
	}
	f := &columnFile{sink: &tellWriter{w: w}, w: w, syncTime: int64(syncTime), sourceName: []byte(conv.sourceName),
		frontDef: [2]int16{pq.Column(0).MaxDefinitionLevel(), pq.Column(1).MaxDefinitionLevel()}}
	kinds := []physicalKind{timestampKind, byteArrayKind} // _cq_sync_time, _cq_source_name
	for _, c := range l.cols {
		kinds = append(kinds, c.kind)
	}
	if len(kinds) != pq.NumColumns() {
		return nil, fmt.Errorf("table %s: %d Parquet columns for %d columns", l.table.Name, pq.NumColumns(), len(kinds))
	}
	for i, kind := range kinds {
		cw, err := newChunkWriter(pq.Column(i), kind, props)
		if err != nil {
			return nil, err
		}
		f.chunks = append(f.chunks, cw)
	}
	// As file.NewParquetWriter: the magic number, then row groups.
	f.meta = metadata.NewFileMetadataBuilder(pqschema.NewSchema(pq.Root()), props, meta)
	if _, err := f.sink.Write([]byte("PAR1")); err != nil {
		return nil, err
	}
	return f, nil
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
	if _, err := f.endRowGroup(); err != nil {
		return err
	}
	f.rg, f.rgRows = f.meta.AppendRowGroup(), 0
	return nil
}

// endRowGroup writes the row group's columns, one after another, and its
// metadata.
func (f *columnFile) endRowGroup() (bool, error) {
	if f.rg == nil {
		return false, nil
	}
	var written int64
	for i, cw := range f.chunks {
		n, err := cw.writeChunk(f.sink, f.rg, f.rgIndex, int16(i))
		if err != nil {
			return false, fmt.Errorf("column %s: %w", cw.descr.Path(), err)
		}
		written += n
	}
	f.rg.SetNumRows(f.rgRows)
	if err := f.rg.Finish(written, f.rgIndex); err != nil {
		return false, err
	}
	f.rg, f.rgIndex = nil, f.rgIndex+1
	return true, nil
}

func (f *columnFile) hasRowGroup() bool { return f.rg != nil }

func (f *columnFile) writeRecord(arrow.RecordBatch) error {
	return errors.New("this Parquet writer takes Columns, not records")
}

func (f *columnFile) writeColumns(c *Columns) error {
	n := c.Len()
	for len(f.times) < n {
		f.times = append(f.times, f.syncTime)
		f.defs[0] = append(f.defs[0], f.frontDef[0])
		f.defs[1] = append(f.defs[1], f.frontDef[1])
	}
	front := []leafValues{
		{def: levels(f.defs[0][:n], f.frontDef[0]), n: n, ints: f.times[:n]},
		{def: levels(f.defs[1][:n], f.frontDef[1]), n: n, constant: f.sourceName},
	}
	for i, in := range front {
		if err := f.chunks[i].write(in); err != nil {
			return fmt.Errorf("column %s: %w", f.chunks[i].descr.Path(), err)
		}
	}
	for i := range c.cols {
		col := &c.cols[i]
		in := leafValues{def: levels(col.def, col.maxDef), rep: col.rep, n: col.valueCount(),
			data: col.values(), ends: col.ends, ints: col.ints, floats: col.floats, bools: col.bools}
		if !col.list {
			in.rep = nil
		}
		if err := f.chunks[i+2].write(in); err != nil {
			return fmt.Errorf("column %s: %w", col.name, err)
		}
	}
	f.rgRows += n
	return nil
}

// levels is def, or nil for a required column.
func levels(def []int16, maxDef int16) []int16 {
	if maxDef == 0 {
		return nil
	}
	return def
}

// close ends the last row group and writes the footer, as file.Writer's
// Close: the file's metadata, its length and the magic number. It closes
// the writer if it is an io.Closer.
func (f *columnFile) close() error {
	_, err := f.endRowGroup()
	if err == nil {
		var md *metadata.FileMetaData
		if md, err = f.meta.Snapshot(); err == nil {
			var n int64
			if n, err = md.WriteTo(f.sink, nil); err == nil {
				var tail [8]byte
				binary.LittleEndian.PutUint32(tail[:], uint32(n))
				copy(tail[4:], "PAR1")
				_, err = f.sink.Write(tail[:])
			}
		}
	}
	if c, ok := f.w.(io.Closer); ok {
		err = errors.Join(err, c.Close())
	}
	return err
}
