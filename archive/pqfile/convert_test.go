package pqfile_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/types"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
)

// A record whose column is not of its table's type is refused with an
// error naming the column, not written.
func TestARecordOfOtherColumnTypesIsRefused(t *testing.T) {
	table := &schema.Table{Name: "t", Columns: schema.ColumnList{
		{Name: "id", Type: arrow.BinaryTypes.String},
		{Name: "doc", Type: types.ExtensionTypes.JSON},
	}}
	w, err := pqfile.Create(filepath.Join(t.TempDir(), "t.parquet"), table, pqfile.Options{SourceName: "x"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.BinaryTypes.String}, {Name: "doc", Type: arrow.BinaryTypes.String}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append("1")
	b.Field(1).(*array.StringBuilder).Append(`{"a":1}`)
	rec := b.NewRecordBatch()
	defer rec.Release()
	err = w.Write(rec)
	if err == nil || !strings.Contains(err.Error(), "column doc") {
		t.Fatalf("writing a string where the table has JSON: %v, want an error naming column doc", err)
	}
}
