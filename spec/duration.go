package spec

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/invopop/jsonschema"
)

// Duration is a duration of the spec: what time.ParseDuration reads, and
// days ("7d", "1d12h"), which a schedule of checks is naturally given in.
// It replaces the SDK's configtype.Duration, whose JSON schema accepts any
// unit while its parser refuses "d": `cloudquery validate-config` passed a
// spec that every sync then refused.
type Duration struct {
	d time.Duration
}

func NewDuration(d time.Duration) Duration { return Duration{d: d} }

// Duration is 0 for a nil d, a setting left out.
func (d *Duration) Duration() time.Duration {
	if d == nil {
		return 0
	}
	return d.d
}

// durationPattern is what UnmarshalJSON reads, for the JSON schema: an
// optional sign, then "0" or numbers each with a unit.
const durationPattern = `^[-+]?(0|(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h|d))+)$`

var (
	durationRE   = regexp.MustCompile(durationPattern)
	durationPart = regexp.MustCompile(`([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h|d)`)
)

// DurationHint says what a duration looks like, for messages.
const DurationHint = `a duration such as "90s", "16m", "1h30m" or "7d" (units ms, s, m, h, d)`

// UnmarshalJSON reads a duration as time.ParseDuration does, with "d" for
// days of 24 hours.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	if !durationRE.MatchString(s) {
		return fmt.Errorf("%q is not %s", s, DurationHint)
	}
	// Days become hours, and time.ParseDuration reads the rest (and
	// reports a value out of range).
	hours := durationPart.ReplaceAllStringFunc(s, func(part string) string {
		if !strings.HasSuffix(part, "d") {
			return part
		}
		days, err := strconv.ParseFloat(strings.TrimSuffix(part, "d"), 64)
		if err != nil {
			return part
		}
		return strconv.FormatFloat(days*24, 'f', -1, 64) + "h"
	})
	v, err := time.ParseDuration(hours)
	if err != nil {
		return fmt.Errorf("%q: %w", s, err)
	}
	d.d = v
	return nil
}

// MarshalJSON writes the duration as time.Duration prints it ("168h0m0s"),
// which UnmarshalJSON reads back.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(d.d.String()) }

// JSONSchema is the schema `cloudquery validate-config` checks a duration
// against: the strings UnmarshalJSON reads, no more.
func (Duration) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Type:        "string",
		Pattern:     durationPattern,
		Title:       "Duration",
		Description: "A duration such as \"90s\", \"16m\", \"1h30m\" or \"7d\": numbers each with a unit, ms, s, m, h or d (days of 24 hours).",
	}
}
