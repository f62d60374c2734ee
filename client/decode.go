package client

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Decoding of post pages is on the pipeline's hot path (a million posts per
// benchmark run), so a page is decoded in one pass: a small validating
// scanner walks the body once, checks its syntax as strictly as
// encoding/json, decodes the few post fields the client types and keeps every
// post (and every includes object) as a sub-slice of the body, so Raw costs
// neither a copy nor a second parse. The equivalent encoding/json decode
// ([]json.RawMessage, then one Unmarshal per post) is kept in the tests as the
// reference the scanner is checked against (TestDecodePostPage_AgreesWithEncodingJSON,
// FuzzDecodePostPage) and as the baseline of BenchmarkDecodePostPage.
//
// Small bodies (folders, users/me, add/remove) use encoding/json directly.

var errNotObject = shapeError("top-level value is not a JSON object")

// shapeError is valid JSON of the wrong shape for the operation.
type shapeError string

func (e shapeError) Error() string { return string(e) }

func shapef(format string, args ...any) error { return shapeError(fmt.Sprintf(format, args...)) }

// syntaxError is a JSON syntax error at a byte offset.
type syntaxError struct {
	msg string
	off int
}

func (e *syntaxError) Error() string { return fmt.Sprintf("%s at offset %d", e.msg, e.off) }

// isSyntaxError reports whether err says the body was not valid JSON.
func isSyntaxError(err error) bool {
	var se *syntaxError
	var jse *json.SyntaxError
	return errors.As(err, &se) || errors.As(err, &jse) || errors.Is(err, errEmptyBody)
}

var errEmptyBody = errors.New("empty body")

// decodePostPage decodes a list_bookmarks page; sizeHint is the number of
// tailMeta reads the top-level "meta" object when it is the body's last
// member, as X writes pages, without decoding the members before it. ok is
// false when that cannot be told for sure: no such key, or anything but the
// body's closing brace after its value. (`"meta":` cannot occur inside a
// JSON string, whose quotes are escaped; a nested "meta" is followed by at
// least two closing brackets.)
func tailMeta(body []byte) (m Meta, ok bool) {
	i := bytes.LastIndex(body, []byte(`"meta":`))
	if i < 0 {
		return Meta{}, false
	}
	s := scanner{b: body, i: i + len(`"meta":`)}
	if !s.next('{') {
		return Meta{}, false
	}
	start, end, err := s.skip()
	if err != nil {
		return Meta{}, false
	}
	if rest := bytes.TrimSpace(body[end:]); len(rest) != 1 || rest[0] != '}' {
		return Meta{}, false
	}
	if err := json.Unmarshal(body[start:end], &m); err != nil {
		return Meta{}, false
	}
	return m, true
}

// posts expected (the page size asked for).
func decodePostPage(body []byte, sizeHint int) (*PostPage, error) {
	page := &PostPage{}
	sawMeta := false
	s := scanner{b: body}
	if err := s.begin('{'); err != nil {
		return nil, preferSyntax(body, err)
	}
	err := s.object(func(key []byte) error {
		switch string(key) {
		case "data":
			return s.array("data", func(i int) error {
				if !s.next('{') {
					if _, _, err := s.skip(); err != nil {
						return err
					}
					return shapef("data[%d] is not an object", i)
				}
				if page.Data == nil {
					page.Data = make([]Post, 0, min(max(sizeHint, 1), MaxPageSize))
				}
				page.Data = append(page.Data, Post{})
				p := &page.Data[len(page.Data)-1]
				start := s.i
				if err := s.post(p); err != nil {
					return fmt.Errorf("data[%d]: %w", i, err)
				}
				if p.ID == "" {
					return shapef("data[%d] has no id", i)
				}
				p.Raw = body[start:s.i:s.i]
				return nil
			})
		case "includes":
			if s.next('n') {
				return s.null()
			}
			if !s.next('{') {
				return s.wrongType("includes", "an object")
			}
			return s.object(func(key []byte) error {
				var dst *[]json.RawMessage
				switch string(key) {
				case "users":
					dst = &page.Includes.Users
				case "media":
					dst = &page.Includes.Media
				case "tweets":
					dst = &page.Includes.Tweets
				case "polls":
					dst = &page.Includes.Polls
				case "places":
					dst = &page.Includes.Places
				default:
					_, _, err := s.skip()
					return err
				}
				return s.array("includes."+string(key), func(int) error {
					start, end, err := s.skip()
					*dst = append(*dst, body[start:end:end])
					return err
				})
			})
		case "errors":
			return s.array("errors", func(i int) error {
				start, end, err := s.skip()
				if err != nil {
					return err
				}
				raw := body[start:end:end]
				var pe PartialError
				if err := json.Unmarshal(raw, &pe); err != nil {
					return shapef("errors[%d]: %v", i, err)
				}
				pe.Raw = raw
				page.Errors = append(page.Errors, pe)
				return nil
			})
		case "meta":
			start, end, err := s.skip()
			if err != nil {
				return err
			}
			if err := json.Unmarshal(body[start:end], &page.Meta); err != nil {
				return shapef("meta: %v", err)
			}
			sawMeta = hasResultCount(body[start:end])
			return nil
		default:
			_, _, err := s.skip()
			return err
		}
	})
	if err == nil {
		err = s.end()
	}
	if err == nil && !sawMeta {
		err = errNoMeta
	}
	if err != nil {
		return nil, preferSyntax(body, err)
	}
	return page, nil
}

