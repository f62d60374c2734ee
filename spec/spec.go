// Package spec is the plugin's configuration: the `spec:` block inside a
// CloudQuery source spec. Defaults and validation live here, in code, because
// the SDK does not check a spec against its JSON schema during a sync.
package spec

import (
	"bytes"
	"cmp"
	_ "embed"
	"encoding/json"
	"fmt"
	"net/url"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/bearer"
	"github.com/cq-source-x/cq-source-x/walk"
)

// Spec configures the plugin.
type Spec struct {
	// Base URL of the X API. Point it at the simulator (`cq-source-x sandbox`) to try the plugin without credentials.
	BaseURL string `json:"base_url,omitempty" jsonschema:"format=uri,default=https://api.x.com"`

	// OAuth 2.0 app settings, used to refresh the tokens of accounts configured with `token_file`.
	OAuth OAuth `json:"oauth,omitempty"`

	// The accounts whose bookmarks are synced. Each is a separate X user with its own token, rate limits and usage meter.
	// They are synced in this order, and `cloudquery sync --shard N/T` splits this list.
	Accounts []Account `json:"accounts" jsonschema:"required,minItems=1"`

	// What is archived with each bookmarked post, kind by kind: authors, media, referenced posts, long text, articles.
	// The kinds that cost nothing extra are on by default.
	Content Content `json:"content,omitempty"`

	// Post fields and expansions to request on top of what the tables and `content` need: each list adds to them, none takes anything away (a parameter of a content kind turns that kind on).
	Fields Fields `json:"fields,omitempty"`

	// The names X's API is asked for posts in: `tweets` (tweet.fields, referenced_tweets.id, note_tweet: X's API reference, and its OpenAPI description up to revision 2.166), `posts` (post.fields, referenced_posts, note_post: its OpenAPI description from revision 2.167), or `auto`: tweets until X answers 400 to a name only they have, then posts for the rest of the sync, said once in the log. Responses are read in either naming.
	// The posts naming offers author_id, in_reply_to_user_id and the referenced posts only as expansions, which X bills: it asks for them only with `content.authors` and `content.referenced_posts`, and their columns are filled otherwise only when X returns them.
	APINaming string `json:"api_naming,omitempty" jsonschema:"enum=auto,enum=tweets,enum=posts,default=auto"`

	// How walks choose page sizes, and their budgets.
	Planner Planner `json:"planner,omitempty"`

	// Longest wait for a rate-limit window to reset before a request gives up with a rate-limit error.
	// Waiting is free; restarting a walk re-bills every post already read.
	RateLimitWaitCap *Duration `json:"rate_limit_wait_cap,omitempty" jsonschema:"default=16m"`

	// How long one request keeps retrying server errors, dropped connections and cut-short bodies (capped exponential backoff with full jitter; a `Retry-After` is honoured) before its walk fails; once the API has answered, refused connections and names that do not resolve too.
	// Rate-limit waits do not count. A walk that fails bills the posts it read again at the next sync. `0` turns the budget off.
	RetryBudget *Duration `json:"retry_budget,omitempty" jsonschema:"default=5m"`

	// Attempts every request gets at the faults `retry_budget` covers, even when the budget is spent, and all it gets when no server was reached while the API has never answered (a wrong `base_url`, no network). With `retry_budget: 0` it is the only bound (what it meant before there was a budget).
	MaxAttempts int `json:"max_attempts,omitempty" jsonschema:"minimum=1,maximum=10,default=4"`

	// Longest wait for a connection to the API (the dial and the TLS handshake). A request that gets none is a server never reached: it gets `max_attempts` tries while the API has never answered, and is retried within `retry_budget` after.
	ConnectTimeout *Duration `json:"connect_timeout,omitempty" jsonschema:"default=10s"`

	// Longest wait for the API's answer (its status and headers) once a request is sent. A request past it is retried within `retry_budget`.
	HeaderTimeout *Duration `json:"header_timeout,omitempty" jsonschema:"default=30s"`

	// Longest one request may take in all, reading the whole answer included, so that a server sending its answer a byte at a time cannot hold a sync. A request past it is retried within `retry_budget`.
	RequestTimeout *Duration `json:"request_timeout,omitempty" jsonschema:"default=2m"`

	// Price of one post read in USD, for the usage table's estimates (X's published rate).
	PostReadUSD *float64 `json:"post_read_usd,omitempty" jsonschema:"minimum=0,maximum=1,default=0.005"`

	// Price of one post of an "owned read" in USD: the owner of the developer app reading their own bookmarks with it (see `app_owner_user_id` and `accounts[].owned_reads`).
	OwnedReadUSD *float64 `json:"owned_read_usd,omitempty" jsonschema:"minimum=0,maximum=1,default=0.001"`

	// Price of one user read in USD: each expanded author (`content.authors`), and GET /2/users/me.
	UserReadUSD *float64 `json:"user_read_usd,omitempty" jsonschema:"minimum=0,maximum=1,default=0.01"`

	// Price of one bookmark write in USD: each request of `cq-source-x bookmarks remove` and `bookmarks add` (X's published rate; X bills writes per request).
	BookmarkWriteUSD *float64 `json:"bookmark_write_usd,omitempty" jsonschema:"minimum=0,maximum=1,default=0.005"`

	// Most bookmark writes (requests of `cq-source-x bookmarks remove` and `bookmarks add`) one run of those commands may have X bill an account for; 0 means no cap.
	// A run that reaches it stops, with what it did recorded, and goes on where it stopped when run again.
	MaxBilledWrites *int `json:"max_billed_writes,omitempty" jsonschema:"minimum=0,default=1000"`

	// X user id of the owner of the developer app (the account that created it in the developer portal).
	// The bookmark reads of that user's account are owned reads, priced at `owned_read_usd`. Applies to accounts without a `client_id` of their own.
	AppOwnerUserID string `json:"app_owner_user_id,omitempty" jsonschema:"pattern=^[0-9]{1\\,19}$"`

	// A best-effort bound on the work done at once, as in CloudQuery's other source plugins. The SDK's scheduler syncs `concurrency` ÷ 100 (account, table) pairs at once for values above 100, and about 10 for values up to 100: each account waits for X's round trips, so more at once finish a sync of many accounts sooner; lower it to use less memory.
	Concurrency int `json:"concurrency,omitempty" jsonschema:"minimum=1,default=10000"`

	// How long a CloudQuery sync sends again the rows of its incremental tables, so that a sync stopped before the destination wrote them loses none.
	// The standalone exporter commits its rows with its state and sends nothing again.
	Resend Resend `json:"resend,omitempty"`

	// Checks of the archived posts with X's free batch compliance job (table x_post_compliance): posts since deleted, or whose authors were suspended or made protected.
	// Off when absent. Needs the X app's app-only bearer token.
	Compliance *Compliance `json:"compliance,omitempty"`

	// The photos and videos themselves, stored once each by the hash of their content (table x_media_files): X's CDN serves them, and bills nothing for them.
	// Off when absent; `media_files: {}` stores photos.
	MediaFiles *MediaFiles `json:"media_files,omitempty"`
}

