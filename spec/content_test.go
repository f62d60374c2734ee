package spec

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/billing"
)

func parseOK(t *testing.T, js string) *Spec {
	t.Helper()
	s, err := Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// By default the kinds that cost nothing extra are on (media, long text,
// articles) and the billed ones off (authors: user reads; referenced posts:
// post reads).
func TestContentDefaultsAreTheKindsThatCostNothingExtra(t *testing.T) {
	s := parseOK(t, `{"accounts":[{"access_token":"a"}]}`)
	if k := s.Kinds(); k != (Kinds{Media: true, LongText: true, Articles: true}) {
		t.Errorf("default kinds %+v", k)
	}
	f := s.RequestFields()
	for _, want := range []string{"note_tweet", "article", "attachments", "created_at"} {
		if !slices.Contains(f.TweetFields, want) {
			t.Errorf("tweet.fields %v lacks %s", f.TweetFields, want)
		}
	}
	if !slices.Equal(f.Expansions, []string{"attachments.media_keys", "article.cover_media", "article.media_entities"}) {
		t.Errorf("expansions %v", f.Expansions)
	}
	if !slices.Equal(f.MediaFields, MediaFields) || len(f.UserFields) != 0 {
		t.Errorf("media.fields %v, user.fields %v", f.MediaFields, f.UserFields)
	}
}

// Each list of the fields section adds to what the tables and the content
// kinds need: a spec that asks for one more field never asks for less.
func TestTheFieldsListsAddToWhatTheTablesNeed(t *testing.T) {
	for _, fields := range []string{
		`{"tweet_fields":["context_annotations"],"expansions":["geo.place_id"],"user_fields":["entities"],"media_fields":["media_key"]}`,
		`{"tweet_fields":["created_at"]}`, `{"tweet_fields":[]}`, `{}`,
	} {
		s := parseOK(t, `{"accounts":[{"access_token":"a"}],"content":{"authors":true},"fields":`+fields+`}`)
		f := s.RequestFields()
		for _, tc := range []struct {
			param     string
			got, need []string
		}{
			{"tweet.fields", f.TweetFields, append(slices.Clone(DefaultTweetFields), "note_tweet", "article")},
			{"expansions", f.Expansions, []string{"author_id", "attachments.media_keys", "article.cover_media", "article.media_entities"}},
			{"user.fields", f.UserFields, AuthorUserFields},
			{"media.fields", f.MediaFields, MediaFields},
		} {
			for _, name := range tc.need {
				if !slices.Contains(tc.got, name) {
					t.Errorf("fields %s: %s %v lacks %s", fields, tc.param, tc.got, name)
				}
			}
		}
		for _, extra := range [][]string{s.Fields.TweetFields, s.Fields.Expansions, s.Fields.UserFields, s.Fields.MediaFields} {
			for _, name := range extra {
				if !slices.Contains(slices.Concat(f.TweetFields, f.Expansions, f.UserFields, f.MediaFields), name) {
					t.Errorf("fields %s: %s is not asked for", fields, name)
				}
			}
		}
	}
}

// Each kind asks for its part of the request, and for the parts it shares
// with another kind when both are on.
func TestEachContentKindMapsToItsRequestParameters(t *testing.T) {
	all := `"content":{"authors":true,"media":true,"referenced_posts":true,"long_text":true,"articles":true}`
	none := `"content":{"authors":false,"media":false,"referenced_posts":false,"long_text":false,"articles":false}`
	for _, tc := range []struct {
		content           string
		tweet, expansions []string
		userFields        bool
		mediaFields       bool
	}{
		{none, nil, nil, false, false},
		{`"content":{"authors":true,"media":false,"long_text":false,"articles":false}`, nil, []string{"author_id"}, true, false},
		{`"content":{"media":false,"referenced_posts":true,"long_text":false,"articles":false}`, nil, []string{"referenced_tweets.id"}, false, false},
		{`"content":{"media":false,"articles":false}`, []string{"note_tweet"}, nil, false, false},
		{`"content":{"media":false,"long_text":false}`, []string{"article"}, nil, false, false},
		{all, []string{"note_tweet", "article"}, []string{"author_id", "attachments.media_keys", "referenced_tweets.id",
			"referenced_tweets.id.author_id", "referenced_tweets.id.attachments.media_keys", "article.cover_media", "article.media_entities"}, true, true},
	} {
		f := parseOK(t, `{"accounts":[{"access_token":"a"}],`+tc.content+`}`).RequestFields()
		extra := slices.DeleteFunc(slices.Clone(f.TweetFields), func(s string) bool { return slices.Contains(DefaultTweetFields, s) })
		if !slices.Equal(extra, tc.tweet) || !slices.Equal(f.Expansions, tc.expansions) ||
			(len(f.UserFields) > 0) != tc.userFields || (len(f.MediaFields) > 0) != tc.mediaFields {
			t.Errorf("%s: tweet.fields +%v, expansions %v, user.fields %v, media.fields %v", tc.content, extra, f.Expansions, f.UserFields, f.MediaFields)
		}
	}
}

// An old spec that asks for expansions in `fields` keeps working: the kind
// they archive is on, and its defaults are added.
func TestFieldsThatAskForAKindTurnItOn(t *testing.T) {
	s := parseOK(t, `{"accounts":[{"access_token":"a"}],"fields":{"expansions":["author_id"],"user_fields":["location"]}}`)
	if !s.Kinds().Authors {
		t.Fatal("fields.expansions author_id did not turn authors on")
	}
	f := s.RequestFields()
	if f.UserFields[0] != "location" || !slices.Contains(f.UserFields, "public_metrics") || slices.Index(f.Expansions, "author_id") != 0 {
		t.Errorf("fields %+v", f)
	}
	s = parseOK(t, `{"accounts":[{"access_token":"a"}],"fields":{"expansions":["referenced_tweets.id.author_id"]}}`)
	if k := s.Kinds(); !k.Authors || !k.ReferencedPosts {
		t.Errorf("referenced_tweets.id.author_id gives kinds %+v", k)
	}
}

// A kind turned off in `content` that `fields` asks for is an error naming
// both: no silent winner.
func TestContentOffThatFieldsAskForIsAnError(t *testing.T) {
	for _, tc := range []struct{ spec, want string }{
		{`"content":{"authors":false},"fields":{"expansions":["author_id"]}`, "content.authors: is false, but fields.expansions author_id asks for it"},
		{`"content":{"long_text":false},"fields":{"tweet_fields":["created_at","note_tweet"]}`, "content.long_text: is false, but fields.tweet_fields note_tweet asks for it"},
		{`"content":{"media":false},"fields":{"expansions":["article.cover_media"]}`, "content.media: is false, but fields.expansions article.cover_media"},
	} {
		_, err := Parse([]byte(`{"accounts":[{"access_token":"a"}],` + tc.spec + `}`))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want %q", tc.spec, err, tc.want)
		}
	}
}

