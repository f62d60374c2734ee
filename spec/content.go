package spec

import (
	"slices"
	"strings"

	"github.com/cq-source-x/cq-source-x/client"
)

// Content selects what is archived with each bookmarked post, kind by kind.
// Each kind is a part of the bookmarks request (tweet.fields, expansions,
// user.fields, media.fields); the `fields` section may ask for more, and a
// kind it asks for is on. Kinds that cost nothing extra are on by default.
type Content struct {
	// Authors of the bookmarked posts (table x_bookmark_authors), with their public profiles (expansion `author_id`, `user.fields`), and the authors of referenced posts when `referenced_posts` is on.
	// Costs extra: X bills each expanded user as a user read (`user_read_usd`, once per UTC day per user).
	Authors *bool `json:"authors,omitempty" jsonschema:"default=false"`
	// Photos, videos and GIFs of the bookmarked posts (table x_bookmark_media): type, URLs, video variants, alt text, size, duration (expansion `attachments.media_keys`, `media.fields`), and those of referenced posts and articles when they are on.
	// Free: X bills no media objects.
	Media *bool `json:"media,omitempty" jsonschema:"default=true"`
	// The posts each bookmarked post quotes, replies to or reposts (table x_bookmark_referenced_posts; expansion `referenced_tweets.id`).
	// Costs extra: X bills each referenced post as a post read (once per UTC day).
	ReferencedPosts *bool `json:"referenced_posts,omitempty" jsonschema:"default=false"`
	// The whole text of posts longer than 280 characters (`note_tweet`; x_bookmarks.full_text). Free: a field of the post.
	LongText *bool `json:"long_text,omitempty" jsonschema:"default=true"`
	// X Articles: title and whole body (`article`; x_bookmarks.article_title and article_text). Free: a field of the post.
	Articles *bool `json:"articles,omitempty" jsonschema:"default=true"`
}

// Kinds are the content kinds in effect: the `content` section's, with the
// defaults and what `fields` asks for.
type Kinds struct {
	Authors, Media, ReferencedPosts, LongText, Articles bool
}

// contentKind is one kind: its spec field, its default, and the request
// parameters that archive it.
type contentKind struct {
	name   string // content.<name>
	def    bool
	get    func(*Content) *bool
	set    func(*Kinds) *bool
	tweet  []string // tweet.fields
	expand []string // expansions
	// implied are the expansions that join this kind to another (the
	// authors of referenced posts, the media of articles): asking for one
	// turns the kind on, and one is asked for when every kind it joins is.
	implied []string
}

var contentKinds = []contentKind{
	{name: "authors", def: false, get: func(c *Content) *bool { return c.Authors }, set: func(k *Kinds) *bool { return &k.Authors },
		tweet: []string{"author_id"}, expand: []string{"author_id"}, implied: []string{"referenced_tweets.id.author_id"}},
	{name: "media", def: true, get: func(c *Content) *bool { return c.Media }, set: func(k *Kinds) *bool { return &k.Media },
		tweet: []string{"attachments"}, expand: []string{"attachments.media_keys"},
		implied: []string{"referenced_tweets.id.attachments.media_keys", "article.cover_media", "article.media_entities"}},
	{name: "referenced_posts", def: false, get: func(c *Content) *bool { return c.ReferencedPosts }, set: func(k *Kinds) *bool { return &k.ReferencedPosts },
		tweet: []string{"referenced_tweets"}, expand: []string{"referenced_tweets.id"},
		implied: []string{"referenced_tweets.id.author_id", "referenced_tweets.id.attachments.media_keys"}},
	{name: "long_text", def: true, get: func(c *Content) *bool { return c.LongText }, set: func(k *Kinds) *bool { return &k.LongText },
		tweet: []string{"note_tweet"}},
	{name: "articles", def: true, get: func(c *Content) *bool { return c.Articles }, set: func(k *Kinds) *bool { return &k.Articles },
		tweet: []string{"article"}, implied: []string{"article.cover_media", "article.media_entities"}},
}

// AuthorUserFields are the user.fields asked for with authors: every public
// profile field this archive has a column for.
var AuthorUserFields = []string{"created_at", "description", "location", "profile_image_url", "protected", "public_metrics", "url", "verified", "verified_type"}

// MediaFields are the media.fields asked for with media.
var MediaFields = []string{"alt_text", "duration_ms", "height", "preview_image_url", "public_metrics", "url", "variants", "width"}

func (s *Spec) Kinds() Kinds {
	var k Kinds
	for _, ck := range contentKinds {
		on := ck.def
		if v := ck.get(&s.Content); v != nil {
			on = *v
		} else if len(s.askedFor(ck)) > 0 {
			on = true
		}
		*ck.set(&k) = on
	}
	return k
}