// errNoMeta refuses a bookmarks page without meta.result_count, which the
// document says every page has. (The folder payloads are not shown in the
// document, and X's own schema leaves their meta free-form: they are taken
// as they come.) Taken as it is, such a page has no next_token: the
// walk would end there as if the list did, and count every post it holds
// below as removed — the next sync would read, and bill, all of them again.
var errNoMeta = shapeError("no meta.result_count (every page has one)")

// hasResultCount reports whether the meta object holds result_count.
func hasResultCount(meta []byte) bool {
	var m struct {
		ResultCount *int `json:"result_count"`
	}
	return json.Unmarshal(meta, &m) == nil && m.ResultCount != nil
}

// preferSyntax reports a syntax error over a shape error: the scanner stops
// at the first wrong shape, before it has checked the rest of the body.
func preferSyntax(body []byte, err error) error {
	if isSyntaxError(err) || json.Valid(body) {
		return err
	}
	var v json.RawMessage
	if jerr := json.Unmarshal(body, &v); jerr != nil {
		return jerr
	}
	return err
}

// maxDepth bounds nesting, as encoding/json does.
const maxDepth = 10000

// scanner is a validating single-pass JSON reader over a byte slice.
type scanner struct {
	b     []byte
	i     int
	depth int
}

func (s *scanner) syntax(msg string) error {
	if s.i >= len(s.b) {
		return &syntaxError{"unexpected end of JSON input", s.i}
	}
	return &syntaxError{msg, s.i}
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// next skips white space and reports whether the next byte is c.
func (s *scanner) next(c byte) bool {
	s.ws()
	return s.i < len(s.b) && s.b[s.i] == c
}

// begin checks that the body starts with a c-delimited value.
func (s *scanner) begin(c byte) error {
	s.ws()
	if s.i >= len(s.b) {
		return errEmptyBody
	}
	if s.b[s.i] != c {
		if _, _, err := s.skip(); err != nil {
			return err
		}
		return errNotObject
	}
	return nil
}

// end checks that only white space follows the top-level value.
func (s *scanner) end() error {
	s.ws()
	if s.i != len(s.b) {
		return s.syntax("invalid character after top-level value")
	}
	return nil
}

// wrongType consumes the (valid) value and reports a shape error.
func (s *scanner) wrongType(name, want string) error {
	if _, _, err := s.skip(); err != nil {
		return err
	}
	return shapef("%s is not %s", name, want)
}

func (s *scanner) literal(lit string) error {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		for k := 0; k < len(lit) && s.i < len(s.b) && s.b[s.i] == lit[k]; k++ {
			s.i++
		}
		return s.syntax("invalid literal")
	}
	s.i += len(lit)
	return nil
}

func (s *scanner) null() error { s.ws(); return s.literal("null") }

// skip validates and consumes the next value and returns its span.
func (s *scanner) skip() (start, end int, err error) {
	s.ws()
	start = s.i
	if s.i >= len(s.b) {
		return start, s.i, s.syntax("")
	}
	switch c := s.b[s.i]; {
	case c == '"':
		_, err = s.skipString()
	case c == '{':
		err = s.object(func([]byte) error { _, _, err := s.skip(); return err })
	case c == '[':
		err = s.array("", func(int) error { _, _, err := s.skip(); return err })
	case c == 't':
		err = s.literal("true")
	case c == 'f':
		err = s.literal("false")
	case c == 'n':
		err = s.literal("null")
	case c == '-' || c >= '0' && c <= '9':
		err = s.number()
	default:
		err = s.syntax(fmt.Sprintf("invalid character %q looking for beginning of value", c))
	}
	return start, s.i, err
}

func (s *scanner) digits() int {
	n := 0
	for s.i < len(s.b) && s.b[s.i] >= '0' && s.b[s.i] <= '9' {
		s.i++
		n++
	}
	return n
}

