package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
)

// Bodies are decoded with encoding/json: a full page takes a few
// milliseconds, where X takes hundreds to send it (docs/design/decoder.md).
//
// What the decoders guarantee: a body that is not JSON is told apart from
// valid JSON of the wrong shape (the first may be a cut connection and is
// asked for again; the second would come back the same); wrong shapes are
// refused, never half-read; a bookmarks page must carry meta.result_count;
// partial errors beside the data are kept; a body that holds only "errors"
// is reported with what they say.

// shapeError is valid JSON of the wrong shape for the operation.
type shapeError string

func (e shapeError) Error() string { return string(e) }

func shapef(format string, args ...any) error { return shapeError(fmt.Sprintf(format, args...)) }

var (
	errEmptyBody = errors.New("empty body")
	errNotObject = shapeError("top-level value is not a JSON object")
	// errNoMeta refuses a bookmarks page without meta.result_count, which the
	// document says every page has. (The folder payloads are not shown in the
	// document, and X's own schema leaves their meta free-form: they are taken
	// as they come.) Taken as it is, such a page has no next_token: the walk
	// would end there as if the list did, and count every post it holds below
	// as removed — the next sync would read, and bill, all of them again.
	errNoMeta = shapeError("no meta.result_count (every page has one)")
)

// isSyntaxError reports whether err says the body was not valid JSON.
func isSyntaxError(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se) || errors.Is(err, errEmptyBody)
}

// unmarshalObject decodes body, which must be one JSON object, into v. A body
// that is not JSON gives a *json.SyntaxError (encoding/json checks the whole
// body before it decodes any of it); valid JSON of another shape a shapeError.
func unmarshalObject(body []byte, v any) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return errEmptyBody
	}
	if err := json.Unmarshal(body, v); err != nil {
		if isSyntaxError(err) {
			return err
		}
		return shapeError(err.Error())
	}
	if trimmed[0] != '{' {
		return errNotObject
	}
	return nil
}

// postPageBody is a bookmarks page as it is decoded: each post is decoded on
// its own, so that an error names it and Raw keeps it verbatim.
type postPageBody struct {
	Data     []json.RawMessage `json:"data"`
	Includes Includes          `json:"includes"`
	Errors   []json.RawMessage `json:"errors"`
	Meta     *struct {
		Meta
		ResultCount *int `json:"result_count"`
	} `json:"meta"`
}

// decodePostPage decodes a list_bookmarks page. posts is the number of posts
// the body holds, also when it is refused for its shape: X billed them.
//
// Every id in the page must be an X id, and no post may be in it twice;
// each post and expanded object is kept as valid Unicode (see validText).
func decodePostPage(body []byte) (page *PostPage, posts int, err error) {
	body = validText(body)
	var w postPageBody
	err = unmarshalObject(body, &w)
	posts = len(w.Data)
	if err != nil {
		return nil, posts, err
	}
	if posts == 0 && w.Meta == nil && len(w.Errors) > 0 {
		return nil, 0, errorsOnly(w.Errors)
	}
	if w.Meta == nil || w.Meta.ResultCount == nil {
		return nil, posts, errNoMeta
	}
	page = &PostPage{Includes: w.Includes, Meta: w.Meta.Meta}
	page.Meta.ResultCount = *w.Meta.ResultCount
	if posts > 0 {
		page.Data = make([]Post, posts)
	}
	for i, raw := range w.Data {
		if err := decodePost(raw, &page.Data[i]); err != nil {
			return nil, posts, fmt.Errorf("data[%d]: %w", i, err)
		}
	}
	if err := checkIDs(len(page.Data), func(i int) string { return page.Data[i].ID }); err != nil {
		return nil, posts, err
	}
	if err := checkIncluded(&page.Includes); err != nil {
		return nil, posts, err
	}
	if page.Errors, err = partialErrors(w.Errors); err != nil {
		return nil, posts, err
	}
	return page, posts, nil
}

// decodePost decodes one element of "data".
func decodePost(raw json.RawMessage, p *Post) error {
	if len(raw) == 0 || raw[0] != '{' {
		return shapeError("not an object")
	}
	var w struct {
		Post
		CreatedAt *string `json:"created_at"` // a time that does not parse is kept in Raw only
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return shapeError(err.Error())
	}
	*p = w.Post
	if p.ID == "" {
		return shapeError("no id")
	}
	if err := checkPostIDs(p); err != nil {
		return err
	}
	if w.CreatedAt != nil {
		// RFC 3339 with or without fractional seconds.
		if t, err := time.Parse(time.RFC3339, *w.CreatedAt); err == nil {
			p.CreatedAt = &t
		}
	}
	if len(p.Attachments) > 0 && p.Attachments[0] == '{' {
		var a struct {
			MediaKeys []string `json:"media_keys"`
		}
		if err := json.Unmarshal(p.Attachments, &a); err != nil {
			return shapeError("attachments: " + err.Error())
		}
		p.MediaKeys = a.MediaKeys
	}
	p.Raw = raw
	return nil
}

