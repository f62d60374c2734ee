// Package ids keeps X ids compactly: Parse, the one parser of an id as a
// number; Set, a set of ids; Sorted, a sorted list of numbers; and Pack, the
// text encoding of the state that lists them. Every X id is a decimal number
// that fits a uint64, kept in 8 bytes where a string takes 40 or more, and a
// first sync reads every post of a list. An id that is not such a number is
// kept as the server sent it: nothing depends on the id format the document
// leaves open ("string").
package ids

import "strconv"

// Parse reads a canonical decimal id (digits only, no leading zero) that
// fits a uint64, so that formatting the number gives the id back: "7" and
// "007" stay two ids.
func Parse(id string) (uint64, bool) {
	if id == "" || len(id) > 20 || (id[0] == '0' && len(id) > 1) {
		return 0, false
	}
	n, err := strconv.ParseUint(id, 10, 64) // digits only: no sign, no underscore in base 10
	return n, err == nil
}