// number consumes -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func (s *scanner) number() error {
	if s.b[s.i] == '-' {
		s.i++
	}
	if s.i < len(s.b) && s.b[s.i] == '0' {
		s.i++
	} else if s.digits() == 0 {
		return s.syntax("invalid number")
	}
	if s.i < len(s.b) && s.b[s.i] == '.' {
		s.i++
		if s.digits() == 0 {
			return s.syntax("invalid number")
		}
	}
	if s.i < len(s.b) && (s.b[s.i] == 'e' || s.b[s.i] == 'E') {
		s.i++
		if s.i < len(s.b) && (s.b[s.i] == '+' || s.b[s.i] == '-') {
			s.i++
		}
		if s.digits() == 0 {
			return s.syntax("invalid number")
		}
	}
	return nil
}

// plain marks the bytes a string may hold without a closer look: everything
// but control characters, '"', '\\' and non-ASCII bytes.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return
}()

// skipString validates and consumes a string at s.i (a '"'). esc reports
// escapes or non-ASCII bytes, which need unquote.
func (s *scanner) skipString() (esc bool, err error) {
	b := s.b
	i := s.i + 1
	for {
		// Eight plain ASCII bytes at a time: none below 0x20, none with the
		// high bit, no '"' (0x22) and no '\\' (0x5c).
		for i+8 <= len(b) {
			w := binary.LittleEndian.Uint64(b[i:])
			if (hasLess(w, 0x20)|w|hasZero(w^(lsb*'"'))|hasZero(w^(lsb*'\\')))&msb != 0 {
				break
			}
			i += 8
		}
		for i < len(b) && plain[b[i]] {
			i++
		}
		if i >= len(b) {
			s.i = i
			return esc, s.syntax("")
		}
		switch c := b[i]; {
		case c == '"':
			s.i = i + 1
			return esc, nil
		case c == '\\':
			esc = true
			if i+1 >= len(b) {
				s.i = len(b)
				return esc, s.syntax("")
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				i += 2
				for k := 0; k < 4; k++ {
					if i >= len(b) || !isHex(b[i]) {
						s.i = i
						return esc, s.syntax("invalid character in \\u hexadecimal character escape")
					}
					i++
				}
			default:
				s.i = i + 1
				return esc, s.syntax("invalid character in string escape code")
			}
		case c < 0x20:
			s.i = i
			return esc, s.syntax("invalid character in string literal")
		default: // non-ASCII: any bytes are accepted (invalid UTF-8 becomes U+FFFD)
			esc = true
			i++
		}
	}
}

const (
	lsb = 0x0101010101010101
	msb = 0x8080808080808080
)

// hasZero sets the high bit of some byte of the result if and only if w has
// a zero byte ("determine if a word has a zero byte", Bit Twiddling Hacks).
func hasZero(w uint64) uint64 { return (w - lsb) &^ w }

// hasLess is the same test for "some byte is less than n" (n <= 128).
func hasLess(w uint64, n uint64) uint64 { return (w - lsb*n) &^ w }

func isHex(c byte) bool { return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' }

// object calls fn for each member of the object at s.i; fn must consume the
// value (validating it).
func (s *scanner) object(fn func(key []byte) error) error {
	s.ws()
	if s.i >= len(s.b) || s.b[s.i] != '{' {
		return s.syntax("expected '{'")
	}
	if s.depth++; s.depth > maxDepth {
		return s.syntax("exceeded max depth")
	}
	s.i++
	if s.next('}') {
		s.i++
		s.depth--
		return nil
	}
	for {
		if !s.next('"') {
			return s.syntax("invalid character looking for beginning of object key string")
		}
		ks := s.i
		esc, err := s.skipString()
		if err != nil {
			return err
		}
		key := s.b[ks+1 : s.i-1]
		if esc {
			key = []byte(unquote(key))
		}
		if !s.next(':') {
			return s.syntax("invalid character after object key")
		}
		s.i++
		if err := fn(key); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return s.syntax("")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case '}':
			s.i++
			s.depth--
			return nil
		default:
			return s.syntax("invalid character after object key:value pair")
		}
	}
}

