// Package textpack turns binary state into compact text: DEFLATE, then
// base64. State backends store strings, and lists of post ids are most of
// the state.
package textpack

import (
	"bytes"
	"compress/flate"
	"encoding/base64"
	"fmt"
	"io"
)

// Pack compresses raw and encodes it as base64 text.
func Pack(raw []byte) ([]byte, error) {
	var packed bytes.Buffer
	zw, err := flate.NewWriter(&packed, flate.BestSpeed)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(raw); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(packed.Len()))
	base64.StdEncoding.Encode(out, packed.Bytes())
	return out, nil
}

// Unpack reverses Pack. what names the value in errors.
func Unpack(text []byte, what string) ([]byte, error) {
	packed := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	n, err := base64.StdEncoding.Decode(packed, text)
	if err != nil {
		return nil, fmt.Errorf("%s: not base64: %w", what, err)
	}
	raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(packed[:n])))
	if err != nil {
		return nil, fmt.Errorf("%s: not DEFLATE data: %w", what, err)
	}
	return raw, nil
}
