// Package plural words counts for messages: "1 row", "2 rows".
package plural

import "fmt"

// Count is n and the noun for it: Count(1, "row", "rows") is "1 row",
// Count(2, …) "2 rows".
func Count[N ~int | ~int64](n N, one, many string) string {
	return fmt.Sprintf("%d %s", n, Pick(n, one, many))
}

// Pick is one when n is 1, otherwise many.
func Pick[N ~int | ~int64](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