// array calls fn for each element of the array at s.i (null counts as an
// empty array); fn must consume the element (validating it).
func (s *scanner) array(name string, fn func(i int) error) error {
	s.ws()
	if s.next('n') {
		return s.null()
	}
	if s.i >= len(s.b) || s.b[s.i] != '[' {
		return s.wrongType(name, "an array")
	}
	if s.depth++; s.depth > maxDepth {
		return s.syntax("exceeded max depth")
	}
	s.i++
	if s.next(']') {
		s.i++
		s.depth--
		return nil
	}
	for n := 0; ; n++ {
		if err := fn(n); err != nil {
			return err
		}
		s.ws()
		if s.i >= len(s.b) {
			return s.syntax("")
		}
		switch s.b[s.i] {
		case ',':
			s.i++
		case ']':
			s.i++
			s.depth--
			return nil
		default:
			return s.syntax("invalid character after array element")
		}
	}
}

// str decodes a string value (null gives "").
func (s *scanner) str(name string) (string, error) {
	if !s.next('"') {
		if s.next('n') {
			return "", s.null()
		}
		return "", s.wrongType(name, "a string")
	}
	start := s.i
	esc, err := s.skipString()
	if err != nil {
		return "", err
	}
	raw := s.b[start+1 : s.i-1]
	if !esc {
		return bodyString(raw), nil
	}
	return unquote(raw), nil
}

// bodyString is raw as a string without a copy: the string shares the
// body's memory, as Post.Raw does. Bodies are never modified after they are
// read (readBody makes a new one for every response), so the string cannot
// change. Decoding a page allocated a string per field before; this keeps
// the decode to about one allocation per post.
func bodyString(raw []byte) string {
	if len(raw) == 0 {
		return ""
	}
	return unsafe.String(&raw[0], len(raw))
}

// strReuse is str that returns one of prev instead of a new string when the
// value equals it: a post's id, conversation_id and edit_history_tweet_ids
// are usually the same string.
func (s *scanner) strReuse(name string, prev ...string) (string, error) {
	if s.next('"') {
		start := s.i
		esc, err := s.skipString()
		if err != nil {
			return "", err
		}
		raw := s.b[start+1 : s.i-1]
		if esc {
			return unquote(raw), nil
		}
		for _, p := range prev {
			if string(raw) == p {
				return p, nil
			}
		}
		return bodyString(raw), nil
	}
	return s.str(name)
}

// unquote decodes the contents of a valid JSON string exactly as
// encoding/json does: escapes, surrogate pairs (a lone surrogate becomes
// U+FFFD) and invalid UTF-8 (each bad byte becomes U+FFFD).
func unquote(raw []byte) string {
	var out strings.Builder
	out.Grow(len(raw))
	for r := 0; r < len(raw); {
		c := raw[r]
		switch {
		case c == '\\':
			switch e := raw[r+1]; e {
			case '"', '\\', '/':
				out.WriteByte(e)
				r += 2
			case 'b':
				out.WriteByte('\b')
				r += 2
			case 'f':
				out.WriteByte('\f')
				r += 2
			case 'n':
				out.WriteByte('\n')
				r += 2
			case 'r':
				out.WriteByte('\r')
				r += 2
			case 't':
				out.WriteByte('\t')
				r += 2
			case 'u':
				rr := getu4(raw[r:])
				r += 6
				if utf16.IsSurrogate(rr) {
					if dec := utf16.DecodeRune(rr, getu4(raw[r:])); dec != utf8.RuneError {
						r += 6
						out.WriteRune(dec)
						break
					}
					rr = utf8.RuneError
				}
				out.WriteRune(rr)
			}
		case c < utf8.RuneSelf:
			out.WriteByte(c)
			r++
		default:
			rr, size := utf8.DecodeRune(raw[r:])
			r += size
			out.WriteRune(rr)
		}
	}
	return out.String()
}

// getu4 decodes \uXXXX at the start of b, or returns -1.
func getu4(b []byte) rune {
	if len(b) < 6 || b[0] != '\\' || b[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range b[2:6] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r*16 + rune(c)
	}
	return r
}

// raw consumes the next value and returns it as a sub-slice of the body.
func (s *scanner) raw() (json.RawMessage, error) {
	start, end, err := s.skip()
	return s.b[start:end:end], err
}

func lastOf(v []string) string {
	if len(v) == 0 {
		return ""
	}
	return v[len(v)-1]
}