// OAuth holds the X app used to refresh tokens.
type OAuth struct {
	// Client ID of the X app that issued the tokens. A token file written by `cq-source-x login` records it, so this is optional.
	ClientID string `json:"client_id,omitempty"`
	// Client secret, for confidential clients (Web App, bot). Leave empty for public clients (Native App).
	ClientSecret string `json:"client_secret,omitempty"`
	// Token endpoint.
	TokenURL string `json:"token_url,omitempty" jsonschema:"format=uri,default=https://api.x.com/2/oauth2/token"`
}

// Account is one X user.
type Account struct {
	// X user id (decimal). Optional: taken from the token file, else resolved with GET /2/users/me.
	UserID string `json:"user_id,omitempty" jsonschema:"pattern=^[1-9][0-9]{0\\,18}$"`
	// A user-context OAuth 2.0 access token. It expires two hours after it is issued and cannot be refreshed; use `token_file` for scheduled syncs.
	AccessToken string `json:"access_token,omitempty"`
	// Path of a token file written by `cq-source-x login`. Its tokens are refreshed (and rotated) automatically.
	// A relative path is relative to the spec file's directory with `cq-source-x export`, and to the plugin's working directory in a CloudQuery sync (where `cloudquery sync` runs, for `registry: local`), which is not told where the spec file is: give an absolute path when syncs run from elsewhere (cron).
	TokenFile string `json:"token_file,omitempty"`
	// Client ID for refreshing this account's token, if different from `oauth.client_id`.
	ClientID string `json:"client_id,omitempty"`
	// Client secret for this account's app, if different from `oauth.client_secret`.
	ClientSecret string `json:"client_secret,omitempty"`
	// Whether this account's user owns the developer app its token was issued by, so that its bookmark reads are owned reads (priced at `owned_read_usd`).
	// Default: whether its user id is `app_owner_user_id`.
	OwnedReads *bool `json:"owned_reads,omitempty"`
}

