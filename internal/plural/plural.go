// Package plural words counts for messages: "1 row", "2 rows", "a, b and
// 3 more".
package plural

import (
	"fmt"
	"strings"
)

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

// Some joins the first shown names and counts the rest: Some([a b c d], 2)
// is "a, b and 2 more".
func Some(names []string, shown int) string {
	if len(names) <= shown {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:shown], ", "), len(names)-shown)
}