// partialErrors decodes the "errors" of a 200, each kept raw too.
func partialErrors(raws []json.RawMessage) ([]PartialError, error) {
	var out []PartialError
	for i, raw := range raws {
		var pe PartialError
		if err := json.Unmarshal(raw, &pe); err != nil {
			return nil, shapef("errors[%d]: %v", i, err)
		}
		pe.Raw = raw
		out = append(out, pe)
	}
	return out, nil
}

// errorsOnly is the error of a body that holds only "errors".
func errorsOnly(raws []json.RawMessage) error {
	errs, err := partialErrors(raws)
	if err != nil {
		return err
	}
	return &ErrorsOnlyError{Errors: errs}
}

// checkErrorsOnly returns an *ErrorsOnlyError when body holds "errors" and
// neither "data" nor "meta" (or a null "data").
func checkErrorsOnly(body []byte) error {
	var w struct {
		Data   json.RawMessage   `json:"data"`
		Meta   json.RawMessage   `json:"meta"`
		Errors []json.RawMessage `json:"errors"`
	}
	if json.Unmarshal(body, &w) != nil || len(w.Errors) == 0 || w.Meta != nil ||
		(w.Data != nil && !bytes.Equal(w.Data, []byte("null"))) {
		return nil
	}
	return errorsOnly(w.Errors)
}

// decodeSmall decodes the body of a small operation into v; check says
// whether it held what the operation returns. A body with only "errors" is
// reported as such, whatever check would say.
func decodeSmall(body []byte, v any, check func() error) error {
	err := unmarshalObject(body, v)
	if isSyntaxError(err) {
		return err
	}
	if eo := checkErrorsOnly(body); eo != nil {
		return eo
	}
	if err != nil {
		return err
	}
	return check()
}

func decodeFolderPage(body []byte) (*FolderPage, error) {
	var p FolderPage
	return &p, decodeSmall(body, &p, func() error {
		return checkIDs(len(p.Data), func(i int) string { return p.Data[i].ID })
	})
}

func decodeFolderPostsPage(body []byte) (*FolderPostsPage, error) {
	var p FolderPostsPage
	return &p, decodeSmall(body, &p, func() error {
		return checkIDs(len(p.Data), func(i int) string { return p.Data[i].ID })
	})
}

// checkIDs checks the ids of the n items of a page's data: each an X id,
// and none twice. A list that shifts between two requests repeats an item
// across pages, never within one: a page that repeats an item of its own
// is broken, and taken for a shift it would make the walk keep a state
// that does not hold the list.
func checkIDs(n int, id func(i int) string) error {
	seen := make(map[string]int, n)
	for i := range n {
		v := id(i)
		switch j, dup := seen[v]; {
		case v == "":
			return shapef("data[%d] has no id", i)
		case !ValidID(v):
			return shapef("data[%d].id %s is not an X id (%s)", i, shown(v), idRule)
		case dup:
			return shapef("data[%d].id %s repeats data[%d]: a page holds each item once", i, v, j)
		}
		seen[v] = i
	}
	return nil
}

// checkPostIDs checks the ids a post carries: its own and, when present,
// those that are columns of the archive.
func checkPostIDs(p *Post) error {
	if !ValidID(p.ID) {
		return shapef("id %s is not an X id (%s)", shown(p.ID), idRule)
	}
	for _, f := range [...]struct{ name, id string }{
		{"author_id", p.AuthorID}, {"conversation_id", p.ConversationID}, {"in_reply_to_user_id", p.InReplyToUserID},
	} {
		if f.id != "" && !ValidID(f.id) {
			return shapef("%s %s is not an X id (%s)", f.name, shown(f.id), idRule)
		}
	}
	for i, id := range p.EditHistoryTweetIDs {
		if !ValidID(id) {
			return shapef("edit_history_tweet_ids[%d] %s is not an X id (%s)", i, shown(id), idRule)
		}
	}
	return nil
}

