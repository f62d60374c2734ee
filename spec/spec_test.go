package spec

import (
	"encoding/json"
	"errors"
	"github.com/cq-source-x/cq-source-x/walk"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/plugin"
)

func TestDefaultsAreAppliedInCode(t *testing.T) {
	s, err := Parse([]byte(`{"accounts":[{"access_token":"tok"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.BaseURL != DefaultBaseURL || s.OAuth.TokenURL != DefaultTokenURL {
		t.Errorf("urls %q %q", s.BaseURL, s.OAuth.TokenURL)
	}
	if s.Planner.MaxPageSize != 90 || s.Planner.RequestBudget != 150 || s.Planner.Confirmations != 1 || s.Planner.FolderRequestBudget != 40 {
		t.Errorf("planner defaults %+v", s.Planner)
	}
	if s.RateLimitWaitCap.Duration() != 16*time.Minute || s.MaxAttempts != 4 || *s.PostReadUSD != 0.005 || s.Concurrency != 10000 {
		t.Errorf("defaults: cap %s attempts %d usd %v concurrency %d", s.RateLimitWaitCap.Duration(), s.MaxAttempts, *s.PostReadUSD, s.Concurrency)
	}
	if len(s.Fields.TweetFields) != 0 || len(s.Fields.Expansions) != 0 || !slices.Equal(s.RequestFields().TweetFields[:len(DefaultTweetFields)], DefaultTweetFields) {
		t.Errorf("fields %+v, request %+v", s.Fields, s.RequestFields())
	}
}

func TestBadSpecsGetErrorsNamingTheField(t *testing.T) {
	for _, tc := range []struct{ name, spec, want string }{
		{"empty", ``, "spec is empty"},
		{"null", `null`, "spec is empty"},
		{"not json", `{`, "invalid plugin spec"},
		{"unknown field", `{"acounts":[]}`, `unknown field "acounts"`},
		{"unknown nested field", `{"accounts":[{"acess_token":"x"}]}`, `unknown field "acess_token"`},
		{"wrong type", `{"accounts":[{"access_token":"x"}],"planner":{"max_page_size":"big"}}`, `planner.max_page_size: must be a whole number, not a string`},
		{"no accounts", `{"accounts":[]}`, "accounts: at least one account is required"},
		{"no token", `{"accounts":[{"user_id":"1"}]}`, "accounts[0]: set either access_token or token_file"},
		{"both tokens", `{"accounts":[{"access_token":"a","token_file":"f"}]}`, "accounts[0]: set access_token or token_file, not both"},
		{"bad user id", `{"accounts":[{"user_id":"12ab","access_token":"a"}]}`, `accounts[0].user_id: must be a decimal X user id of 1 to 19 digits without a leading zero, got "12ab"`},
		{"too long user id", `{"accounts":[{"user_id":"12345678901234567890","access_token":"a"}]}`, `accounts[0].user_id`},
		{"duplicate user", `{"accounts":[{"user_id":"1","access_token":"a"},{"user_id":"1","access_token":"b"}]}`, "accounts[1].user_id: user 1 is already accounts[0]"},
		{"bearer prefix", `{"accounts":[{"access_token":"Bearer abc"}]}`, "accounts[0].access_token: contains whitespace"},
		{"base url", `{"base_url":"api.x.com","accounts":[{"access_token":"a"}]}`, `base_url: must be an absolute http(s) URL, got "api.x.com"`},
		{"token url", `{"oauth":{"token_url":"ftp://x"},"accounts":[{"access_token":"a"}]}`, `oauth.token_url: must be an absolute http(s) URL`},
		{"page size", `{"planner":{"max_page_size":101},"accounts":[{"access_token":"a"}]}`, "max_page_size must be between 1 and 100, got 101"},
		{"negative cap", `{"planner":{"max_billed_posts":-1},"accounts":[{"access_token":"a"}]}`, "max_billed_posts must be 0"},
		{"confirmations", `{"planner":{"confirmations":11},"accounts":[{"access_token":"a"}]}`, "confirmations must be between 1 and 10"},
		{"private metrics", `{"fields":{"tweet_fields":["non_public_metrics"]},"accounts":[{"access_token":"a"}]}`, `fields.tweet_fields: "non_public_metrics"`},
		{"bad duration", `{"rate_limit_wait_cap":"soon","accounts":[{"access_token":"a"}]}`, "invalid plugin spec"},
		{"attempts", `{"max_attempts":11,"accounts":[{"access_token":"a"}]}`, "max_attempts: must be between 1 and 10, got 11"},
		{"usd", `{"post_read_usd":-1,"accounts":[{"access_token":"a"}]}`, "post_read_usd: must be a price in USD between 0 and 1"},
		{"huge usd", `{"user_read_usd":1e308,"accounts":[{"access_token":"a"}]}`, "user_read_usd: must be a price in USD between 0 and 1"},
		{"write usd", `{"bookmark_write_usd":-0.005,"accounts":[{"access_token":"a"}]}`, "bookmark_write_usd: must be a price in USD between 0 and 1 per request, got -0.005"},
		{"negative write cap", `{"max_billed_writes":-1,"accounts":[{"access_token":"a"}]}`, "max_billed_writes: must be 0 (no cap) or positive, got -1"},
		{"owner id", `{"app_owner_user_id":"me","accounts":[{"access_token":"a"}]}`, `app_owner_user_id: must be a decimal X user id`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.spec))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
		})
	}
}

// Every problem names the field it is in, down to the list element, and a
// misspelt field gets the name it was probably meant to be.
func TestSpecErrorsSayWhere(t *testing.T) {
	for _, tc := range []struct{ name, spec, want string }{
		{"top level", `{"acounts":[{"access_token":"a"}]}`, `invalid plugin spec: unknown field "acounts" (did you mean "accounts"?)`},
		{"account", `{"accounts":[{"access_token":"a"},{"acess_token":"b"}]}`, `invalid plugin spec: accounts[1]: unknown field "acess_token" (did you mean "access_token"?)`},
		{"oauth", `{"oauth":{"clientid":"c"},"accounts":[{"access_token":"a"}]}`, `invalid plugin spec: oauth: unknown field "clientid" (did you mean "client_id"?)`},
		{"fields", `{"fields":{"tweet_field":["lang"]},"accounts":[{"access_token":"a"}]}`, `invalid plugin spec: fields: unknown field "tweet_field" (did you mean "tweet_fields"?)`},
		{"planner", `{"planner":{"max_biled_posts":100},"accounts":[{"access_token":"a"}]}`, `invalid plugin spec: planner: unknown field "max_biled_posts" (did you mean "max_billed_posts"?)`},
		{"another section", `{"max_billed_posts":100,"accounts":[{"access_token":"a"}]}`, `invalid plugin spec: unknown field "max_billed_posts" (did you mean "planner.max_billed_posts"? it belongs in another section)`},
		{"nothing close", `{"planner":{"speed":1},"accounts":[{"access_token":"a"}]}`, `invalid plugin spec: planner: unknown field "speed"; this section has max_page_size, request_budget, folder_request_budget, max_billed_posts, confirmations`},
		{"list element type", `{"accounts":[{"access_token":"a"},{"user_id":1002,"access_token":"b"}]}`, `invalid plugin spec: accounts[1].user_id: must be a string, not the number 1002`},
		{"list type", `{"fields":{"tweet_fields":"lang"},"accounts":[{"access_token":"a"}]}`, `invalid plugin spec: fields.tweet_fields: must be a list of strings, e.g. [a, b], not a string`},
		{"section type", `{"planner":[1],"accounts":[{"access_token":"a"}]}`, `invalid plugin spec: planner: must be a map of settings, not a list`},
		{"whole number", `{"planner":{"max_billed_posts":1.5},"accounts":[{"access_token":"a"}]}`, `invalid plugin spec: planner.max_billed_posts: must be a whole number, not the number 1.5`},
		{"duration", `{"rate_limit_wait_cap":"soon","accounts":[{"access_token":"a"}]}`, `invalid plugin spec: rate_limit_wait_cap: must be a duration such as "90s", "16m", "1h30m" or "7d" (units ms, s, m, h, d)`},
		{"not a map", `["accounts"]`, `invalid plugin spec: must be a map of settings, not a list`},
		{"several", `{"acounts":[],"planner":{"max_page_size":true}}`, "invalid plugin spec: 2 problems:\n  unknown field \"acounts\" (did you mean \"accounts\"?)\n  planner.max_page_size: must be a whole number, not true"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.spec))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error\n  %v\nwant\n  %s", err, tc.want)
			}
			var specErr *Error
			if !errors.As(err, &specErr) {
				t.Fatalf("%T is not a *spec.Error", err)
			}
		})
	}
}

func TestSeveralProblemsAreReportedTogether(t *testing.T) {
	_, err := Parse([]byte(`{"base_url":"x","accounts":[{"user_id":"a"}]}`))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"base_url", "accounts[0]: set either", "accounts[0].user_id"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q missing from %v", want, err)
		}
	}
}

func TestEmbeddedJSONSchemaIsFresh(t *testing.T) {
	want, err := GenerateSchema(".")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) || JSONSchema != string(want) {
		t.Fatal("spec/schema.json is stale: run `go generate ./spec`")
	}
}

func TestJSONSchemaAcceptsGoodSpecsAndRejectsBadOnes(t *testing.T) {
	validator, err := plugin.JSONSchemaValidator(JSONSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		spec string
		ok   bool
	}{
		{`{"accounts":[{"user_id":"1001","access_token":"tok"}]}`, true},
		{`{"base_url":"http://127.0.0.1:8080","accounts":[{"token_file":"/tmp/t.json"}],"planner":{"max_page_size":50,"request_budget":100},"rate_limit_wait_cap":"5m"}`, true},
		{`{"accounts":[]}`, false},
		{`{}`, false},
		{`{"accounts":[{"user_id":"abc","access_token":"t"}]}`, false},
		{`{"accounts":[{"access_token":"t"}],"planner":{"max_page_size":0}}`, false},
		{`{"accounts":[{"access_token":"t"}],"nope":1}`, false},
	} {
		var v any
		if err := json.Unmarshal([]byte(tc.spec), &v); err != nil {
			t.Fatal(err)
		}
		err := validator.Validate(v)
		if (err == nil) != tc.ok {
			t.Errorf("%s: validation error %v, want ok=%v", tc.spec, err, tc.ok)
		}
	}
}

// A section whose keys are all commented out in YAML is null in JSON: it
// means the defaults, as if it were left out.
func TestANullSectionIsItsDefaults(t *testing.T) {
	s, err := Parse([]byte(`{"accounts":[{"access_token":"t"}],"planner":null,"oauth":null,"fields":null,"rate_limit_wait_cap":"0"}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Planner.MaxPageSize != walk.DefaultMaxPageSize || s.OAuth.TokenURL != DefaultTokenURL || len(s.RequestFields().TweetFields) == 0 {
		t.Fatalf("defaults not set: %+v", s)
	}
}

// A value that a sync would refuse, or that would go wrong once it runs,
// is refused by the spec check, naming its field, before any file is
// written or request sent. Credentials in a bad value are not repeated.
func TestValuesThatWouldFailInASyncAreRefusedUpFront(t *testing.T) {
	const secret = "s3cretValue"
	for _, tc := range []struct{ name, spec, want string }{
		{"user info in base_url", `{"base_url":"https://me:` + secret + `@api.x.com","accounts":[{"access_token":"a"}]}`,
			"base_url: must not carry a user name or password (https://me:xxxxx@api.x.com)"},
		{"user info in token_url", `{"oauth":{"token_url":"https://me:` + secret + `@api.x.com/2/oauth2/token"},"accounts":[{"access_token":"a"}]}`,
			"oauth.token_url: must not carry a user name or password"},
		{"space in base_url", `{"base_url":"https://api.x.com/a b","accounts":[{"access_token":"a"}]}`,
			`base_url: must not hold white space or control characters, got "https://api.x.com/a b"`},
		{"space in token_url", `{"oauth":{"token_url":"https://api.x.com/oauth 2"},"accounts":[{"access_token":"a"}]}`,
			"oauth.token_url: must not hold white space"},
		{"control character in an access token", `{"accounts":[{"access_token":"abc\u0001` + secret + `"}]}`,
			"accounts[0].access_token: contains a character that is not printable ASCII (character 4)"},
		{"tab in an access token", `{"accounts":[{"access_token":"` + secret + `\t"}]}`, "accounts[0].access_token: contains whitespace"},
		{"non-ASCII in a client secret", `{"oauth":{"client_secret":"` + secret + `é"},"accounts":[{"access_token":"a"}]}`,
			"oauth.client_secret: contains a character that is not printable ASCII"},
		{"newline in an account's client secret", `{"accounts":[{"token_file":"t.json","client_secret":"` + secret + `\n"}]}`,
			"accounts[0].client_secret: contains whitespace"},
		{"control character in a client id", `{"oauth":{"client_id":"id\u007f"},"accounts":[{"access_token":"a"}]}`,
			"oauth.client_id: contains a character that is not printable ASCII"},
		{"control character in a token file path", `{"accounts":[{"token_file":"t\u0000.json"}]}`, "accounts[0].token_file: contains a control character"},
		{"price that overflows", `{"post_read_usd":1e308,"accounts":[{"access_token":"a"}]}`, "post_read_usd: must be a price in USD between 0 and 1 per resource, got 1e+308"},
		{"wait cap of weeks", `{"rate_limit_wait_cap":"1000h","accounts":[{"access_token":"a"}]}`, "rate_limit_wait_cap: must be at most 24h0m0s, got 1000h0m0s"},
		{"retry budget of days", `{"retry_budget":"48h","accounts":[{"access_token":"a"}]}`, "retry_budget: must be at most 24h0m0s"},
		{"no connect timeout", `{"connect_timeout":"0s","accounts":[{"access_token":"a"}]}`, "connect_timeout: must be at least 1s, got 0s"},
		{"negative header timeout", `{"header_timeout":"-1s","accounts":[{"access_token":"a"}]}`, "header_timeout: must not be negative"},
		{"request timeout of hours", `{"request_timeout":"2h","accounts":[{"access_token":"a"}]}`, "request_timeout: must be at most 1h0m0s"},
		{"field name with a space", `{"fields":{"tweet_fields":["created_at","created at"]},"accounts":[{"access_token":"a"}]}`,
			`fields.tweet_fields[1]: "created at" must be a field name`},
		{"two expansions in one element", `{"fields":{"expansions":["author_id,attachments.media_keys"]},"accounts":[{"access_token":"a"}]}`,
			`fields.expansions[0]: "author_id,attachments.media_keys" must be a field name`},
		{"empty field name", `{"fields":{"user_fields":[""]},"accounts":[{"access_token":"a"}]}`, `fields.user_fields[0]: "" is empty`},
		{"user id with a leading zero", `{"accounts":[{"user_id":"01001","access_token":"a"}]}`, "accounts[0].user_id: must be a decimal X user id of 1 to 19 digits without a leading zero"},
		{"compliance wait of days", `{"compliance":{"bearer_token":"b","wait":"100h"},"accounts":[{"access_token":"a"}]}`, "compliance.wait: must be at most 24h0m0s"},
		{"control character in the bearer token", `{"compliance":{"bearer_token":"b\u0002` + secret + `"},"accounts":[{"access_token":"a"}]}`,
			"compliance.bearer_token: contains a character that is not printable ASCII"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.spec))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want it to contain %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("the error repeats the credential: %v", err)
			}
		})
	}
}

