package export

import "fmt"

// plural is n and the noun for it: plural(1, "row", "rows") is "1 row",
// plural(2, …) "2 rows".
func plural[N ~int | ~int64](n N, one, many string) string {
	return fmt.Sprintf("%d %s", n, pick(n, one, many))
}

// pick is one when n is 1, otherwise many.
func pick[N ~int | ~int64](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
