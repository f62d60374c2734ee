// Pack and Unpack turn binary state into text (state backends store
// strings): gzip, whose CRC-32 and length make a damaged value an error, not
// other ids, of stored blocks (docs/benchmarks.md says why not compressed).

package ids

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"sync"
)

// gzip writers (with hash tables of hundreds of kilobytes whatever the
// level) and readers (a 32 KiB window) are reused: a sync packs and unpacks
// a value per list of every account.
var (
	writers = sync.Pool{New: func() any {
		zw, _ := gzip.NewWriterLevel(nil, gzip.NoCompression) // a valid level: no error
		return zw
	}}
	readers = sync.Pool{New: func() any { return new(gzip.Reader) }} // Reset makes one NewReader's
)

// Pack wraps raw in a gzip member and encodes it as base64 text.
func Pack(raw []byte) ([]byte, error) {
	var packed bytes.Buffer
	// Stored blocks take 5 bytes of header per 64 KiB; gzip adds 18.
	packed.Grow(len(raw) + len(raw)/(64<<10)*5 + 64)
	zw := writers.Get().(*gzip.Writer)
	zw.Reset(&packed)
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	zw.Reset(io.Discard) // the pooled writer must not keep this value's buffer alive
	writers.Put(zw)
	out := make([]byte, base64.StdEncoding.EncodedLen(packed.Len()))
	base64.StdEncoding.Encode(out, packed.Bytes())
	return out, nil
}

// Unpack reverses Pack, and reads the bare DEFLATE streams earlier versions
// wrote (none starts with gzip's 0x1f: block type 3 is reserved). what names
// the value in errors.
func Unpack(text []byte, what string) ([]byte, error) {
	packed := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	n, err := base64.StdEncoding.Decode(packed, text)
	if err != nil {
		return nil, fmt.Errorf("%s: not base64: %w", what, err)
	}
	packed = packed[:n]
	if len(packed) > 0 && packed[0] == 0x1f {
		return gunzip(packed, what)
	}
	raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(packed)))
	if err != nil {
		return nil, fmt.Errorf("%s: not DEFLATE data: %w", what, err)
	}
	return raw, nil
}

func gunzip(packed []byte, what string) ([]byte, error) {
	zr := readers.Get().(*gzip.Reader)
	if err := zr.Reset(bytes.NewReader(packed)); err != nil {
		return nil, fmt.Errorf("%s: not gzip data: %w", what, err)
	}
	zr.Multistream(false)
	// Pack writes stored blocks: the data is no longer than its member
	// (ReadFrom wants MinRead bytes free to read the end).
	var raw bytes.Buffer
	raw.Grow(len(packed) + bytes.MinRead)
	if _, err := raw.ReadFrom(zr); err != nil { // checks the CRC-32 and length at the end
		return nil, fmt.Errorf("%s: damaged (%w)", what, err) // err says "gzip: ..."
	}
	readers.Put(zr)
	return raw.Bytes(), nil
}

// AppendStrings appends each string length-prefixed (a uvarint, then the
// bytes): the id lists' encoding of ids that are not numbers. The count is
// the caller's.
func AppendStrings(b []byte, strs []string) []byte {
	for _, s := range strs {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	return b
}

// ReadStrings reads n strings written by AppendStrings. On input that ends
// too soon it returns the strings read and false.
func ReadStrings(r *bytes.Reader, n uint64) ([]string, bool) {
	out := make([]string, 0, min(n, uint64(r.Len())))
	for range n {
		size, err := binary.ReadUvarint(r)
		if err != nil || size > uint64(r.Len()) {
			return out, false
		}
		b := make([]byte, size)
		_, _ = r.Read(b) // size <= r.Len(): all of it
		out = append(out, string(b))
	}
	return out, true
}
