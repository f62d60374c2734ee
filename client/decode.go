package client

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
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
	Includes rawIncludes       `json:"includes"`
	Errors   []json.RawMessage `json:"errors"`
	Meta     *struct {
		Meta
		ResultCount *int `json:"result_count"`
	} `json:"meta"`
}

// rawIncludes are a page's includes; X's later OpenAPI revision calls the
// expanded posts "posts", which are taken as "tweets".
type rawIncludes struct {
	Includes
	Posts []json.RawMessage `json:"posts,omitempty"`
}

// decodePostPage decodes a list_bookmarks page. res is what the body holds,
// by billed type, also when it is refused for its shape: X billed it.
//
// Every id in the page must be an X id, and no post may be in it twice;
// each post and expanded object is kept as valid Unicode (see validText).
func decodePostPage(body []byte) (page *PostPage, res Resources, err error) {
	body = validText(body)
	var w postPageBody
	if err = unmarshalObject(body, &w); err != nil {
		return nil, w.resources(), err
	}
	if len(w.Data) == 0 && w.Meta == nil && len(w.Errors) > 0 {
		return nil, Resources{}, errorsOnly(w.Errors)
	}
	if w.Meta == nil || w.Meta.ResultCount == nil {
		return nil, w.resources(), errNoMeta
	}
	w.Includes.Tweets = append(w.Includes.Tweets, w.Includes.Posts...)
	page = &PostPage{Includes: w.Includes.Includes, Meta: w.Meta.Meta}
	page.Meta.ResultCount = *w.Meta.ResultCount
	if len(w.Data) > 0 {
		page.Data = make([]Post, len(w.Data))
	}
	for i, raw := range w.Data {
		if err := decodePost(raw, &page.Data[i]); err != nil {
			return nil, w.resources(), fmt.Errorf("data[%d]: %w", i, err)
		}
	}
	if err := checkIDs(len(page.Data), func(i int) string { return page.Data[i].ID }); err != nil {
		return nil, w.resources(), err
	}
	if page.Expanded, err = decodeExpanded(&page.Includes); err != nil {
		return nil, w.resources(), err
	}
	if page.Errors, err = partialErrors(w.Errors); err != nil {
		return nil, w.resources(), err
	}
	res = page.resources()
	res.checkCount(page.Meta.ResultCount, len(page.Data))
	return page, res, nil
}

// resources are what a page holds, by billed type.
func (p *PostPage) resources() Resources {
	res := Resources{Posts: make([]string, 0, len(p.Data)+len(p.Includes.Tweets)), Media: len(p.Includes.Media)}
	for i := range p.Data {
		res.Posts = append(res.Posts, p.Data[i].ID)
	}
	for _, raw := range p.Includes.Tweets {
		id, _ := topLevelString(raw, "id") // decodeExpanded checked it
		res.Posts = append(res.Posts, id)
	}
	for _, raw := range p.Includes.Users {
		id, _ := topLevelString(raw, "id")
		res.Users = append(res.Users, id)
	}
	return res
}

// resources are what a body refused for its shape holds: the ids that can
// be read, and a count of the posts whose ids cannot.
func (w *postPageBody) resources() Resources {
	res := Resources{Media: len(w.Includes.Media)}
	for _, objs := range [][]json.RawMessage{w.Data, w.Includes.Tweets, w.Includes.Posts} {
		for _, raw := range objs {
			if id, ok := topLevelString(raw, "id"); ok && id != "" {
				res.Posts = append(res.Posts, id)
			} else {
				res.UnknownPosts++
			}
		}
	}
	for _, raw := range w.Includes.Users {
		if id, ok := topLevelString(raw, "id"); ok && id != "" {
			res.Users = append(res.Users, id)
		}
	}
	return res
}

// checkCount notes a meta.result_count that disagrees with the posts a page
// holds. What is billed is what the body holds, whatever its count says.
func (r *Resources) checkCount(resultCount, posts int) {
	if resultCount != posts {
		r.mismatch = fmt.Sprintf("meta.result_count is %d but the page holds %d posts; billed: %d", resultCount, posts, posts)
	}
}

// decodeExpanded decodes and indexes the includes the resources use: users,
// media and posts. Each must carry its id.
func decodeExpanded(in *Includes) (Expanded, error) {
	var e Expanded
	if len(in.Users) > 0 {
		e.Users = make(map[string]*User, len(in.Users))
		for i, raw := range in.Users {
			u, err := decodeUserObject(raw)
			switch {
			case err != nil:
			case u.ID == "":
				err = shapeError("no id")
			case !ValidID(u.ID):
				err = shapef("id %s is not an X id (%s)", shown(u.ID), idRule)
			}
			if err != nil {
				return e, fmt.Errorf("includes.users[%d]: %w", i, err)
			}
			if _, dup := e.Users[u.ID]; !dup {
				e.Users[u.ID] = u
			}
		}
	}
	if len(in.Media) > 0 {
		e.Media = make(map[string]*Media, len(in.Media))
		for i, raw := range in.Media {
			m := &Media{}
			if len(raw) == 0 || raw[0] != '{' {
				return e, shapef("includes.media[%d]: not an object", i)
			}
			if err := json.Unmarshal(raw, m); err != nil {
				return e, shapef("includes.media[%d]: %v", i, err)
			}
			if m.MediaKey == "" {
				return e, shapef("includes.media[%d]: no media_key", i)
			}
			m.Raw = raw
			if _, dup := e.Media[m.MediaKey]; !dup {
				e.Media[m.MediaKey] = m
			}
		}
	}
	if len(in.Tweets) > 0 {
		e.Posts = make(map[string]*Post, len(in.Tweets))
		for i, raw := range in.Tweets {
			p := &Post{}
			if err := decodePost(raw, p); err != nil {
				return e, fmt.Errorf("includes.tweets[%d]: %w", i, err)
			}
			if _, dup := e.Posts[p.ID]; !dup {
				e.Posts[p.ID] = p
			}
		}
	}
	return e, nil
}

