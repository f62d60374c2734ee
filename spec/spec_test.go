package spec

import (
	"encoding/json"
	"errors"
	"github.com/cq-source-x/cq-source-x/walk"
	"os"
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
	if s.RateLimitWaitCap.Duration() != 16*time.Minute || s.MaxAttempts != 4 || *s.PostReadUSD != 0.005 || s.Concurrency != 100 {
		t.Errorf("defaults: cap %s attempts %d usd %v concurrency %d", s.RateLimitWaitCap.Duration(), s.MaxAttempts, *s.PostReadUSD, s.Concurrency)
	}
	if len(s.Fields.TweetFields) == 0 || len(s.Fields.Expansions) != 0 {
		t.Errorf("fields %+v", s.Fields)
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
		{"bad user id", `{"accounts":[{"user_id":"12ab","access_token":"a"}]}`, `accounts[0].user_id: must be a decimal X user id of 1 to 19 digits, got "12ab"`},
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
		{"duration", `{"rate_limit_wait_cap":"soon","accounts":[{"access_token":"a"}]}`, `invalid plugin spec: rate_limit_wait_cap: must be a duration such as "16m" or "1h30m", not a string`},
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
	if s.Planner.MaxPageSize != walk.DefaultMaxPageSize || s.OAuth.TokenURL != DefaultTokenURL || len(s.Fields.TweetFields) == 0 {
		t.Fatalf("defaults not set: %+v", s)
	}
}