// Fields selects more of what the API returns with each post: each list
// adds to what the tables need (RequestFields), so that a spec that asks for
// one more field never archives posts without the columns they fill.
type Fields struct {
	// More post fields (`tweet.fields`), added to those the columns of x_bookmarks need (created_at, author_id, conversation_id, lang, public_metrics, entities, referenced_tweets, attachments, possibly_sensitive, in_reply_to_user_id, edit_history_tweet_ids) and those of `content` (note_tweet, article). None of those can be taken away: each fills a column.
	TweetFields []string `json:"tweet_fields,omitempty"`
	// More expansions (`expansions`). Those of a content kind (`author_id`, `attachments.media_keys`, `referenced_tweets.id`, ...) turn it on; X bills expanded users and posts.
	Expansions []string `json:"expansions,omitempty"`
	// More user fields of expanded authors (`user.fields`), added to the profile fields `content.authors` asks for.
	UserFields []string `json:"user_fields,omitempty"`
	// More media fields of expanded media (`media.fields`), added to those `content.media` asks for.
	MediaFields []string `json:"media_fields,omitempty"`
	// Poll fields (`poll.fields`).
	PollFields []string `json:"poll_fields,omitempty"`
	// Place fields (`place.fields`).
	PlaceFields []string `json:"place_fields,omitempty"`
}

type fieldList struct {
	path  string
	names *[]string
}

// lists are the section's lists, each with the path of its field.
func (f *Fields) lists() []fieldList {
	return []fieldList{{"fields.tweet_fields", &f.TweetFields}, {"fields.expansions", &f.Expansions}, {"fields.user_fields", &f.UserFields},
		{"fields.media_fields", &f.MediaFields}, {"fields.poll_fields", &f.PollFields}, {"fields.place_fields", &f.PlaceFields}}
}

// Planner tunes the walks (see docs/cost.md).
type Planner struct {
	// Largest page size requested. 90 by default, not 100: X confirmed that walks with max_results=100 can end early.
	MaxPageSize int `json:"max_page_size,omitempty" jsonschema:"minimum=1,maximum=100,default=90"`
	// Requests one incremental bookmark walk may spend before pages grow (of the 180 a user has per 15 minutes).
	RequestBudget int `json:"request_budget,omitempty" jsonschema:"minimum=1,default=150"`
	// Requests all folder walks of one account may spend together before pages grow (of the 50 a user has per 15 minutes).
	FolderRequestBudget int `json:"folder_request_budget,omitempty" jsonschema:"minimum=1,default=40"`
	// Most posts one walk may be billed for; 0 means no cap. A walk that reaches it stops and its state does not advance.
	// The default is far above any list the API has served (it served the newest 800 bookmarks, and one user has walked 1,120): it bounds what a broken server that keeps sending new posts can bill.
	// Each sync reads a list from the top again, so after a walk stopped by the cap the next syncs do not start (and bill nothing) until the cap is above what that walk billed.
	// A first sync reads every bookmark: for a list larger than the cap, raise it for that sync once (or set 0), then set it back.
	MaxBilledPosts *int `json:"max_billed_posts,omitempty" jsonschema:"minimum=0,default=100000"`
	// Held posts that must follow the first held post, next to it in the remembered order, before a walk stops (docs/walk.md). Each one more guards against one more of the newest bookmarks saved again in its old order hiding new ones, at one post per sync.
	Confirmations int `json:"confirmations,omitempty" jsonschema:"minimum=1,maximum=10,default=1"`
}

// X's addresses, where a spec leaves base_url and oauth.token_url out.
const (
	DefaultBaseURL  = "https://api.x.com"
	DefaultTokenURL = "https://api.x.com/2/oauth2/token"
)

