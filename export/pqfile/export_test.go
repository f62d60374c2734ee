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
