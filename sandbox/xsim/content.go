package xsim

import (
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cq-source-x/cq-source-x/ids"
)

// Post is explicit content registered with PutPost. Zero-valued optional
// fields are omitted from responses, with these defaults: ConversationID ""
// means ID, CreatedAt zero means the time encoded in a snowflake ID (or a
// hash-derived time for other IDs), EditHistoryTweetIDs nil means [ID].
// Entities (hashtags, mentions, URLs) are derived from Text.
type Post struct {
	ID                  string
	Text                string
	AuthorID            string
	ConversationID      string
	CreatedAt           time.Time
	Lang                string
	InReplyToUserID     string
	PossiblySensitive   bool
	PublicMetrics       PublicMetrics
	ReferencedTweets    []ReferencedTweet
	MediaKeys           []string
	NoteText            string   // note_tweet.text (long posts); "" = none
	Article             *Article // an X Article; nil = none
	EditHistoryTweetIDs []string
}

// Article is a post's X Article: its title, whole body, and media (keys of
// media objects, photos "3_..." by convention).
type Article struct {
	Title, PlainText string
	CoverMedia       string   // "" = none
	MediaEntities    []string // media in the body
}

// PublicMetrics is a post's public_metrics object.
type PublicMetrics struct {
	RetweetCount, ReplyCount, LikeCount, QuoteCount, BookmarkCount, ImpressionCount int
}

// ReferencedTweet is one element of referenced_tweets ("replied_to", "quoted", "retweeted").
type ReferencedTweet struct {
	Type string
	ID   string
}

// twitterEpoch is the snowflake epoch in Unix milliseconds.
const twitterEpoch = 1288834974657

// ---- hashing ---------------------------------------------------------------

func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

func hash64[T ~string | ~[]byte](s T) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return mix64(h)
}

type rng uint64

func (r *rng) next() uint64 {
	*r += 0x9e3779b97f4a7c15
	return mix64(uint64(*r))
}

// createdMsFor is the creation time of a post with this id when none was
// registered: the snowflake timestamp for snowflake-sized ids, otherwise a
// hash-derived time in 2008-2010 (pre-snowflake).
func createdMsFor(id string) int64 {
	if n, ok := ids.Parse(id); ok && n >= 1<<40 {
		return int64(n>>22) + twitterEpoch
	}
	return 1199145600000 + int64(hash64(id)%(2*365*86400000))
}

// ---- word lists --------------------------------------------------------------

var words = [...]string{
	"the", "bookmark", "list", "is", "a", "thread", "about", "data", "pipelines", "and",
	"why", "incremental", "sync", "matters", "for", "archives", "of", "posts", "you", "saved",
	"today", "we", "shipped", "new", "release", "with", "faster", "parquet", "export", "café",
	"naïve", "東京", "🚀", "über", "schema", "tables", "cursor", "pagination", "rate", "limits",
	"never", "store", "tokens", "between", "runs", "high-water", "mark", "walk", "from", "top",
	"stop", "at", "first", "known", "id", "cost", "per", "read", "half", "cent",
	"great", "read:", "thoughts?", "TIL",
}

var hashtags = [...]string{"golang", "dataengineering", "CloudQuery", "opensource", "buildinpublic", "sqlite", "parquet", "AI"}

var handles = [...]string{"alice", "bob", "carol", "dave", "erin", "frank", "grace", "heidi", "ivan", "judy", "mallory", "niaj", "olivia", "peggy", "rupert", "sybil", "trent", "victor", "walter", "yuki"}

var firstNames = [...]string{"Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy", "Mallory", "Niaj", "Olivia", "Peggy", "Rupert", "Sybil"}

var lastNames = [...]string{"Archer", "Baker", "Chen", "Dubois", "Evans", "Fischer", "García", "Haddad", "Ito", "Jensen", "Kowalski", "López", "Müller", "Nakamura", "Okafor", "Petrov"}

var langs = [...]string{"en", "en", "en", "en", "es", "ja", "de", "fr", "pt", "und"}

const base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

func appendCode(dst []byte, x uint64, n int) []byte {
	for range n {
		dst = append(dst, base62[x%62])
		x /= 62
		if x == 0 {
			x = mix64(uint64(len(dst)))
		}
	}
	return dst
}

