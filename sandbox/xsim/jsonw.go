package xsim

import (
	"strconv"
	"time"
	"unicode/utf8"
)

// Hand-written JSON appenders for the hot path (a page of posts is encoded
// without reflection and, after warm-up, without allocation).

const hexDigits = "0123456789abcdef"

// appendStr appends s as a JSON string. Invalid UTF-8 becomes U+FFFD; control
// characters, quote, backslash, U+2028 and U+2029 are escaped.
func appendStr[T ~string | ~[]byte](dst []byte, s T) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"':
				dst = append(dst, '\\', '"')
			case '\\':
				dst = append(dst, '\\', '\\')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		end := min(i+utf8.UTFMax, len(s))
		r, size := utf8.DecodeRuneInString(string(s[i:end]))
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// appendKey appends ,"key": (or "key": when first is true).
func appendKey(dst []byte, key string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, key...)
	return append(dst, '"', ':')
}

func appendKeyInt(dst []byte, key string, v int64) []byte {
	dst = appendKey(dst, key)
	return strconv.AppendInt(dst, v, 10)
}

func appendKeyStr[T ~string | ~[]byte](dst []byte, key string, v T) []byte {
	dst = appendKey(dst, key)
	return appendStr(dst, v)
}

func appendKeyBool(dst []byte, key string, v bool) []byte {
	dst = appendKey(dst, key)
	return strconv.AppendBool(dst, v)
}

// appendTime appends t (Unix milliseconds) as an RFC 3339 UTC string with milliseconds.
func appendTime(dst []byte, ms int64) []byte {
	dst = append(dst, '"')
	dst = time.UnixMilli(ms).UTC().AppendFormat(dst, "2006-01-02T15:04:05.000Z")
	return append(dst, '"')
}