// Bounds of the values the spec check accepts: beyond them a value is a
// mistake that would show only once a sync runs.
const (
	// MaxWait bounds rate_limit_wait_cap, retry_budget and compliance.wait:
	// a sync that waits longer than a day for one thing is stuck.
	MaxWait = 24 * time.Hour
	// MinTimeout and MaxTimeout bound the three timeouts.
	MinTimeout = time.Second
	MaxTimeout = time.Hour
)

// DefaultTweetFields are the post fields every bookmarks request asks for:
// the columns of x_bookmarks, everything public about a post that X bills
// nothing extra for. The content kinds add their own (note_tweet, article),
// and fields.tweet_fields more.
var DefaultTweetFields = []string{
	"created_at", "author_id", "conversation_id", "lang", "public_metrics", "entities",
	"referenced_tweets", "attachments", "possibly_sensitive", "in_reply_to_user_id",
	"edit_history_tweet_ids",
}

// forbiddenTweetFields fail with field-authorization errors on other
// people's posts.
var forbiddenTweetFields = []string{"non_public_metrics", "organic_metrics", "promoted_metrics"}

// JSONSchema is the spec's JSON schema, generated from this file by
// `go generate ./spec` (gen/main.go); a test fails when it is stale.
//
//go:generate go run ./gen
//go:embed schema.json
var JSONSchema string

// Parse decodes a plugin spec, applies defaults and validates it. Unknown
// fields are errors, so a misspelt option is not silently ignored. The error
// is an *Error listing every problem with the path of its field.
func Parse(data []byte) (*Spec, error) {
	if len(bytes.TrimSpace(data)) == 0 || bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil, &Error{Problems: []Problem{{Msg: "the plugin spec is empty: it needs at least `accounts`"}}}
	}
	var raw any
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, &Error{Problems: []Problem{{Msg: "not valid JSON: " + err.Error()}}}
	}
	var ps problems
	shape(raw, reflect.TypeFor[Spec](), "", &ps)
	setButEmpty(raw, &ps)
	if err := ps.err(); err != nil {
		return nil, err
	}
	var s Spec
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&s); err != nil { // what shape does not check: a map's values, a number out of range
		return nil, &Error{Problems: []Problem{{Msg: err.Error()}}}
	}
	s.SetDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// setButEmpty adds to ps a URL field given with no value: left out, it is
// X's own address (DefaultBaseURL, DefaultTokenURL), so an empty value —
// an environment variable that is set but empty, in a spec file — would
// have a sync read, and be billed by, the real API without a word.
func setButEmpty(raw any, ps *problems) {
	top, _ := raw.(map[string]any)
	check := func(obj map[string]any, key, path, def string) {
		if v, set := obj[key]; set && (v == nil || v == "") {
			ps.add(path, "is empty: leave it out for X's API (%s), or give the address (an environment variable that is set but empty, as in `%s: ${VAR}`, gives this too)", def, key)
		}
	}
	check(top, "base_url", "base_url", DefaultBaseURL)
	if oauth, ok := top["oauth"].(map[string]any); ok {
		check(oauth, "token_url", "oauth.token_url", DefaultTokenURL)
	}
}

// SetDefaults fills in what was left out.
func (s *Spec) SetDefaults() {
	s.BaseURL = strings.TrimRight(cmp.Or(s.BaseURL, DefaultBaseURL), "/")
	s.OAuth.TokenURL = cmp.Or(s.OAuth.TokenURL, DefaultTokenURL)
	// The lists add to what the tables need: empty is unset, in one form.
	for _, l := range s.Fields.lists() {
		if len(*l.names) == 0 {
			*l.names = nil
		}
	}
	s.APINaming = cmp.Or(s.APINaming, "auto")
	p := &s.Planner
	p.MaxPageSize = cmp.Or(p.MaxPageSize, walk.DefaultMaxPageSize)
	p.RequestBudget = cmp.Or(p.RequestBudget, walk.DefaultRequestBudget)
	p.FolderRequestBudget = cmp.Or(p.FolderRequestBudget, 40)
	p.Confirmations = cmp.Or(p.Confirmations, walk.DefaultConfirmations)
	orDefault(&p.MaxBilledPosts, walk.DefaultMaxBilledPosts)
	orDefault(&s.RateLimitWaitCap, NewDuration(16*time.Minute))
	orDefault(&s.RetryBudget, NewDuration(5*time.Minute))
	orDefault(&s.ConnectTimeout, NewDuration(client.DefaultConnectTimeout))
	orDefault(&s.HeaderTimeout, NewDuration(client.DefaultHeaderTimeout))
	orDefault(&s.RequestTimeout, NewDuration(client.DefaultRequestTimeout))
	s.MaxAttempts = cmp.Or(s.MaxAttempts, 4)
	s.Concurrency = cmp.Or(s.Concurrency, 10000)
	s.setPricingDefaults()
	if s.Compliance != nil {
		s.Compliance.setDefaults()
	}
	if s.MediaFiles != nil {
		s.MediaFiles.setDefaults()
	}
	orDefault(&s.Resend.Syncs, 3)
}