// authorFor maps a random value to one of 5000 generated author ids.
func authorFor(x uint64) uint64 { return 1000000007 + (x%5000)*1000003 }

// ---- the post view -------------------------------------------------------------

// view is one post ready for encoding, either generated from its id or copied
// from an explicit Post. Its buffers are reused from post to post.
type view struct {
	id        string
	text      []byte
	author    []byte
	conv      []byte
	createdMs int64
	lang      string
	replyTo   []byte
	sensitive bool
	metrics   PublicMetrics
	refs      []refView
	media     [][]byte
	note      []byte
	hasNote   bool
	article   articleView
	edits     []string // nil = [id]
	ents      []entity
	tmp       []byte
}

type refView struct {
	typ string
	id  []byte
}

// articleView is a post's article, ready for encoding.
type articleView struct {
	ok          bool
	title, text []byte
	cover       []byte // media key; empty = none
	entities    [][]byte
}

func (a *articleView) reset() {
	a.ok = false
	a.title, a.text, a.cover = a.title[:0], a.text[:0], a.cover[:0]
	a.entities = a.entities[:0]
}

func (v *view) reset(id string) {
	v.id = id
	v.text = v.text[:0]
	v.author = v.author[:0]
	v.conv = v.conv[:0]
	v.createdMs = 0
	v.lang = ""
	v.replyTo = v.replyTo[:0]
	v.sensitive = false
	v.metrics = PublicMetrics{}
	v.refs = v.refs[:0]
	v.media = v.media[:0]
	v.note = v.note[:0]
	v.hasNote = false
	v.article.reset()
	v.edits = nil
}

func (v *view) addRef(typ string) *refView {
	if len(v.refs) < cap(v.refs) {
		v.refs = v.refs[:len(v.refs)+1]
	} else {
		v.refs = append(v.refs, refView{})
	}
	r := &v.refs[len(v.refs)-1]
	r.typ = typ
	r.id = r.id[:0]
	return r
}

func (v *view) addMedia() *[]byte {
	if len(v.media) < cap(v.media) {
		v.media = v.media[:len(v.media)+1]
	} else {
		v.media = append(v.media, nil)
	}
	m := &v.media[len(v.media)-1]
	*m = (*m)[:0]
	return m
}