// post decodes the typed fields of the post object at s.i.
func (s *scanner) post(p *Post) error {
	return s.object(func(key []byte) error {
		var err error
		switch string(key) {
		case "id":
			p.ID, err = s.strReuse("id", p.ConversationID, lastOf(p.EditHistoryTweetIDs))
		case "text":
			p.Text, err = s.str("text")
		case "author_id":
			p.AuthorID, err = s.str("author_id")
		case "conversation_id":
			p.ConversationID, err = s.strReuse("conversation_id", p.ID, lastOf(p.EditHistoryTweetIDs))
		case "lang":
			p.Lang, err = s.str("lang")
		case "in_reply_to_user_id":
			p.InReplyToUserID, err = s.str("in_reply_to_user_id")
		case "created_at":
			var v string
			if v, err = s.str("created_at"); err == nil && v != "" {
				// RFC 3339 with or without fractional seconds. An
				// unparseable time leaves CreatedAt nil; Raw keeps it.
				if t, perr := time.Parse(time.RFC3339, v); perr == nil {
					p.CreatedAt = &t
				}
			}
		case "possibly_sensitive":
			s.ws()
			switch {
			case s.next('t'):
				if err = s.literal("true"); err == nil {
					v := true
					p.PossiblySensitive = &v
				}
			case s.next('f'):
				if err = s.literal("false"); err == nil {
					v := false
					p.PossiblySensitive = &v
				}
			case s.next('n'):
				err = s.null()
			default:
				err = s.wrongType("possibly_sensitive", "a boolean")
			}
		case "public_metrics":
			p.PublicMetrics, err = s.raw()
		case "entities":
			p.Entities, err = s.raw()
		case "referenced_tweets":
			p.ReferencedTweets, err = s.raw()
		case "note_tweet":
			p.NoteTweet, err = s.raw()
		case "attachments":
			s.ws()
			start := s.i
			if s.next('{') {
				p.MediaKeys = p.MediaKeys[:0]
				err = s.object(func(key []byte) error {
					if string(key) != "media_keys" {
						_, _, err := s.skip()
						return err
					}
					p.MediaKeys = p.MediaKeys[:0]
					return s.array("attachments.media_keys", func(int) error {
						v, err := s.str("attachments.media_keys[]")
						p.MediaKeys = append(p.MediaKeys, v)
						return err
					})
				})
				p.Attachments = s.b[start:s.i:s.i]
			} else {
				p.Attachments, err = s.raw()
			}
		case "edit_history_tweet_ids":
			p.EditHistoryTweetIDs = p.EditHistoryTweetIDs[:0]
			err = s.array("edit_history_tweet_ids", func(int) error {
				v, err := s.strReuse("edit_history_tweet_ids[]", p.ID, p.ConversationID)
				p.EditHistoryTweetIDs = append(p.EditHistoryTweetIDs, v)
				return err
			})
		default:
			_, _, err = s.skip()
		}
		return err
	})
}

// topLevelString returns the string member key of the JSON object raw.
func topLevelString(raw []byte, key string) (string, bool) {
	s := scanner{b: raw}
	if s.begin('{') != nil {
		return "", false
	}
	var v string
	found := false
	err := s.object(func(k []byte) error {
		if string(k) == key && s.next('"') {
			var err error
			v, err = s.str(key)
			found = true
			return err
		}
		_, _, err := s.skip()
		return err
	})
	return v, found && err == nil
}

// decodeJSON decodes a small body with encoding/json, requiring an object.
func decodeJSON(body []byte, v any) error {
	s := scanner{b: body}
	if err := s.begin('{'); err != nil {
		return preferSyntax(body, err)
	}
	if err := json.Unmarshal(body, v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return err
		}
		return shapeError(err.Error())
	}
	return nil
}

func decodeFolderPage(body []byte) (*FolderPage, error) {
	var p FolderPage
	if err := decodeJSON(body, &p); err != nil {
		return nil, err
	}
	for i, f := range p.Data {
		if f.ID == "" {
			return nil, shapef("data[%d] has no id", i)
		}
	}
	return &p, nil
}

func decodeFolderPostsPage(body []byte) (*FolderPostsPage, error) {
	var p FolderPostsPage
	if err := decodeJSON(body, &p); err != nil {
		return nil, err
	}
	for i, f := range p.Data {
		if f.ID == "" {
			return nil, shapef("data[%d] has no id", i)
		}
	}
	return &p, nil
}

func decodeUser(body []byte) (*User, error) {
	var w struct {
		Data *User `json:"data"`
	}
	if err := decodeJSON(body, &w); err != nil {
		return nil, err
	}
	if w.Data == nil || w.Data.ID == "" {
		return nil, shapeError("no data.id in the body")
	}
	return w.Data, nil
}

func decodeBookmarked(body []byte) (bool, error) {
	var w struct {
		Data *struct {
			Bookmarked *bool `json:"bookmarked"`
		} `json:"data"`
	}
	if err := decodeJSON(body, &w); err != nil {
		return false, err
	}
	if w.Data == nil || w.Data.Bookmarked == nil {
		return false, shapeError("no data.bookmarked in the body")
	}
	return *w.Data.Bookmarked, nil
}
