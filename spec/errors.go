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