// generate fills v with the deterministic content of post id.
func (v *view) generate(id string) {
	v.reset(id)
	r := rng(hash64(id))
	n, isNum := ids.Parse(id)
	if isNum && n >= 1<<40 {
		v.createdMs = int64(n>>22) + twitterEpoch
	} else {
		v.createdMs = createdMsFor(id)
	}
	rAuthor, rKind, rLang, rWords := r.next(), r.next(), r.next(), r.next()
	rTag, rURL, rMedia, rMetric := r.next(), r.next(), r.next(), r.next()
	rParent, rNote, rSens, rImpr := r.next(), r.next(), r.next(), r.next()
	rArticle := r.next()

	v.author = strconv.AppendUint(v.author, authorFor(rAuthor), 10)
	v.lang = langs[rLang%uint64(len(langs))]
	v.conv = append(v.conv, id...)

	var parent uint64
	if isNum && n > 1<<30 {
		parent = n - 1 - rParent%(n/4)
	} else {
		parent = 1<<59 + rParent%(1<<59)
	}
	kind := rKind % 100
	if kind < 15 { // a reply: mentions the parent's author first
		replyUser := authorFor(rParent >> 17)
		v.replyTo = strconv.AppendUint(v.replyTo, replyUser, 10)
		v.conv = strconv.AppendUint(v.conv[:0], parent, 10)
		ref := v.addRef("replied_to")
		ref.id = strconv.AppendUint(ref.id, parent, 10)
		v.text = append(v.text, '@')
		v.text = appendUsername(v.text, v.replyTo)
		v.text = append(v.text, ' ')
	} else if kind < 25 {
		ref := v.addRef("quoted")
		ref.id = strconv.AppendUint(ref.id, parent, 10)
	}
	nw := 4 + int(rWords%14)
	w := rWords >> 4
	for i := range nw {
		if i > 0 {
			v.text = append(v.text, ' ')
		}
		w = w*6364136223846793005 + 1442695040888963407
		v.text = append(v.text, words[(w>>33)%uint64(len(words))]...)
	}
	if rTag%3 == 0 {
		v.text = append(v.text, " #"...)
		v.text = append(v.text, hashtags[(rTag>>8)%uint64(len(hashtags))]...)
	}
	if rURL%5 == 0 {
		v.text = append(v.text, " https://t.co/"...)
		v.text = appendCode(v.text, rURL>>8, 10)
	}
	if rNote%25 == 0 { // a long post: text is the start, note_tweet.text the whole
		v.hasNote = true
		v.note = append(v.note, v.text...)
		for range 60 {
			w = w*6364136223846793005 + 1442695040888963407
			v.note = append(v.note, ' ')
			v.note = append(v.note, words[(w>>33)%uint64(len(words))]...)
		}
		v.text = append(v.text, "…"...)
	}
	mid := 1<<60 + (rMedia>>8)%(1<<59)
	switch m := rMedia % 20; {
	case m < 4:
		k := v.addMedia()
		*k = strconv.AppendUint(append(*k, "3_"...), mid, 10)
	case m == 4:
		k := v.addMedia()
		*k = strconv.AppendUint(append(*k, "3_"...), mid, 10)
		k = v.addMedia()
		*k = strconv.AppendUint(append(*k, "3_"...), mid+1, 10)
	case m == 5:
		k := v.addMedia()
		*k = strconv.AppendUint(append(*k, "7_"...), mid, 10)
	case m == 6:
		k := v.addMedia()
		*k = strconv.AppendUint(append(*k, "16_"...), mid, 10)
	}
	if rArticle%50 == 0 { // an X Article: its post's text is a link to it
		v.generateArticle(rArticle>>8, mid)
	}
	v.sensitive = rSens%40 == 0
	like := int(rMetric%1000) * int(1+(rMetric>>10)%40)
	v.metrics = PublicMetrics{
		RetweetCount:    like / 8,
		ReplyCount:      like / 20,
		LikeCount:       like,
		QuoteCount:      like / 50,
		BookmarkCount:   1 + like/30,
		ImpressionCount: like*40 + int(rImpr%5000),
	}
}

// generateArticle gives v an article: a title, a body of several hundred
// words and a cover photo, and a second photo in half the bodies.
func (v *view) generateArticle(x uint64, mid uint64) {
	a := &v.article
	a.ok = true
	w := x
	word := func() string {
		w = w*6364136223846793005 + 1442695040888963407
		return words[(w>>33)%uint64(len(words))]
	}
	for i := range 3 + int(x%5) {
		if i > 0 {
			a.title = append(a.title, ' ')
		}
		a.title = append(a.title, word()...)
	}
	for i := range 200 + int(x%400) {
		switch {
		case i == 0:
		case i%40 == 0:
			a.text = append(a.text, ".\n\n"...)
		default:
			a.text = append(a.text, ' ')
		}
		a.text = append(a.text, word()...)
	}
	a.text = append(a.text, '.')
	a.cover = strconv.AppendUint(append(a.cover, "3_"...), mid+7, 10)
	if x%2 == 0 {
		k := strconv.AppendUint([]byte("3_"), mid+8, 10)
		a.entities = append(a.entities, k)
	}
}

