package spec

import (
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"
)

// ByteSize is a size in bytes: a whole number, or a string with a unit
// ("512MB", "2GiB"; KB, MB, GB and TB are powers of 1000, KiB, MiB, GiB and
// TiB of 1024).
type ByteSize struct {
	n int64
}

func NewByteSize(n int64) ByteSize { return ByteSize{n: n} }

func (b *ByteSize) Bytes() int64 {
	if b == nil {
		return 0
	}
	return b.n
}

const byteSizePattern = `^[0-9]+(\.[0-9]+)? ?([KMGT]i?B|B)?$`

var byteSizeRE = regexp.MustCompile(byteSizePattern)

// ByteSizeHint says what a size looks like, for messages.
const ByteSizeHint = `a size in bytes, or with a unit such as "512MB" or "2GiB" (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)`

var byteUnits = map[string]float64{
	"": 1, "B": 1, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12,
	"KiB": 1 << 10, "MiB": 1 << 20, "GiB": 1 << 30, "TiB": 1 << 40,
}

func (b *ByteSize) UnmarshalJSON(data []byte) error {
	if len(data) > 0 && data[0] != '"' {
		var n json.Number
		if err := json.Unmarshal(data, &n); err != nil {
			return fmt.Errorf("must be %s", ByteSizeHint)
		}
		v, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || v < 0 {
			return fmt.Errorf("must be %s, not %s", ByteSizeHint, n)
		}
		b.n = v
		return nil
	}
	var s string
	if err := json.Unmarshal(data, &s); err != nil {
		return err
	}
	if !byteSizeRE.MatchString(s) {
		return fmt.Errorf("%q is not %s", s, ByteSizeHint)
	}
	num := strings.TrimRight(s, "KMGTiB ")
	f, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return fmt.Errorf("%q: %w", s, err)
	}
	f *= byteUnits[strings.TrimSpace(s[len(num):])]
	if f >= math.MaxInt64 {
		return fmt.Errorf("%q is too large", s)
	}
	b.n = int64(f)
	return nil
}

func (b ByteSize) MarshalJSON() ([]byte, error) { return json.Marshal(b.n) }

// JSONSchema is the schema `cloudquery validate-config` checks a size
// against: what UnmarshalJSON reads.
func (ByteSize) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		Title:       "Byte size",
		Description: "A size in bytes, or a string with a unit: \"512MB\", \"2GiB\" (KB, MB, GB, TB are powers of 1000; KiB, MiB, GiB, TiB of 1024).",
		OneOf: []*jsonschema.Schema{
			{Type: "integer", Minimum: json.Number("0")},
			{Type: "string", Pattern: byteSizePattern},
		},
	}
}
