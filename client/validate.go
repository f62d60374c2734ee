package client

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxPageSize is the largest max_results the API accepts (document Part 8).
const MaxPageSize = 100

const maxTokenLen = 512 // real pagination tokens are under 100 characters

// TokenCheck selects how PaginationToken is checked before sending.
type TokenCheck int

const (
	TokenBase32Hex TokenCheck = iota // base32hex only (0-9A-V, either case, '=' padding), as the interface document says
	TokenOpaque                      // letters, digits, '=', '-' and '_': the real X API's tokens go beyond V
)

// ValidID reports whether s has the form of an X id: 1 to 19 decimal digits,
// without a leading zero (snowflakes, below 2^63). A response's other ids
// are refused: they would be written to the archive as they are.
func ValidID(s string) bool {
	_, err := strconv.ParseUint(s, 10, 64)
	return err == nil && len(s) <= 19 && s[0] != '0'
}

const idRule = "must be a decimal string of 1 to 19 digits without a leading zero"

func validID(op Operation, param, v string) error {
	if !ValidID(v) {
		return newInputError(op, param, v, idRule)
	}
	return nil
}

func validPage(op Operation, o PageOptions, check TokenCheck) error {
	if o.MaxResults < 0 || o.MaxResults > MaxPageSize {
		return newInputError(op, "max_results", strconv.Itoa(o.MaxResults), "must be 1 to 100, or 0 to omit it (the API default is 10)")
	}
	return validToken(op, o.PaginationToken, check)
}

func validToken(op Operation, t string, check TokenCheck) error {
	if t == "" {
		return nil
	}
	bad := func(reason string) error {
		return newInputError(op, "pagination_token", t, reason)
	}
	if len(t) > maxTokenLen {
		return bad("longer than " + strconv.Itoa(maxTokenLen) + " characters")
	}
	body := strings.TrimRight(t, "=")
	if body == "" {
		return bad("is only padding")
	}
	rule := "must be base32hex (0-9, A-V, optional '=' padding), pass back a next_token or previous_token unchanged"
	refused := func(c rune) bool { return !(c >= '0' && c <= '9' || c >= 'a' && c <= 'v' || c >= 'A' && c <= 'V') }
	if check == TokenOpaque {
		rule = "must be a token returned by the API (letters, digits, '-', '_', '=' padding)"
		refused = func(c rune) bool {
			return !(c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '-' || c == '_')
		}
	}
	if i := strings.IndexFunc(body, refused); i >= 0 {
		return bad(fmt.Sprintf("%s; character %d is %q", rule, i+1, body[i]))
	}
	return nil
}

// validFields checks the field-selection and expansion names.
func validFields(op Operation, f Fields) error {
	for _, p := range f.params(NamingTweets) {
		for _, name := range p.values {
			if problem := FieldNameProblem(name); problem != "" {
				return newInputError(op, p.name+" element", name, problem)
			}
		}
	}
	return nil
}

// FieldNameProblem says what is wrong with a field-selection or expansion name ("" if nothing).
func FieldNameProblem(name string) string {
	switch {
	case name == "":
		return "is empty"
	case len(name) > 64:
		return "is longer than 64 characters"
	case strings.ContainsFunc(name, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.')
	}):
		return "must be a field name (letters, digits, '_', '.'), one per element"
	}
	return ""
}
