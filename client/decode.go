package client

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/cq-source-x/cq-source-x/billing"
	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
)

// Bodies are decoded with encoding/json/v2 in one pass over a page, which
// keeps each post as the bytes it was read from (docs/design/decoder.md). A
// body that is not JSON (maybe a cut connection: asked for again) is told
// apart from valid JSON of the wrong shape (it would come back the same:
// refused, never half-read).

var (
	errEmptyBody = errors.New("empty body")
	errNotObject = errors.New("top-level value is not a JSON object")
	// errNoMeta refuses a bookmarks page without meta.result_count, which the
	// document says every page has: taken for the list's last page, it would
	// have the next sync bill again every post below it.
	errNoMeta = errors.New("no meta.result_count (every page has one)")
)

// duplicateNames lets an object name a member twice, the later winning, as
// encoding/json and json.Valid do (RFC 8259 only says names SHOULD be unique).
var duplicateNames = jsontext.AllowDuplicateNames(true)

// isSyntaxError reports whether err says the body was not valid JSON; any
// other error of a decode is valid JSON of the wrong shape.
func isSyntaxError(err error) bool {
	var se *jsontext.SyntacticError
	return errors.As(err, &se) || errors.Is(err, errEmptyBody)
}

// unmarshalObject decodes body, which must be one JSON object, into v.
func unmarshalObject(body []byte, v any, opts ...jsonv2.Options) error {
	trimmed := bytes.TrimLeft(body, " \t\r\n")
	if len(trimmed) == 0 {
		return errEmptyBody
	}
	err := jsonv2.Unmarshal(body, v, append(opts, duplicateNames)...)
	switch {
	case isSyntaxError(err):
		return err
	case err != nil:
		// The decoder stops at the first wrong shape: a body whose rest is
		// not JSON is a syntax error all the same.
		if serr := jsonv2.Unmarshal(body, new(jsontext.Value), duplicateNames); serr != nil {
			return serr
		}
		return errors.New(shapeText(err))
	case trimmed[0] != '{':
		return errNotObject
	}
	return nil
}

// shapeText says where a value had the wrong shape in the terms of JSON, not
// of Go types: "a string at /data/0/id, where a number belongs".
func shapeText(err error) string {
	var se *jsonv2.SemanticError
	if !errors.As(err, &se) || se.GoType == nil || se.JSONKind == jsontext.KindInvalid {
		return err.Error()
	}
	where := "the top level"
	if se.JSONPointer != "" {
		where = string(se.JSONPointer)
	}
	text := fmt.Sprintf("%s at %s, where %s belongs", jsonKinds[se.JSONKind], where, kindOf(se.GoType))
	if se.Err != nil && !errors.Is(se.Err, strconv.ErrSyntax) {
		text += " (" + se.Err.Error() + ")" // a number out of range
	}
	return text
}

var jsonKinds = map[jsontext.Kind]string{
	jsontext.KindNull: "null", jsontext.KindFalse: "false", jsontext.KindTrue: "true", jsontext.KindString: "a string",
	jsontext.KindNumber: "a number", jsontext.KindBeginObject: "an object", jsontext.KindBeginArray: "an array",
}

var goKinds = map[reflect.Kind]string{reflect.Struct: "an object", reflect.Map: "an object", reflect.Slice: "an array",
	reflect.Array: "an array", reflect.String: "a string", reflect.Bool: "true or false", reflect.Float32: "a number", reflect.Float64: "a number"}

// kindOf is the JSON value a Go type is decoded from.
func kindOf(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if k := t.Kind(); k >= reflect.Int && k <= reflect.Uint64 {
		return "an integer"
	}
	return cmp.Or(goKinds[t.Kind()], "another value")
}

// withRaw is an object decoded, and its bytes in the body.
type withRaw[T any] struct {
	v   T
	raw []byte
}