// checkIncluded checks the ids of the expanded users and posts: the author
// and referenced posts of the page's posts are found by them. (An object
// without an id cannot be found, and is left alone.)
func checkIncluded(in *Includes) error {
	for _, l := range [...]struct {
		name string
		objs []json.RawMessage
	}{{"users", in.Users}, {"tweets", in.Tweets}} {
		for i, raw := range l.objs {
			var w struct {
				ID json.RawMessage `json:"id"`
			}
			if err := json.Unmarshal(raw, &w); err != nil {
				return shapef("includes.%s[%d]: %v", l.name, i, err)
			}
			if w.ID == nil || bytes.Equal(w.ID, []byte("null")) {
				continue
			}
			var id string
			if json.Unmarshal(w.ID, &id) != nil {
				return shapef("includes.%s[%d].id is not a string", l.name, i)
			}
			if !ValidID(id) {
				return shapef("includes.%s[%d].id %s is not an X id (%s)", l.name, i, shown(id), idRule)
			}
		}
	}
	return nil
}

// shown is a value from a response as an error may show it: quoted when
// short, else only its length (a long value may be anything a server
// echoes, a credential included).
func shown(v string) string {
	if len(v) > maxQuoted {
		return fmt.Sprintf("(%d characters, not shown)", len(v))
	}
	return strconv.Quote(v)
}

// validText returns body with what is not Unicode made U+FFFD, as
// encoding/json decodes it: bytes that are not UTF-8 (validUTF8) and
// escaped halves of a surrogate pair that have no other half
// (loneSurrogates). The raw objects kept from a page (a post's "post"
// column, its entities, the expanded author) then say what the decoded
// fields say, and every reader of the archive can read them: DuckDB
// refuses a Parquet file whose strings are not UTF-8, and its JSON
// functions a lone surrogate. A valid body is returned as it is.
func validText(body []byte) []byte { return loneSurrogates(validUTF8(body)) }

// validUTF8 returns b with every byte that is not part of valid UTF-8
// replaced by U+FFFD, one per byte, as encoding/json decodes such bytes in
// a string. Outside strings such bytes are not JSON either way.
func validUTF8(b []byte) []byte {
	if utf8.Valid(b) {
		return b
	}
	out := make([]byte, 0, len(b)+64)
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if r == utf8.RuneError && size == 1 {
			out = utf8.AppendRune(out, utf8.RuneError)
		} else {
			out = append(out, b[:size]...)
		}
		b = b[size:]
	}
	return out
}

// loneSurrogates returns b with every \u escape of half a surrogate pair
// that is not part of a pair replaced by \ufffd (as long). In valid JSON
// a backslash is always inside a string and starts an escape, so the
// escapes are found by reading them in turn; b is copied only when one is
// replaced.
func loneSurrogates(b []byte) []byte {
	out := b
	for i := 0; i < len(b)-1; i++ {
		if b[i] != '\\' {
			continue
		}
		if b[i+1] != 'u' {
			i++ // a two-character escape
			continue
		}
		r, ok := escapedRune(b, i)
		switch {
		case !ok:
			i++
			continue
		case utf16.IsSurrogate(r) && r < 0xdc00:
			if low, ok := escapedRune(b, i+6); ok && low >= 0xdc00 && low <= 0xdfff {
				i += 11 // a pair
				continue
			}
		case !utf16.IsSurrogate(r):
			i += 5
			continue
		}
		if &out[0] == &b[0] {
			out = bytes.Clone(b)
		}
		copy(out[i:], `\ufffd`)
		i += 5
	}
	return out
}

// escapedRune reads the \uXXXX escape at b[i:].
func escapedRune(b []byte, i int) (rune, bool) {
	if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
		return 0, false
	}
	var r rune
	for _, c := range b[i+2 : i+6] {
		switch {
		case '0' <= c && c <= '9':
			r = r<<4 | rune(c-'0')
		case 'a' <= c && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case 'A' <= c && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}

func decodeUser(body []byte) (*User, error) {
	var w struct {
		Data *User `json:"data"`
	}
	err := decodeSmall(body, &w, func() error {
		switch {
		case w.Data == nil || w.Data.ID == "":
			return shapeError("no data.id in the body")
		case !ValidID(w.Data.ID):
			return shapef("data.id %s is not an X id (%s)", shown(w.Data.ID), idRule)
		}
		return nil
	})
	return w.Data, err
}

func decodeBookmarked(body []byte) (bool, error) {
	var w struct {
		Data *struct {
			Bookmarked *bool `json:"bookmarked"`
		} `json:"data"`
	}
	err := decodeSmall(body, &w, func() error {
		if w.Data == nil || w.Data.Bookmarked == nil {
			return shapeError("no data.bookmarked in the body")
		}
		return nil
	})
	return err == nil && *w.Data.Bookmarked, err
}

// topLevelString returns the string member key of the JSON object raw.
func topLevelString(raw []byte, key string) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return "", false
	}
	var v string
	if json.Unmarshal(m[key], &v) != nil {
		return "", false
	}
	return v, true
}