// fromPost fills v from explicit content.
func (v *view) fromPost(p *Post) {
	v.reset(p.ID)
	v.text = append(v.text, p.Text...)
	v.author = append(v.author, p.AuthorID...)
	if p.ConversationID != "" {
		v.conv = append(v.conv, p.ConversationID...)
	} else {
		v.conv = append(v.conv, p.ID...)
	}
	if p.CreatedAt.IsZero() {
		v.createdMs = createdMsFor(p.ID)
	} else {
		v.createdMs = p.CreatedAt.UnixMilli()
	}
	v.lang = p.Lang
	v.replyTo = append(v.replyTo, p.InReplyToUserID...)
	v.sensitive = p.PossiblySensitive
	v.metrics = p.PublicMetrics
	for _, rt := range p.ReferencedTweets {
		r := v.addRef(rt.Type)
		r.id = append(r.id, rt.ID...)
	}
	for _, k := range p.MediaKeys {
		m := v.addMedia()
		*m = append(*m, k...)
	}
	if p.NoteText != "" {
		v.hasNote = true
		v.note = append(v.note, p.NoteText...)
	}
	if a := p.Article; a != nil {
		v.article.ok = true
		v.article.title = append(v.article.title, a.Title...)
		v.article.text = append(v.article.text, a.PlainText...)
		v.article.cover = append(v.article.cover, a.CoverMedia...)
		for _, k := range a.MediaEntities {
			v.article.entities = append(v.article.entities, []byte(k))
		}
	}
	v.edits = p.EditHistoryTweetIDs
}

// toPost converts v to a Post (for PostContent).
func (v *view) toPost() Post {
	p := Post{
		ID:                v.id,
		Text:              string(v.text),
		AuthorID:          string(v.author),
		ConversationID:    string(v.conv),
		CreatedAt:         time.UnixMilli(v.createdMs).UTC(),
		Lang:              v.lang,
		InReplyToUserID:   string(v.replyTo),
		PossiblySensitive: v.sensitive,
		PublicMetrics:     v.metrics,
	}
	for _, r := range v.refs {
		p.ReferencedTweets = append(p.ReferencedTweets, ReferencedTweet{Type: r.typ, ID: string(r.id)})
	}
	for _, m := range v.media {
		p.MediaKeys = append(p.MediaKeys, string(m))
	}
	if v.hasNote {
		p.NoteText = string(v.note)
	}
	if a := &v.article; a.ok {
		p.Article = &Article{Title: string(a.title), PlainText: string(a.text), CoverMedia: string(a.cover)}
		for _, k := range a.entities {
			p.Article.MediaEntities = append(p.Article.MediaEntities, string(k))
		}
	}
	if v.edits != nil {
		p.EditHistoryTweetIDs = append([]string(nil), v.edits...)
	} else {
		p.EditHistoryTweetIDs = []string{v.id}
	}
	return p
}

// ---- entities ------------------------------------------------------------------

const (
	entHashtag = iota
	entMention
	entURL
)

type entity struct {
	kind       int
	start, end int // code points
	a, b       int // bytes
}

func isTagByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// scanEntities finds #hashtags, @mentions and http(s) URLs in text; offsets
// are in Unicode code points, like the real API.
func scanEntities(text []byte, ents []entity) []entity {
	ents = ents[:0]
	runes := 0
	for i := 0; i < len(text); {
		atStart := i == 0 || text[i-1] == ' ' || text[i-1] == '\n'
		c := text[i]
		if atStart && (c == '#' || c == '@') {
			j := i + 1
			for j < len(text) && isTagByte(text[j]) {
				j++
			}
			if j > i+1 {
				k := entHashtag
				if c == '@' {
					k = entMention
				}
				ents = append(ents, entity{k, runes, runes + j - i, i, j})
				runes += j - i
				i = j
				continue
			}
		}
		if atStart && c == 'h' && (hasPrefix(text[i:], "https://") || hasPrefix(text[i:], "http://")) {
			j := i
			n := 0
			for j < len(text) && text[j] != ' ' && text[j] != '\n' {
				_, size := utf8.DecodeRune(text[j:])
				j += size
				n++
			}
			ents = append(ents, entity{entURL, runes, runes + n, i, j})
			runes += n
			i = j
			continue
		}
		_, size := utf8.DecodeRune(text[i:])
		i += size
		runes++
	}
	return ents
}

func hasPrefix(b []byte, p string) bool { return len(b) >= len(p) && string(b[:len(p)]) == p }

// ---- encoding --------------------------------------------------------------------

