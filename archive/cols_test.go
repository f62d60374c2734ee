package archive

import (
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// A file whose column is not of the type its reader reads is damaged, not
// read as if the column were empty: check and repair trust no file.
func TestAColumnOfAnotherTypeFailsTheRead(t *testing.T) {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrow.NewSchema([]arrow.Field{
		{Name: "file_key", Type: arrow.BinaryTypes.String},
		{Name: "size", Type: arrow.BinaryTypes.String},
	}, nil))
	defer b.Release()
	b.Field(0).(*array.StringBuilder).Append("ab/abc.jpg")
	b.Field(1).(*array.StringBuilder).Append("12")
	rec := b.NewRecordBatch()
	defer rec.Release()

	read := 0
	err := rowsOf([]string{"file_key"}, []string{"size"}, func(c *Cols, i int) {
		c.Int("size", i)
		read++
	})(rec)
	if err == nil || !strings.Contains(err.Error(), "its column size is of type utf8, not int64") || read != 1 {
		t.Fatalf("read %d rows, error %v", read, err)
	}
}
