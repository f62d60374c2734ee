package client

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
)

// Naming is the set of names a bookmarks request is made in: X's OpenAPI
// description says "tweets" up to 2.166, "posts" from 2.167. Fields are
// always given in the tweets naming.
type Naming string

const (
	NamingTweets Naming = "tweets" // tweet.fields, referenced_tweets.id, note_tweet, ...
	NamingPosts  Naming = "posts"  // post.fields, referenced_posts, note_post, ...
)

// rename is a value of a field-selection parameter in each naming ("": none).
type rename struct {
	param         string // tweet.fields stands for post.fields too
	tweets, posts string
}

// renames are the values the two namings do not share. The posts naming
// has author_id, in_reply_to_user_id and the referenced posts only as
// expansions (which X bills), and no nested expansions of them.
var renames = []rename{
	{"tweet.fields", "note_tweet", "note_post"},
	{"tweet.fields", "author_id", ""},
	{"tweet.fields", "in_reply_to_user_id", ""},
	{"tweet.fields", "referenced_tweets", ""},
	{"tweet.fields", "edit_history_tweet_ids", ""},
	{"tweet.fields", "", "article_title"},
	{"expansions", "referenced_tweets.id", "referenced_posts"},
	{"expansions", "edit_history_tweet_ids", "edit_history_post_ids"},
	{"expansions", "referenced_tweets.id.author_id", ""},
	{"expansions", "referenced_tweets.id.attachments.media_keys", ""},
	{"expansions", "entities.note.mentions.username", ""},
	{"expansions", "", "username"},
	{"user.fields", "affiliation", ""},
	{"user.fields", "most_recent_tweet_id", ""},
	{"user.fields", "pinned_tweet_id", ""},
	{"user.fields", "", "subscribes_to_you"},
}

func named(n Naming, param, value string) (name string, ok bool) {
	i := slices.IndexFunc(renames, func(r rename) bool { return r.param == param && value != "" && (r.tweets == value || r.posts == value) })
	switch {
	case i < 0:
		return value, true
	case n == NamingPosts:
		name = renames[i].posts
	default:
		name = renames[i].tweets
	}
	return name, name != ""
}

// TweetsName is the request parameter param's value in the tweets naming
// (post.fields=note_post is tweet.fields=note_tweet); ok is false for none.
func TweetsName(param, value string) (tweetsParam, name string, ok bool) {
	if param == "post.fields" {
		param = "tweet.fields"
	}
	name, ok = named(NamingTweets, param, value)
	return param, name, ok
}

// In returns f in the names of naming n, and what n has no name for
// ("tweet.fields=author_id", ...); in the posts naming article asks for
// article_title too, in case its title comes there.
func (f Fields) In(n Naming) (Fields, []string) {
	var dropped []string
	in := func(param string, values []string) []string {
		var out []string
		for _, v := range values {
			name, ok := named(n, param, v)
			switch {
			case !ok:
				dropped = append(dropped, param+"="+v)
			case !slices.Contains(out, name):
				out = append(out, name)
			}
		}
		return out
	}
	g := Fields{
		TweetFields: in("tweet.fields", f.TweetFields),
		Expansions:  in("expansions", f.Expansions),
		UserFields:  in("user.fields", f.UserFields),
		MediaFields: slices.Clone(f.MediaFields),
		PollFields:  slices.Clone(f.PollFields),
		PlaceFields: slices.Clone(f.PlaceFields),
	}
	if n == NamingPosts && slices.Contains(g.TweetFields, "article") && !slices.Contains(g.TweetFields, "article_title") {
		g.TweetFields = append(g.TweetFields, "article_title")
	}
	return g, dropped
}

// Asked is f, in the tweets naming, without what naming n has no name for.
func (f Fields) Asked(n Naming) Fields {
	g, _ := f.In(n)
	h, _ := g.In(NamingTweets)
	return h
}

func (f Fields) query(q url.Values, n Naming) {
	g, _ := f.In(n)
	for _, p := range g.params(n) {
		if len(p.values) > 0 {
			q[p.name] = []string{strings.Join(p.values, ",")}
		}
	}
}

type param struct {
	name   string
	values []string
}

func (f Fields) params(n Naming) []param {
	fields := "tweet.fields"
	if n == NamingPosts {
		fields = "post.fields"
	}
	return []param{{fields, f.TweetFields}, {"expansions", f.Expansions}, {"user.fields", f.UserFields},
		{"media.fields", f.MediaFields}, {"poll.fields", f.PollFields}, {"place.fields", f.PlaceFields}}
}

// Namings are the settings of NamingPolicy.
var Namings = []string{"auto", string(NamingTweets), string(NamingPosts)}

// NamingPolicy chooses the naming of a sync's bookmarks requests: one, or
// auto: the tweets naming until X answers 400 to a name only it has, then
// the posts naming. The clients of every account of a sync share one.
type NamingPolicy struct {
	auto  bool
	posts atomic.Bool
}

// NewNamingPolicy is the policy of a setting: "auto" (or ""), "tweets" or "posts".
func NewNamingPolicy(setting string) (*NamingPolicy, error) {
	p := &NamingPolicy{}
	switch Naming(setting) {
	case "", "auto":
		p.auto = true
	case NamingTweets:
	case NamingPosts:
		p.posts.Store(true)
	default:
		return nil, fmt.Errorf("client: naming %q is not one of %s", setting, strings.Join(Namings, ", "))
	}
	return p, nil
}

func (p *NamingPolicy) Current() Naming {
	if p != nil && p.posts.Load() {
		return NamingPosts
	}
	return NamingTweets
}

// switchAfter says whether a request in naming used that X refused with err
// is to be made again in the posts naming; first: this one made the switch.
func (p *NamingPolicy) switchAfter(used Naming, f Fields, err error) (again, first bool) {
	if p == nil || !p.auto || used != NamingTweets || !refusesTweetsNaming(err, f) {
		return false, false
	}
	return true, p.posts.CompareAndSwap(false, true)
}

// refusesTweetsNaming reports whether err is a 400 that refuses a name of
// the tweets naming: its tweet.fields, or a value the posts naming names
// otherwise; not a value neither has (a typo in the spec).
func refusesTweetsNaming(err error, f Fields) bool {
	var apiErr *APIError
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadRequest {
		return false
	}
	g, _ := f.In(NamingTweets)
	whole := strings.Join(g.TweetFields, ",")
	renamed := func(param, v string) bool {
		return param == "tweet.fields" && v == whole || slices.ContainsFunc(renames, func(r rename) bool { return r.param == param && r.tweets == v })
	}
	for _, it := range apiErr.Errors {
		for param, values := range it.Parameters {
			if slices.ContainsFunc(values, func(v string) bool { return renamed(param, v) }) {
				return true
			}
		}
	}
	return false
}
