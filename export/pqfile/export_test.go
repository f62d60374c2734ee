package pqfile

// Room is the room column i's buffers have for text bytes and for values,
// and Used what they hold, for tests.
func (c *Columns) Room(i int) (data, values int) {
	col := &c.cols[i]
	return cap(col.data), max(cap(col.ends), cap(col.ints), cap(col.floats), cap(col.bools))
}

func (c *Columns) Used(i int) (data, values int) {
	col := &c.cols[i]
	return len(col.data), max(len(col.ends), len(col.ints), len(col.floats), len(col.bools))
}

// WriteColumnsNow encodes c in the caller's goroutine, as the encoding
// goroutine encodes a batch, for tests that look at the sink in between.
func (w *Writer) WriteColumnsNow(c *Columns) error {
	w.rows += int64(c.Len())
	return w.writeBatch(work{cols: c})
}