// The rates default to X's published ones; post_read_usd keeps its meaning.
func TestRatesDefaultToXsPublishedRates(t *testing.T) {
	s := parseOK(t, `{"accounts":[{"access_token":"a"}]}`)
	if s.Rates() != (billing.Rates{Post: 0.005, OwnedPost: 0.001, User: 0.01, Write: 0.005}) || *s.MaxBilledWrites != 1000 {
		t.Errorf("rates %+v, write cap %d", s.Rates(), *s.MaxBilledWrites)
	}
	s = parseOK(t, `{"accounts":[{"access_token":"a"}],"post_read_usd":0.004}`)
	if *s.PostReadUSD != 0.004 || *s.OwnedReadUSD != 0.001 {
		t.Errorf("rates %v %v", *s.PostReadUSD, *s.OwnedReadUSD)
	}
}

// An account's reads are owned when it says so, or when its user is the
// app's owner and it uses the spec's app.
func TestOwnedReadsFromTheAccountOrTheAppOwner(t *testing.T) {
	s := parseOK(t, `{"app_owner_user_id":"100","accounts":[
		{"access_token":"a"},
		{"access_token":"b","client_id":"other-app"},
		{"access_token":"c","owned_reads":false},
		{"access_token":"d","owned_reads":true}]}`)
	for _, tc := range []struct {
		i    int
		user string
		want bool
	}{{0, "100", true}, {0, "200", false}, {0, "", false}, {1, "100", false}, {2, "100", false}, {3, "300", true}} {
		if got := s.OwnedReads(tc.i, tc.user); got != tc.want {
			t.Errorf("accounts[%d] as user %q: owned %v, want %v", tc.i, tc.user, got, tc.want)
		}
	}
	_, err := Parse([]byte(`{"app_owner_user_id":"100","accounts":[{"user_id":"200","access_token":"a","owned_reads":true}]}`))
	if err == nil || !strings.Contains(err.Error(), "accounts[0].owned_reads: is true, but the account's user 200 is not app_owner_user_id 100") {
		t.Errorf("error %v", err)
	}
}

