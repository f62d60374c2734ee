package pqfile

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/parquet/compress"
)

// Codecs are the compression codecs a file can be written with, by the name
// `cq-source-x export --compression` takes.
var Codecs = map[string]compress.Compression{
	"snappy":  compress.Codecs.Snappy,
	"zstd":    compress.Codecs.Zstd,
	"gzip":    compress.Codecs.Gzip,
	"lz4_raw": compress.Codecs.Lz4Raw,
	"none":    compress.Codecs.Uncompressed,
}

// DefaultCodec is the codec files are written with unless told otherwise:
// snappy, as pyarrow, DuckDB and Spark write by default, and fast to write;
// zstd makes smaller files (docs/parquet.md).
const DefaultCodec = "snappy"

func ParseCodec(name string) (compress.Compression, error) {
	if name == "" {
		name = DefaultCodec
	}
	c, ok := Codecs[strings.ToLower(name)]
	if !ok {
		return 0, fmt.Errorf("unknown compression %q (one of: %s)", name, strings.Join(slices.Sorted(maps.Keys(Codecs)), ", "))
	}
	return c, nil
}