func orDefault[T any](p **T, def T) {
	if *p == nil {
		*p = &def
	}
}

var userIDPattern = regexp.MustCompile(`^[1-9][0-9]{0,18}$`)

// Validate reports every problem, each naming its field, as an *Error.
// Everything a sync would refuse is refused here, before any file is
// written or request sent.
func (s *Spec) Validate() error {
	var ps problems
	add := ps.add
	checkURL(add, "base_url", s.BaseURL)
	checkURL(add, "oauth.token_url", s.OAuth.TokenURL)
	checkCredential(add, "oauth.client_id", s.OAuth.ClientID)
	checkCredential(add, "oauth.client_secret", s.OAuth.ClientSecret)
	if len(s.Accounts) == 0 {
		add("accounts", "at least one account is required")
	}
	users, tokens, tokenFiles := map[string]int{}, map[string]int{}, map[string]int{}
	// firstOf returns the account that had v first, after recording that accounts[i] has it.
	firstOf := func(seen map[string]int, v string, i int) (int, bool) {
		j, dup := seen[v]
		if !dup && v != "" {
			seen[v] = i
		}
		return j, dup
	}
	for i, a := range s.Accounts {
		field := fmt.Sprintf("accounts[%d]", i)
		if j, dup := firstOf(tokens, a.AccessToken, i); dup {
			add(field+".access_token", "is accounts[%d].access_token too: a token is one user's, whose posts would be read, and billed, twice", j)
		}
		tokenFile := a.TokenFile
		if tokenFile != "" {
			tokenFile = filepath.Clean(tokenFile)
		}
		if j, dup := firstOf(tokenFiles, tokenFile, i); dup {
			add(field+".token_file", "is accounts[%d].token_file too: a token file is one user's, whose posts would be read, and billed, twice", j)
		}
		switch {
		case a.AccessToken == "" && a.TokenFile == "":
			add(field, "set either access_token or token_file (from `cq-source-x login`)")
		case a.AccessToken != "" && a.TokenFile != "":
			add(field, "set access_token or token_file, not both")
		}
		if a.UserID != "" && !userIDPattern.MatchString(a.UserID) {
			add(field+".user_id", "must be a decimal X user id of 1 to 19 digits without a leading zero, got %q", a.UserID)
		} else if j, dup := firstOf(users, a.UserID, i); dup {
			add(field+".user_id", "user %s is already accounts[%d]; each account may appear once", a.UserID, j)
		}
		checkCredential(add, field+".access_token", a.AccessToken)
		checkCredential(add, field+".client_id", a.ClientID)
		checkCredential(add, field+".client_secret", a.ClientSecret)
		checkPath(add, field+".token_file", a.TokenFile)
	}
	s.validateFields(add)
	if !slices.Contains(client.Namings, s.APINaming) {
		add("api_naming", "must be one of %s, got %q", strings.Join(client.Namings, ", "), s.APINaming)
	}
	if err := s.WalkSettings().Validate(); err != nil {
		add("planner", "%v", err)
	}
	checkCount(add, "planner.folder_request_budget", s.Planner.FolderRequestBudget, 1, 0)
	checkDuration(add, "rate_limit_wait_cap", s.RateLimitWaitCap.Duration(), 0, MaxWait)
	checkDuration(add, "retry_budget", s.RetryBudget.Duration(), 0, MaxWait)
	checkDuration(add, "connect_timeout", s.ConnectTimeout.Duration(), MinTimeout, MaxTimeout)
	checkDuration(add, "header_timeout", s.HeaderTimeout.Duration(), MinTimeout, MaxTimeout)
	checkDuration(add, "request_timeout", s.RequestTimeout.Duration(), MinTimeout, MaxTimeout)
	checkCount(add, "max_attempts", s.MaxAttempts, 1, 10)
	checkCount(add, "concurrency", s.Concurrency, 1, 0)
	s.validateCompliance(add)
	checkCount(add, "resend.syncs", *s.Resend.Syncs, 1, 100)
	s.validateContent(add)
	s.validateMediaFiles(add)
	s.validatePricing(add)
	return ps.err()
}