// A value of the request is traced to the settings of the spec that ask for
// it: a content kind in effect, the fields section when it lists it, the
// columns of x_bookmarks for a default post field; never a section the spec
// does not have.
func TestTheSettingsThatAskForAValueAreNamed(t *testing.T) {
	for _, tc := range []struct{ spec, param, value, want string }{
		{`"content":{"referenced_posts":true}`, "expansions", "referenced_tweets.id", "content.referenced_posts"},
		{`"content":{"referenced_posts":true},"fields":{"expansions":["referenced_tweets.id"]}`, "expansions", "referenced_tweets.id", "content.referenced_posts fields.expansions"},
		{`"fields":{"expansions":["referenced_tweets.id"]}`, "expansions", "referenced_tweets.id", "content.referenced_posts fields.expansions"},
		{`"content":{"authors":true,"referenced_posts":true}`, "expansions", "referenced_tweets.id.author_id", "content.authors content.referenced_posts"},
		{`"content":{}`, "expansions", "article.cover_media", "content.media content.articles"},
		{`"content":{"media":false}`, "expansions", "article.cover_media", "content.articles"},
		{`"content":{}`, "tweet.fields", "created_at", RequestNeeds},
		{`"content":{}`, "post.fields", "note_post", "content.long_text"},
		{`"content":{"referenced_posts":true}`, "expansions", "referenced_posts", "content.referenced_posts"},
		{`"fields":{"tweet_fields":["context_annotations"]}`, "tweet.fields", "context_annotations", "fields.tweet_fields"},
		{`"content":{}`, "expansions", "author_id", ""},
		{`"content":{}`, "max_results", "1000", ""},
	} {
		s := parseOK(t, `{"accounts":[{"access_token":"a"}],`+tc.spec+`}`)
		if got := strings.Join(s.AskedBy(tc.param, tc.value), " "); got != tc.want {
			t.Errorf("%s: %s=%s asked for by %q, want %q", tc.spec, tc.param, tc.value, got, tc.want)
		}
	}
}

// A value the API refuses is traced to the spec fields that ask for it.
func TestSourcesOfARequestValue(t *testing.T) {
	for _, tc := range []struct{ param, value, want string }{
		{"expansions", "article.cover_media", "content.media content.articles fields.expansions"},
		{"expansions", "author_id", "content.authors fields.expansions"},
		{"tweet.fields", "note_tweet", "content.long_text fields.tweet_fields"},
		{"tweet.fields", "lang", "fields.tweet_fields"},
		{"user.fields", "verified_type", "content.authors fields.user_fields"},
		{"media.fields", "variants", "content.media fields.media_fields"},
		{"max_results", "1000", ""},
	} {
		if got := strings.Join(sourcesOf(tc.param, tc.value), " "); got != tc.want {
			t.Errorf("%s=%s: %q, want %q", tc.param, tc.value, got, tc.want)
		}
	}
}

// The JSON schema says the defaults the code applies: X's rates, and the
// cap of bookmark writes.
func TestTheSchemaDefaultsAreXsRates(t *testing.T) {
	var doc struct {
		Defs struct {
			Spec struct {
				Properties map[string]struct {
					OneOf []struct {
						Default any `json:"default"`
					} `json:"oneOf"` // a value, or null
				} `json:"properties"`
			} `json:"Spec"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal([]byte(JSONSchema), &doc); err != nil {
		t.Fatal(err)
	}
	x, props := billing.DefaultRates(), doc.Defs.Spec.Properties
	for field, want := range map[string]float64{"post_read_usd": x.Post, "owned_read_usd": x.OwnedPost, "user_read_usd": x.User,
		"bookmark_write_usd": x.Write, "max_billed_writes": billing.DefaultMaxBilledWrites} {
		if got, _ := props[field].OneOf[0].Default.(float64); got != want {
			t.Errorf("%s: the schema's default is %v, the code's %v", field, got, want)
		}
	}
}