// appendPost encodes v with the selected fields.
func appendPost(b []byte, v *view, fs *fieldSpec) []byte {
	b = append(b, `{"id":`...)
	b = appendStr(b, v.id)
	b = appendKeyStr(b, "text", v.text)
	if fs.posts {
		b = append(b, `,"edit_history_post_ids":[`...)
	} else {
		b = append(b, `,"edit_history_tweet_ids":[`...)
	}
	if v.edits == nil {
		b = appendStr(b, v.id)
	} else {
		for i, e := range v.edits {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendStr(b, e)
		}
	}
	b = append(b, ']')
	tf := fs.tf
	if tf == 0 {
		return append(b, '}')
	}
	if tf&tfArticle != 0 && v.article.ok {
		b = appendArticle(b, &v.article)
	}
	if tf&tfArticleTitle != 0 && v.article.ok {
		b = append(b, `,"article_title":{"title":`...)
		b = appendStr(b, v.article.title)
		b = append(b, '}')
	}
	if tf&tfAttachments != 0 && len(v.media) > 0 {
		b = append(b, `,"attachments":{"media_keys":[`...)
		for i, m := range v.media {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendStr(b, m)
		}
		b = append(b, "]}"...)
	}
	if tf&tfAuthorID != 0 && len(v.author) > 0 {
		b = appendKeyStr(b, "author_id", v.author)
	}
	if tf&tfConversationID != 0 && len(v.conv) > 0 {
		b = appendKeyStr(b, "conversation_id", v.conv)
	}
	if tf&tfCreatedAt != 0 {
		b = appendKey(b, "created_at")
		b = appendTime(b, v.createdMs)
	}
	if tf&tfDisplayTextRange != 0 {
		b = append(b, `,"display_text_range":[0,`...)
		b = strconv.AppendInt(b, int64(utf8.RuneCount(v.text)), 10)
		b = append(b, ']')
	}
	if tf&tfEditControls != 0 {
		b = append(b, `,"edit_controls":{"edits_remaining":5,"is_edit_eligible":false,"editable_until":`...)
		b = appendTime(b, v.createdMs+3600000)
		b = append(b, '}')
	}
	if tf&tfEntities != 0 {
		v.ents = scanEntities(v.text, v.ents)
		if len(v.ents) > 0 {
			b = appendEntities(b, v)
		}
	}
	if tf&tfInReplyToUserID != 0 && len(v.replyTo) > 0 {
		b = appendKeyStr(b, "in_reply_to_user_id", v.replyTo)
	}
	if tf&tfLang != 0 && v.lang != "" {
		b = appendKeyStr(b, "lang", v.lang)
	}
	if tf&tfNoteTweet != 0 && v.hasNote {
		if fs.posts {
			b = append(b, `,"note_post":{"text":`...)
		} else {
			b = append(b, `,"note_tweet":{"text":`...)
		}
		b = appendStr(b, v.note)
		b = append(b, '}')
	}
	if tf&tfPossiblySensitive != 0 {
		b = appendKeyBool(b, "possibly_sensitive", v.sensitive)
	}
	if tf&tfPublicMetrics != 0 {
		m := &v.metrics
		if fs.posts {
			b = append(b, `,"public_metrics":{"repost_count":`...)
		} else {
			b = append(b, `,"public_metrics":{"retweet_count":`...)
		}
		b = strconv.AppendInt(b, int64(m.RetweetCount), 10)
		b = appendKeyInt(b, "reply_count", int64(m.ReplyCount))
		b = appendKeyInt(b, "like_count", int64(m.LikeCount))
		b = appendKeyInt(b, "quote_count", int64(m.QuoteCount))
		b = appendKeyInt(b, "bookmark_count", int64(m.BookmarkCount))
		b = appendKeyInt(b, "impression_count", int64(m.ImpressionCount))
		b = append(b, '}')
	}
	if tf&tfReferencedTweets != 0 && len(v.refs) > 0 {
		if fs.posts {
			b = append(b, `,"referenced_posts":[`...)
		} else {
			b = append(b, `,"referenced_tweets":[`...)
		}
		for i := range v.refs {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":`...)
			b = appendStr(b, v.refs[i].typ)
			b = appendKeyStr(b, "id", v.refs[i].id)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if tf&tfReplySettings != 0 {
		b = append(b, `,"reply_settings":"everyone"`...)
	}
	return append(b, '}')
}

// appendArticle encodes a post's article as X does: title, plain_text (the
// whole body), cover_media and media_entities (media keys).
func appendArticle(b []byte, a *articleView) []byte {
	b = append(b, `,"article":{"title":`...)
	b = appendStr(b, a.title)
	b = appendKeyStr(b, "plain_text", a.text)
	if len(a.cover) > 0 {
		b = appendKeyStr(b, "cover_media", a.cover)
	}
	if len(a.entities) > 0 {
		b = append(b, `,"media_entities":[`...)
		for i, k := range a.entities {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendStr(b, k)
		}
		b = append(b, ']')
	}
	return append(b, '}')
}

func appendEntities(b []byte, v *view) []byte {
	b = append(b, `,"entities":{`...)
	first := true
	for _, kind := range [...]int{entHashtag, entMention, entURL} {
		n := 0
		for _, e := range v.ents {
			if e.kind != kind {
				continue
			}
			if n == 0 {
				if !first {
					b = append(b, ',')
				}
				first = false
				switch kind {
				case entHashtag:
					b = append(b, `"hashtags":[`...)
				case entMention:
					b = append(b, `"mentions":[`...)
				case entURL:
					b = append(b, `"urls":[`...)
				}
			} else {
				b = append(b, ',')
			}
			n++
			b = append(b, `{"start":`...)
			b = strconv.AppendInt(b, int64(e.start), 10)
			b = appendKeyInt(b, "end", int64(e.end))
			tok := v.text[e.a:e.b]
			switch kind {
			case entHashtag:
				b = appendKeyStr(b, "tag", tok[1:])
			case entMention:
				b = appendKeyStr(b, "username", tok[1:])
			case entURL:
				b = appendKeyStr(b, "url", tok)
				v.tmp = v.tmp[:0]
				if hasPrefix(tok, "https://t.co/") {
					v.tmp = append(v.tmp, "https://example.com/read/"...)
					v.tmp = append(v.tmp, tok[len("https://t.co/"):]...)
				} else {
					v.tmp = append(v.tmp, tok...)
				}
				b = appendKeyStr(b, "expanded_url", v.tmp)
				d := v.tmp
				if i := strings.Index(string(d), "://"); i >= 0 {
					d = d[i+3:]
				}
				b = appendKeyStr(b, "display_url", d)
			}
			b = append(b, '}')
		}
		if n > 0 {
			b = append(b, ']')
		}
	}
	return append(b, '}')
}

// ---- users -----------------------------------------------------------------------

type userInfo struct {
	username, name string
}

// appendUsername appends the generated username of user id.
func appendUsername[T ~string | ~[]byte](dst []byte, id T) []byte {
	h := hash64(id)
	dst = append(dst, handles[h%uint64(len(handles))]...)
	return strconv.AppendUint(dst, (h>>16)%100000, 10)
}

func genName(id string) string {
	h := hash64(id)
	return firstNames[(h>>8)%uint64(len(firstNames))] + " " + lastNames[(h>>24)%uint64(len(lastNames))]
}

// appendUser encodes a user object, in the posts naming with posts. info is
// the registered name, if any.
func appendUser(b []byte, id string, info *userInfo, uf uint32, posts bool) []byte {
	b = append(b, `{"id":`...)
	b = appendStr(b, id)
	if info != nil {
		b = appendKeyStr(b, "name", info.name)
		b = appendKeyStr(b, "username", info.username)
	} else {
		b = appendKeyStr(b, "name", genName(id))
		b = appendKey(b, "username")
		b = append(b, '"')
		b = appendUsername(b, id)
		b = append(b, '"')
	}
	if uf == 0 {
		return append(b, '}')
	}
	r := rng(hash64(id) ^ 0x5bd1e995)
	r1, r2, r3 := r.next(), r.next(), r.next()
	if uf&ufCreatedAt != 0 {
		b = appendKey(b, "created_at")
		b = appendTime(b, 1199145600000+int64(r1%(12*365*86400000)))
	}
	if uf&ufDescription != 0 {
		b = appendKeyStr(b, "description", words[r2%uint64(len(words))]+" "+words[(r2>>8)%uint64(len(words))]+" "+words[(r2>>16)%uint64(len(words))])
	}
	if uf&ufLocation != 0 && r3%3 != 0 {
		b = appendKeyStr(b, "location", [...]string{"Berlin", "東京", "São Paulo", "Lagos", "Toronto"}[r3%5])
	}
	if uf&ufProfileImageURL != 0 {
		b = appendKey(b, "profile_image_url")
		b = append(b, `"https://pbs.twimg.com/profile_images/`...)
		b = append(b, id...)
		b = append(b, `/avatar_normal.jpg"`...)
	}
	if uf&ufProtected != 0 {
		b = appendKeyBool(b, "protected", false)
	}
	if uf&ufPublicMetrics != 0 {
		f := int64(r2 % 100000)
		b = append(b, `,"public_metrics":{"followers_count":`...)
		b = strconv.AppendInt(b, f, 10)
		b = appendKeyInt(b, "following_count", int64(r3%2000))
		if posts {
			b = appendKeyInt(b, "post_count", int64(r1%50000))
		} else {
			b = appendKeyInt(b, "tweet_count", int64(r1%50000))
		}
		b = appendKeyInt(b, "listed_count", f/100)
		b = appendKeyInt(b, "like_count", int64((r1>>20)%100000))
		b = appendKeyInt(b, "media_count", int64((r3>>20)%3000))
		b = append(b, '}')
	}
	if uf&ufURL != 0 {
		b = appendKeyStr(b, "url", "")
	}
	if uf&ufVerified != 0 {
		b = appendKeyBool(b, "verified", r3%10 == 0)
	}
	if uf&ufVerifiedType != 0 {
		vt := "none"
		if r3%10 == 0 {
			vt = "blue"
		}
		b = appendKeyStr(b, "verified_type", vt)
	}
	return append(b, '}')
}

// ---- media -------------------------------------------------------------------------

func (s *Server) appendMedia(b []byte, key string, mf uint32) []byte {
	typ := "photo"
	switch {
	case strings.HasPrefix(key, "7_"):
		typ = "video"
	case strings.HasPrefix(key, "16_"):
		typ = "animated_gif"
	}
	b = append(b, `{"media_key":`...)
	b = appendStr(b, key)
	b = appendKeyStr(b, "type", typ)
	if mf == 0 {
		return append(b, '}')
	}
	h := hash64(key)
	w, ht := int64(640+(h%8)*160), int64(480+((h>>8)%8)*90)
	files := mediaFilesOf(key)
	if mf&mfAltText != 0 && h%3 == 0 {
		b = appendKeyStr(b, "alt_text", "A picture of "+words[(h>>40)%uint64(len(words))])
	}
	if mf&mfDurationMS != 0 && typ == "video" {
		b = appendKeyInt(b, "duration_ms", int64(1000+(h>>24)%120000))
	}
	if mf&mfHeight != 0 {
		b = appendKeyInt(b, "height", ht)
	}
	if mf&mfPreviewImageURL != 0 && typ != "photo" {
		b = appendKeyStr(b, "preview_image_url", s.mediaBase(false)+files.still)
	}
	if mf&mfPublicMetrics != 0 && typ == "video" {
		b = append(b, `,"public_metrics":{"view_count":`...)
		b = strconv.AppendInt(b, int64((h>>32)%1000000), 10)
		b = append(b, '}')
	}
	if mf&mfURL != 0 && typ == "photo" {
		b = appendKeyStr(b, "url", s.mediaBase(false)+files.photo)
	}
	if mf&mfVariants != 0 && typ != "photo" {
		b = append(b, `,"variants":[`...)
		for i, v := range files.variants {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"bit_rate":`...)
			b = strconv.AppendInt(b, v.bitRate, 10)
			b = append(b, `,"content_type":"video/mp4","url":`...)
			b = appendStr(b, s.mediaBase(true)+v.path)
			b = append(b, '}')
		}
		if files.playlist != "" {
			b = append(b, `,{"content_type":"application/x-mpegURL","url":`...)
			b = appendStr(b, s.mediaBase(true)+files.playlist)
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if mf&mfWidth != 0 {
		b = appendKeyInt(b, "width", w)
	}
	return append(b, '}')
}