// decodePost decodes one element of "data" (or of includes.tweets).
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
	p.CreatedAt = parseTime(w.CreatedAt)
	if len(p.Attachments) > 0 && p.Attachments[0] == '{' {
		var a struct {
			MediaKeys []string `json:"media_keys"`
		}
		if err := json.Unmarshal(p.Attachments, &a); err != nil {
			return shapeError("attachments: " + err.Error())
		}
		p.MediaKeys = a.MediaKeys
	}
	if len(p.ReferencedTweets) > 0 && p.ReferencedTweets[0] == '[' {
		if err := json.Unmarshal(p.ReferencedTweets, &p.References); err != nil {
			return shapeError("referenced_tweets: " + err.Error())
		}
		for i, r := range p.References {
			if r.ID == "" {
				return shapef("referenced_tweets[%d]: no id", i)
			}
		}
	}
	if len(p.NoteTweet) > 0 && p.NoteTweet[0] == '{' {
		var n struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(p.NoteTweet, &n); err != nil {
			return shapeError("note_tweet: " + err.Error())
		}
		p.NoteText = n.Text
	}
	if len(p.Article) > 0 && p.Article[0] == '{' {
		decodeArticle(p)
	}
	p.Raw = raw
	return nil
}

// parseTime reads an RFC 3339 time, with or without fractional seconds; nil
// when absent or unreadable (the object's Raw keeps it).
func parseTime(s *string) *time.Time {
	if s == nil {
		return nil
	}
	t, err := time.Parse(time.RFC3339, *s)
	if err != nil {
		return nil
	}
	return &t
}

// decodeArticle reads an X Article's title, body and media keys. The
// article object is not in X's published schema: members of other shapes
// are left in Raw, not refused.
func decodeArticle(p *Post) {
	var a struct {
		Title         json.RawMessage   `json:"title"`
		PlainText     json.RawMessage   `json:"plain_text"`
		CoverMedia    json.RawMessage   `json:"cover_media"`
		MediaEntities []json.RawMessage `json:"media_entities"`
	}
	if json.Unmarshal(p.Article, &a) != nil {
		return
	}
	str := func(raw json.RawMessage) string {
		var s string
		_ = json.Unmarshal(raw, &s)
		return s
	}
	key := func(raw json.RawMessage) string {
		if k := str(raw); k != "" {
			return k
		}
		k, _ := topLevelString(raw, "media_key")
		return k
	}
	p.ArticleTitle, p.ArticleText, p.ArticleCover = str(a.Title), str(a.PlainText), key(a.CoverMedia)
	for _, raw := range a.MediaEntities {
		if k := key(raw); k != "" && !slices.Contains(p.ArticleMediaKeys, k) {
			p.ArticleMediaKeys = append(p.ArticleMediaKeys, k)
		}
	}
}

// decodeUserObject decodes a user object; a created_at that does not parse
// is kept in Raw only.
func decodeUserObject(raw json.RawMessage) (*User, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, shapeError("not an object")
	}
	var w struct {
		User
		CreatedAt *string `json:"created_at"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, shapeError(err.Error())
	}
	u := w.User
	u.CreatedAt = parseTime(w.CreatedAt)
	u.Raw = raw
	return &u, nil
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
	var w struct {
		FolderPostsPage
		Meta struct {
			Meta
			ResultCount *int `json:"result_count"`
		} `json:"meta"`
	}
	err := decodeSmall(body, &w, func() error {
		return checkIDs(len(w.Data), func(i int) string { return w.Data[i].ID })
	})
	p := &w.FolderPostsPage
	p.Meta = w.Meta.Meta
	if w.Meta.ResultCount != nil {
		p.Meta.ResultCount = *w.Meta.ResultCount
		p.counted = true
	}
	return p, err
}

// resources are the posts a folder page holds (its ids): each is billed.
func (p *FolderPostsPage) resources() Resources {
	var res Resources
	for _, d := range p.Data {
		if d.ID != "" {
			res.Posts = append(res.Posts, d.ID)
		} else {
			res.UnknownPosts++
		}
	}
	if p.counted {
		res.checkCount(p.Meta.ResultCount, len(p.Data))
	}
	return res
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
		Data json.RawMessage `json:"data"`
	}
	var u *User
	err := decodeSmall(body, &w, func() error {
		if len(w.Data) == 0 || string(w.Data) == "null" {
			return shapeError("no data.id in the body")
		}
		var err error
		if u, err = decodeUserObject(w.Data); err != nil {
			return shapef("data: %v", err)
		}
		switch {
		case u.ID == "":
			return shapeError("no data.id in the body")
		case !ValidID(u.ID):
			return shapef("data.id %s is not an X id (%s)", shown(u.ID), idRule)
		}
		return nil
	})
	return u, err
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