// Every URL that carries a credential (base_url, which the compliance
// jobs use too, and oauth.token_url) is https, but for a loopback host.
func TestURLsThatCarryCredentialsAreHTTPS(t *testing.T) {
	for _, field := range []string{"base_url", "token_url"} {
		spec := func(u string) string {
			if field == "token_url" {
				return `{"oauth":{"token_url":"` + u + `"},"accounts":[{"access_token":"a"}]}`
			}
			return `{"base_url":"` + u + `","accounts":[{"access_token":"a"}]}`
		}
		for _, u := range []string{"http://api.x.com", "http://192.168.1.5:8080", "http://[fe80::1]:8080"} {
			_, err := Parse([]byte(spec(u)))
			if err == nil || !strings.Contains(err.Error(), "must use https, got \""+u+"\": plain http would send the token in clear") {
				t.Errorf("%s %s: %v", field, u, err)
			}
		}
		for _, u := range []string{"https://api.x.com", "http://127.0.0.1:8080", "http://localhost:9", "http://[::1]:80"} {
			if _, err := Parse([]byte(spec(u))); err != nil {
				t.Errorf("%s %s: %v", field, u, err)
			}
		}
	}
}

// max_billed_posts has a default far above any list the API serves; 0 is
// still no cap. The timeouts have defaults.
func TestTheBilledPostCapAndTheTimeoutsHaveDefaults(t *testing.T) {
	s, err := Parse([]byte(`{"accounts":[{"access_token":"a"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := s.WalkSettings().MaxBilledPosts; got != 100_000 {
		t.Errorf("default cap %d", got)
	}
	if got := s.Timeouts(); got.Connect != 10*time.Second || got.Headers != 30*time.Second || got.Request != 2*time.Minute {
		t.Errorf("timeouts %+v", got)
	}
	s, err = Parse([]byte(`{"planner":{"max_billed_posts":0},"connect_timeout":"5s","accounts":[{"access_token":"a"}]}`))
	if err != nil || s.WalkSettings().MaxBilledPosts != 0 || s.Timeouts().Connect != 5*time.Second {
		t.Errorf("0 (no cap): %v %+v", err, s.WalkSettings())
	}
}