// bodyOptions decode body keeping json.RawMessage and withRaw as slices of it,
// capped so that appending to one copies rather than write over the body.
func bodyOptions(body []byte) jsonv2.Options {
	span := func(start, end int64) []byte {
		return bytes.TrimLeft(body[start:end:end], " \t\r\n,:") // the separator read before the value
	}
	return jsonv2.WithUnmarshalers(jsonv2.JoinUnmarshalers(
		jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v *json.RawMessage) error {
			start := dec.InputOffset()
			if err := dec.SkipValue(); err != nil {
				return err
			}
			*v = span(start, dec.InputOffset())
			return nil
		}),
		// A time that does not parse is left nil: Raw keeps it.
		jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, v **time.Time) error {
			var s string
			if err := jsonv2.UnmarshalDecode(dec, &s); err != nil {
				return err
			}
			if t, err := time.Parse(time.RFC3339, s); err == nil {
				*v = &t
			}
			return nil
		}),
		keepRaw[postFields](span),
		keepRaw[User](span),
		keepRaw[Media](span),
	))
}

func keepRaw[T any](span func(start, end int64) []byte) *jsonv2.Unmarshalers {
	return jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, w *withRaw[T]) error {
		start := dec.InputOffset()
		if err := jsonv2.UnmarshalDecode(dec, &w.v); err != nil {
			return err
		}
		w.raw = span(start, dec.InputOffset())
		return nil
	})
}

type postPageBody struct {
	Data     []withRaw[postFields] `json:"data"`
	Includes struct {
		Users  []withRaw[User]       `json:"users"`
		Media  []withRaw[Media]      `json:"media"`
		Tweets []withRaw[postFields] `json:"tweets"`
		Posts  []withRaw[postFields] `json:"posts"` // the posts naming's "tweets"
		Polls  []json.RawMessage     `json:"polls"`
		Places []json.RawMessage     `json:"places"`
	} `json:"includes"`
	Errors []json.RawMessage `json:"errors"`
	Meta   *pageMeta         `json:"meta"`
}

// pageMeta is a page's meta, which must count its posts.
type pageMeta struct {
	Meta
	ResultCount *int `json:"result_count"`
}

// postFields are the members of a post object that are decoded, in both namings.
type postFields struct {
	Post
	// The posts naming's members.
	EditHistoryPostIDs []string        `json:"edit_history_post_ids"`
	ReferencedPosts    json.RawMessage `json:"referenced_posts"`
	NotePost           json.RawMessage `json:"note_post"`
	ArticleTitle       json.RawMessage `json:"article_title"`
}

// inTweetsNaming reads the posts naming's members, and repost_count, as the
// tweets naming's where the post has none of the latter: a post's columns say
// the same whichever naming X answered in.
func (f *postFields) inTweetsNaming() {
	if f.EditHistoryTweetIDs == nil {
		f.EditHistoryTweetIDs = f.EditHistoryPostIDs
	}
	if f.ReferencedTweets == nil {
		f.ReferencedTweets = f.ReferencedPosts
	}
	if f.NoteTweet == nil {
		f.NoteTweet = f.NotePost
	}
	f.PublicMetrics = renameMember(f.PublicMetrics, "repost_count", "retweet_count")
}

// renameMember returns obj with its member from named to, when it has one
// and none named to; else obj itself.
func renameMember(obj json.RawMessage, from, to string) json.RawMessage {
	var m map[string]jsontext.Value
	if jsonv2.Unmarshal(obj, &m, duplicateNames) != nil || m[from] == nil || m[to] != nil {
		return obj
	}
	dec := jsontext.NewDecoder(bytes.NewReader(obj), duplicateNames)
	if _, err := dec.ReadToken(); err != nil {
		return obj
	}
	for dec.PeekKind() == '"' {
		start := dec.InputOffset()
		name, err := dec.ReadToken()
		if err != nil {
			return obj
		}
		if name.String() == from {
			start += int64(bytes.IndexByte(obj[start:], '"')) // past the separator read before the name
			return slices.Concat(obj[:start], []byte(strconv.Quote(to)), obj[dec.InputOffset():])
		}
		if dec.SkipValue() != nil {
			return obj
		}
	}
	return obj
}

