// Package suggest finds the name meant by a misspelled one (a spec field, a
// flag): the candidate at the smallest edit distance.
package suggest

import (
	"fmt"
	"strings"
)

// Phrase returns ` (did you mean "x"?)` for the candidate at the smallest
// edit distance from name, if that distance is at most a third of name's
// length (and at least 1), so that typos are matched and unrelated words are
// not; else "".
func Phrase(name string, candidates []string) string {
	best, bestDist := "", max(1, len(name)/3)+1
	for _, c := range candidates {
		if d := Distance(strings.ToLower(name), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

// Distance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and swaps of two neighbours each count one.
func Distance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev2 := make([]int, len(rb)+1)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(rb)]
}
