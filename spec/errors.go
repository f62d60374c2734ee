package spec

import (
	"fmt"
	"strings"
)

// Problem is one thing wrong with a spec, at the path of its field (such as
// accounts[0].user_id; "" for the spec as a whole).
type Problem struct {
	Path string
	// Key is the unknown key, for a problem that is one ("" otherwise): it
	// is in Path's object, and in Msg.
	Key string
	Msg string
}

func (p Problem) String() string {
	if p.Path == "" {
		return p.Msg
	}
	return p.Path + ": " + p.Msg
}

// Error is every problem found in a spec. The exporter, which shows the
// spec inside its spec file, prefixes the paths with spec. and adds lines.
type Error struct {
	Problems []Problem
}

// Error lists the problems: on one line for one, one per line after a
// count for several.
func (e *Error) Error() string {
	lines := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		lines[i] = p.String()
	}
	if len(lines) == 1 {
		return "invalid plugin spec: " + lines[0]
	}
	return fmt.Sprintf("invalid plugin spec: %d problems:\n  %s", len(lines), strings.Join(lines, "\n  "))
}

// problems collects Problems.
type problems []Problem

func (ps *problems) add(path, format string, args ...any) {
	*ps = append(*ps, Problem{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (ps problems) err() error {
	if len(ps) == 0 {
		return nil
	}
	return &Error{Problems: ps}
}

// Suggest returns ` (did you mean "x"?)` for the candidate closest to name,
// when one is close enough to be a misspelling of it, else "".
func Suggest(name string, candidates []string) string {
	if best := closest(name, candidates); best != "" {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

// closest returns the candidate at the smallest edit distance from name, if
// that distance is at most a third of name's length (and at least 1), so
// that typos are matched and unrelated words are not.
func closest(name string, candidates []string) string {
	limit := max(1, len(name)/3)
	best, bestDist := "", limit+1
	for _, c := range candidates {
		if d := editDistance(strings.ToLower(name), strings.ToLower(c)); d < bestDist {
			best, bestDist = c, d
		}
	}
	return best
}

// editDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and swaps of two neighbours each count one.
func editDistance(a, b string) int {
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