// decodePostPage decodes a list_bookmarks page; res is what X billed, also
// for a page refused for its shape.
func decodePostPage(body []byte) (page *PostPage, res billing.Billed, err error) {
	body = validText(body)
	opts := bodyOptions(body)
	var w postPageBody
	if err = unmarshalObject(body, &w, opts); err != nil {
		return nil, refusedBilled(body, opts), err
	}
	if len(w.Data) == 0 && w.Meta == nil && len(w.Errors) > 0 {
		return nil, billing.Billed{}, errorsOnly(w.Errors)
	}
	refused := func(err error) (*PostPage, billing.Billed, error) { return nil, refusedBilled(body, opts), err }
	if w.Meta == nil || w.Meta.ResultCount == nil {
		return refused(errNoMeta)
	}
	page = &PostPage{Meta: w.Meta.Meta}
	page.Meta.ResultCount = *w.Meta.ResultCount
	if len(w.Data) > 0 {
		page.Data = make([]Post, len(w.Data))
	}
	for i := range w.Data {
		if err := makePost(&w.Data[i], &page.Data[i]); err != nil {
			return refused(fmt.Errorf("data[%d]: %w", i, err))
		}
	}
	if err := checkIDs(len(page.Data), func(i int) string { return page.Data[i].ID }); err != nil {
		return refused(err)
	}
	in := &w.Includes
	in.Tweets = append(in.Tweets, in.Posts...)
	page.Includes = Includes{Users: raws(in.Users), Media: raws(in.Media), Tweets: raws(in.Tweets), Polls: in.Polls, Places: in.Places}
	if page.Expanded, err = decodeExpanded(in.Users, in.Media, in.Tweets); err != nil {
		return refused(err)
	}
	if page.Errors, err = partialErrors(w.Errors); err != nil {
		return refused(err)
	}
	res = page.billed()
	res.CountMismatch = countMismatch(page.Meta.ResultCount, len(page.Data))
	return page, res, nil
}

func raws[T any](objs []withRaw[T]) (out []json.RawMessage) {
	for _, o := range objs {
		out = append(out, o.raw)
	}
	return out
}

func (p *PostPage) billed() billing.Billed {
	res := billing.Billed{Posts: make([]string, 0, len(p.Data)+len(p.Includes.Tweets)), Media: len(p.Includes.Media)}
	for i := range p.Data {
		res.Posts = append(res.Posts, p.Data[i].ID)
	}
	res.Posts = append(res.Posts, p.Expanded.postIDs...)
	res.Users = p.Expanded.userIDs
	return res
}

// rawPageBody is a page read no further than its objects.
type rawPageBody struct {
	Data     []json.RawMessage `json:"data"`
	Includes struct {
		Users  []json.RawMessage `json:"users"`
		Media  []json.RawMessage `json:"media"`
		Tweets []json.RawMessage `json:"tweets"`
		Posts  []json.RawMessage `json:"posts"`
	} `json:"includes"`
}

// refusedBilled is what a body refused for its shape billed: the ids that
// can be read, and a count of the posts whose ids cannot.
func refusedBilled(body []byte, opts jsonv2.Options) billing.Billed {
	var w rawPageBody
	_ = jsonv2.Unmarshal(body, &w, opts, duplicateNames) // what was read before a wrong shape
	res := billing.Billed{Media: len(w.Includes.Media)}
	for _, raw := range slices.Concat(w.Data, w.Includes.Tweets, w.Includes.Posts) {
		if id := topLevelString(raw, "id"); id != "" {
			res.Posts = append(res.Posts, id)
		} else {
			res.UnknownPosts++
		}
	}
	for _, raw := range w.Includes.Users {
		if id := topLevelString(raw, "id"); id != "" {
			res.Users = append(res.Users, id)
		}
	}
	return res
}

// countMismatch says how a meta.result_count disagrees with a page's posts.
func countMismatch(resultCount, posts int) string {
	if resultCount == posts {
		return ""
	}
	return fmt.Sprintf("meta.result_count is %d but the page holds %d posts; billed: %d", resultCount, posts, posts)
}