// checkURL checks a URL that requests carry a credential to: absolute,
// https (plain http only to a loopback host), no user info, query,
// fragment or white space. A URL with user info is not repeated.
func checkURL(add func(field, format string, args ...any), field, raw string) {
	u, err := url.Parse(raw)
	if err == nil && u.User != nil {
		add(field, "must not carry a user name or password (%s): the API's credentials are the account's tokens", u.Redacted())
		return
	}
	switch {
	case strings.ContainsFunc(raw, func(r rune) bool { return unicode.IsSpace(r) || unicode.IsControl(r) }):
		add(field, "must not hold white space or control characters, got %q", raw)
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		add(field, "must be an absolute http(s) URL, got %q", raw)
	case u.Scheme == "http" && !bearer.Loopback(u.Hostname()):
		add(field, "must use https, got %q: plain http would send the token in clear (it is allowed only for a loopback host, such as the simulator's 127.0.0.1)", raw)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		add(field, "must not have a query or fragment, got %q", raw)
	}
}

// checkCredential checks a token, client id or secret, which go into HTTP
// headers and forms as they are. The value is never repeated.
func checkCredential(add func(field, format string, args ...any), field, v string) {
	if problem := credentialProblem(v); problem != "" {
		add(field, "%s", problem)
	}
}

// credentialProblem says what is wrong with the characters of credential
// v, or "" when nothing is.
func credentialProblem(v string) string {
	for i, r := range v {
		switch {
		case unicode.IsSpace(r):
			return fmt.Sprintf("contains whitespace (character %d); paste the value alone, without \"Bearer \" or quotes", i+1)
		case r < 0x21 || r > 0x7e:
			return fmt.Sprintf("contains a character that is not printable ASCII (character %d); credentials are printable ASCII: paste the value alone", i+1)
		}
	}
	return ""
}

// checkPath checks a file path: the system refuses control characters.
func checkPath(add func(field, format string, args ...any), field, v string) {
	if strings.ContainsFunc(v, unicode.IsControl) {
		add(field, "contains a control character, got %q", v)
	}
}

func checkDuration(add func(field, format string, args ...any), field string, d, least, most time.Duration) {
	switch {
	case d < 0:
		add(field, "must not be negative, got %s", d)
	case d < least:
		add(field, "must be at least %s, got %s", least, d)
	case d > most:
		add(field, "must be at most %s, got %s", most, d)
	}
}

// checkCount checks that n is at least least, and at most most unless most
// is 0.
func checkCount(add func(field, format string, args ...any), field string, n, least, most int) {
	switch {
	case most == 0 && n < least:
		add(field, "must be at least %d, got %d", least, n)
	case most != 0 && (n < least || n > most):
		add(field, "must be between %d and %d, got %d", least, most, n)
	}
}

// validateFields checks the field selection: names the API takes, each in
// an element of its own.
func (s *Spec) validateFields(add func(field, format string, args ...any)) {
	for _, l := range s.Fields.lists() {
		for i, name := range *l.names {
			if problem := client.FieldNameProblem(name); problem != "" {
				add(fmt.Sprintf("%s[%d]", l.path, i), "%q %s", name, problem)
			}
		}
	}
	for _, name := range s.Fields.TweetFields {
		if slices.Contains(forbiddenTweetFields, name) {
			add("fields.tweet_fields", "%q is only readable for your own posts and fails on bookmarked posts of others", name)
		}
	}
}

func (s *Spec) WalkSettings() walk.Settings {
	p := s.Planner
	return walk.Settings{MaxPageSize: p.MaxPageSize, RequestBudget: p.RequestBudget, Confirmations: p.Confirmations, MaxBilledPosts: *p.MaxBilledPosts}
}

func (s *Spec) Timeouts() client.Timeouts {
	return client.Timeouts{Connect: s.ConnectTimeout.Duration(), Headers: s.HeaderTimeout.Duration(), Request: s.RequestTimeout.Duration()}
}