// askedFor lists what the fields section asks for that archives kind ck:
// its expansions (and those that imply it), and its post fields other than
// the ones every request asks for.
func (s *Spec) askedFor(ck contentKind) []string {
	var out []string
	for _, e := range s.Fields.Expansions {
		if ck.archivedBy("expansions", e) {
			out = append(out, "fields.expansions "+e)
		}
	}
	for _, f := range s.Fields.TweetFields {
		if ck.archivedBy("tweet.fields", f) {
			out = append(out, "fields.tweet_fields "+f)
		}
	}
	return out
}

// archivedBy reports whether value in the request parameter param archives
// kind ck, and so turns it on.
func (ck contentKind) archivedBy(param, value string) bool {
	switch param {
	case "tweet.fields", "post.fields":
		return slices.Contains(ck.tweet, value) && len(ck.expand) == 0
	case "expansions":
		return slices.Contains(ck.expand, value) || slices.Contains(ck.implied, value)
	}
	return false
}

// validateContent reports a kind turned off in `content` that the `fields`
// section asks for: which one wins would be a guess.
func (s *Spec) validateContent(add func(field, format string, args ...any)) {
	for _, ck := range contentKinds {
		if v := ck.get(&s.Content); v != nil && !*v {
			if asked := s.askedFor(ck); len(asked) > 0 {
				add("content."+ck.name, "is false, but %s asks for it; remove one of the two", strings.Join(asked, " and "))
			}
		}
	}
}

// RequestFields are the field selection of the bookmarks request: what the
// columns of x_bookmarks need and each content kind in effect, with the
// `fields` section's lists added (never taking anything away).
func (s *Spec) RequestFields() Fields {
	f := s.Fields
	for _, l := range f.lists() {
		*l.names = slices.Clone(*l.names)
	}
	f.TweetFields = union(slices.Clone(DefaultTweetFields), s.Fields.TweetFields...)
	k := s.Kinds()
	for _, ck := range contentKinds {
		if *ck.set(&k) {
			f.TweetFields = union(f.TweetFields, ck.tweet...)
			f.Expansions = union(f.Expansions, ck.expand...)
		}
	}
	if k.Authors {
		f.UserFields = union(f.UserFields, AuthorUserFields...)
	}
	if k.Media {
		f.MediaFields = union(f.MediaFields, MediaFields...)
	}
	for _, ck := range contentKinds {
		for _, e := range ck.implied {
			if !slices.ContainsFunc(contentKinds, func(o contentKind) bool { return slices.Contains(o.implied, e) && !*o.set(&k) }) {
				f.Expansions = union(f.Expansions, e)
			}
		}
	}
	return f
}

// union appends to list the values it does not hold yet.
func union(list []string, values ...string) []string {
	for _, v := range values {
		if !slices.Contains(list, v) {
			list = append(list, v)
		}
	}
	return list
}

// fieldsParams names the fields-section field of each request parameter.
var fieldsParams = map[string]string{
	"tweet.fields": "fields.tweet_fields", "post.fields": "fields.tweet_fields", "expansions": "fields.expansions",
	"user.fields": "fields.user_fields", "media.fields": "fields.media_fields",
	"poll.fields": "fields.poll_fields", "place.fields": "fields.place_fields",
}

// RequestNeeds names what asks for a value of the request that no setting
// does: the post fields every request asks for (DefaultTweetFields).
const RequestNeeds = "the columns of x_bookmarks"

// AskedBy names the settings of s that put value in the request parameter
// param: the content kinds in effect that ask for it, the fields section
// when its list holds it, and RequestNeeds for a post field every request
// asks for. Nil for a parameter that is not a field selection, or a value
// s does not ask for.
func (s *Spec) AskedBy(param, value string) []string {
	param, value, known := client.TweetsName(param, value)
	if !known {
		return nil
	}
	k := s.Kinds()
	var out []string
	if param == "tweet.fields" && slices.Contains(DefaultTweetFields, value) {
		out = append(out, RequestNeeds)
	}
	for _, src := range sourcesOf(param, value) {
		name, isKind := strings.CutPrefix(src, "content.")
		switch {
		case isKind && slices.ContainsFunc(contentKinds, func(ck contentKind) bool { return ck.name == name && *ck.set(&k) }):
			out = append(out, src)
		case !isKind && slices.ContainsFunc(s.Fields.lists(), func(l fieldList) bool { return l.path == src && slices.Contains(*l.names, value) }):
			out = append(out, src)
		}
	}
	return out
}

// sourcesOf names the spec fields that can put value in the request
// parameter param (tweet.fields, expansions, user.fields, media.fields,
// ...): the content kinds that ask for it, and the fields section. Nil for
// a parameter that is not a field selection.
func sourcesOf(param, value string) []string {
	field, ok := fieldsParams[param]
	if !ok {
		return nil
	}
	var out []string
	for _, ck := range contentKinds {
		if ck.archivedBy(param, value) || (ck.name == "authors" && param == "user.fields" && slices.Contains(AuthorUserFields, value)) ||
			(ck.name == "media" && param == "media.fields" && slices.Contains(MediaFields, value)) {
			out = append(out, "content."+ck.name)
		}
	}
	return append(out, field)
}