// decodeExpanded checks and indexes the includes: users, media and posts.
func decodeExpanded(users []withRaw[User], media []withRaw[Media], posts []withRaw[postFields]) (Expanded, error) {
	var e Expanded
	for i := range users {
		u, err := makeUser(&users[i])
		if err != nil {
			return e, fmt.Errorf("includes.users[%d]: %w", i, err)
		}
		e.userIDs = append(e.userIDs, u.ID)
		keepFirst(&e.Users, u.ID, u, len(users))
	}
	for i := range media {
		m := media[i].v
		if m.MediaKey == "" {
			return e, fmt.Errorf("includes.media[%d]: no media_key", i)
		}
		m.Raw = media[i].raw
		keepFirst(&e.Media, m.MediaKey, &m, len(media))
	}
	for i := range posts {
		p := &Post{}
		if err := makePost(&posts[i], p); err != nil {
			return e, fmt.Errorf("includes.tweets[%d]: %w", i, err)
		}
		e.postIDs = append(e.postIDs, p.ID)
		keepFirst(&e.Posts, p.ID, p, len(posts))
	}
	return e, nil
}

// keepFirst indexes v under key in *m (made for n) unless it holds the key.
func keepFirst[T any](m *map[string]*T, key string, v *T, n int) {
	if *m == nil {
		*m = make(map[string]*T, n)
	}
	if _, dup := (*m)[key]; !dup {
		(*m)[key] = v
	}
}

// makePost checks a post object and makes it a Post.
func makePost(w *withRaw[postFields], p *Post) error {
	f := &w.v
	f.inTweetsNaming()
	*p = f.Post
	if err := checkPostIDs(p); err != nil {
		return err
	}
	var a struct {
		MediaKeys []string `json:"media_keys"`
	}
	var n struct {
		Text string `json:"text"`
	}
	if err := cmp.Or(decodeMember("attachments", p.Attachments, '{', &a),
		decodeMember("referenced_tweets", p.ReferencedTweets, '[', &p.References),
		decodeMember("note_tweet", p.NoteTweet, '{', &n)); err != nil {
		return err
	}
	p.MediaKeys, p.NoteText = a.MediaKeys, n.Text
	if i := slices.IndexFunc(p.References, func(r Reference) bool { return r.ID == "" }); i >= 0 {
		return fmt.Errorf("referenced_tweets[%d]: no id", i)
	}
	decodeArticle(p)
	if p.ArticleTitle == "" {
		p.ArticleTitle = stringOr(f.ArticleTitle, "title") // X's description calls it an object
	}
	p.Raw = w.raw
	return nil
}

// decodeMember decodes the member name of a post into v when its value
// starts with open (an object or an array); other values are kept raw only.
func decodeMember(name string, raw json.RawMessage, open byte, v any) error {
	if len(raw) == 0 || raw[0] != open {
		return nil
	}
	if err := jsonv2.Unmarshal(raw, v, duplicateNames); err != nil {
		return errors.New(name + ": " + shapeText(err))
	}
	return nil
}

// decodeArticle reads an X Article's title, body and media keys. It is not
// in X's published schema: odd members are not refused.
func decodeArticle(p *Post) {
	var a struct {
		Title         json.RawMessage   `json:"title"`
		PlainText     json.RawMessage   `json:"plain_text"`
		CoverMedia    json.RawMessage   `json:"cover_media"`
		MediaEntities []json.RawMessage `json:"media_entities"`
	}
	if jsonv2.Unmarshal(p.Article, &a, bodyOptions(p.Article), duplicateNames) != nil {
		return
	}
	p.ArticleTitle, p.ArticleText = stringOr(a.Title, ""), stringOr(a.PlainText, "")
	p.ArticleCover = stringOr(a.CoverMedia, "media_key")
	for _, raw := range a.MediaEntities {
		if k := stringOr(raw, "media_key"); k != "" && !slices.Contains(p.ArticleMediaKeys, k) {
			p.ArticleMediaKeys = append(p.ArticleMediaKeys, k)
		}
	}
}

// stringOr reads raw as a string, or an object's string member key.
func stringOr(raw json.RawMessage, key string) string {
	var s string
	if jsonv2.Unmarshal(raw, &s) != nil {
		s = topLevelString(raw, key)
	}
	return s
}

// makeUser checks a user object and makes it a User.
func makeUser(w *withRaw[User]) (*User, error) {
	u := w.v
	u.PublicMetrics, u.Raw = renameMember(u.PublicMetrics, "post_count", "tweet_count"), w.raw
	return &u, badID("id", u.ID)
}

// anyText reads a JSON value other than a string or null into a string as
// its JSON text: an odd element of "errors" must not cost the posts beside it.
var anyText = jsonv2.WithUnmarshalers(jsonv2.UnmarshalFromFunc(func(dec *jsontext.Decoder, s *string) error {
	if k := dec.PeekKind(); k == '"' || k == 'n' {
		return errors.ErrUnsupported // decoded as usual
	}
	v, err := dec.ReadValue()
	*s = string(v)
	return err
}))

// partialErrors decodes the "errors" of a 200, kept raw too.
func partialErrors(raws []json.RawMessage) ([]PartialError, error) {
	var out []PartialError
	for i, raw := range raws {
		var pe PartialError
		if err := jsonv2.Unmarshal(raw, &pe, duplicateNames, anyText); err != nil {
			return nil, fmt.Errorf("errors[%d]: %s", i, shapeText(err))
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

// decodeSmall decodes the body of a small operation into v; check says
// whether it held what the operation returns. A body of only "errors" (and
// a null "data" at most) is an *ErrorsOnlyError.
func decodeSmall(body []byte, v any, check func() error) error {
	body = validText(body)
	err := unmarshalObject(body, v, bodyOptions(body))
	if isSyntaxError(err) {
		return err
	}
	var w struct {
		Data   json.RawMessage   `json:"data"`
		Meta   json.RawMessage   `json:"meta"`
		Errors []json.RawMessage `json:"errors"`
	}
	if jsonv2.Unmarshal(body, &w, bodyOptions(body), duplicateNames) == nil && len(w.Errors) > 0 && w.Meta == nil &&
		(w.Data == nil || string(w.Data) == "null") {
		return errorsOnly(w.Errors)
	}
	if err != nil {
		return err
	}
	return check()
}

// decodeData decodes the body of a small operation whose "data" is one
// object, and checks it.
func decodeData[T any](body []byte, check func(data *T) error) (*T, error) {
	var w struct {
		Data *T `json:"data"`
	}
	err := decodeSmall(body, &w, func() error {
		if w.Data == nil {
			return errors.New("no data")
		}
		return check(w.Data)
	})
	return w.Data, err
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
		Meta pageMeta `json:"meta"`
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

// billed is the posts a folder page holds (its ids): each is billed.
func (p *FolderPostsPage) billed() billing.Billed {
	var res billing.Billed
	for _, d := range p.Data {
		if d.ID != "" {
			res.Posts = append(res.Posts, d.ID)
		} else {
			res.UnknownPosts++
		}
	}
	if p.counted {
		res.CountMismatch = countMismatch(p.Meta.ResultCount, len(p.Data))
	}
	return res
}

// checkIDs checks the ids of the n items of a page's data: each an X id,
// and none twice (a shift repeats an item across pages, never within one).
func checkIDs(n int, id func(i int) string) error {
	seen := make(map[string]int, n)
	for i := range n {
		v := id(i)
		if err := badID(fmt.Sprintf("data[%d].id", i), v); err != nil {
			return err
		}
		if j, dup := seen[v]; dup {
			return fmt.Errorf("data[%d].id %s repeats data[%d]: a page holds each item once", i, v, j)
		}
		seen[v] = i
	}
	return nil
}

// checkPostIDs checks the ids a post carries: its own and, when present,
// those that are columns of the archive.
func checkPostIDs(p *Post) error {
	err := cmp.Or(badID("id", p.ID), optionalID("author_id", p.AuthorID), optionalID("conversation_id", p.ConversationID),
		optionalID("in_reply_to_user_id", p.InReplyToUserID))
	for i, id := range p.EditHistoryTweetIDs {
		err = cmp.Or(err, badID(fmt.Sprintf("edit_history_tweet_ids[%d]", i), id))
	}
	return err
}

func optionalID(name, id string) error {
	if id == "" {
		return nil
	}
	return badID(name, id)
}

// badID says what is wrong with the id called name: missing, or not an X id.
func badID(name, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("no %s", name)
	case !ValidID(id):
		return fmt.Errorf("%s %s is not an X id (%s)", name, shown(id, len(id)), idRule)
	}
	return nil
}

// validText returns body with what is not Unicode made U+FFFD, as
// encoding/json decodes it (invalid UTF-8, lone escaped surrogates): the
// raw objects then say what the fields say, and DuckDB can read them.
func validText(body []byte) []byte {
	if !utf8.Valid(body) {
		body = bytes.Map(func(r rune) rune { return r }, body) // each invalid byte is read as RuneError
	}
	return loneSurrogates(body)
}

// loneSurrogates replaces each \u escape of a lone surrogate by \ufffd (as
// long), copying b only then. In valid JSON a backslash starts an escape.
func loneSurrogates(b []byte) []byte {
	out := b
	for i := 0; i < len(b)-1; i++ {
		next := bytes.IndexByte(b[i:len(b)-1], '\\')
		if next < 0 {
			break
		}
		i += next
		r, ok := escapedRune(b, i)
		if !ok || !utf16.IsSurrogate(r) {
			i++ // and past the escaped character: an escaped backslash starts no escape
			continue
		}
		if low, _ := escapedRune(b, i+6); utf16.DecodeRune(r, low) != utf8.RuneError {
			i += 11 // a pair
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
	r, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 32)
	return rune(r), err == nil
}

func decodeUser(body []byte) (u *User, err error) {
	_, err = decodeData(body, func(w *withRaw[User]) error {
		if u, err = makeUser(w); err != nil {
			return fmt.Errorf("data: %w", err)
		}
		return nil
	})
	return u, err
}

func decodeBookmarked(body []byte) (bool, error) {
	d, err := decodeData(body, func(d *struct {
		Bookmarked *bool `json:"bookmarked"`
	}) error {
		if d.Bookmarked == nil {
			return errors.New("no data.bookmarked in the body")
		}
		return nil
	})
	return err == nil && *d.Bookmarked, err
}

// topLevelString returns the string member key of the JSON object raw ("" if none).
func topLevelString(raw []byte, key string) string {
	var m map[string]jsontext.Value
	var v string
	if jsonv2.Unmarshal(raw, &m, duplicateNames) == nil {
		_ = jsonv2.Unmarshal(m[key], &v)
	}
	return v
}

type storedPage struct {
	Data     []json.RawMessage `json:"data"`
	Includes Includes          `json:"includes"`
	Errors   []json.RawMessage `json:"errors,omitempty"`
	Meta     struct {
		ResultCount int `json:"result_count"`
	} `json:"meta"`
}

// StoredPage is the JSON of page as X returned it, with only the posts
// keep selects: what a sync sent, kept to send again (ParseStoredPage).
func StoredPage(page *PostPage, keep func(i int) bool) ([]byte, error) {
	s := storedPage{Includes: page.Includes}
	for i := range page.Data {
		if keep(i) {
			s.Data = append(s.Data, page.Data[i].Raw)
		}
	}
	for _, pe := range page.Errors {
		s.Errors = append(s.Errors, pe.Raw)
	}
	s.Meta.ResultCount = len(s.Data)
	return json.Marshal(s)
}

// ParseStoredPage decodes what StoredPage wrote, with the checks of a page
// read from X.
func ParseStoredPage(body []byte) (*PostPage, error) {
	page, _, err := decodePostPage(body)
	if err != nil {
		return nil, fmt.Errorf("a stored bookmarks page: %w", err)
	}
	return page, nil
}
