package spec

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/plugin"
)

// Every duration of the spec may be given in days: "7d", "1d12h".
func TestDurationsAcceptDays(t *testing.T) {
	s := parseOK(t, `{"accounts":[{"access_token":"a"}],"rate_limit_wait_cap":"0.5d","retry_budget":"1d","connect_timeout":"0.0005d",
		"header_timeout":"0.01d","request_timeout":"0.02d","compliance":{"bearer_token":"b","every":"1d12h","wait":"0.25d"}}`)
	for _, tc := range []struct {
		field string
		got   time.Duration
		want  time.Duration
	}{
		{"rate_limit_wait_cap", s.RateLimitWaitCap.Duration(), 12 * time.Hour},
		{"retry_budget", s.RetryBudget.Duration(), 24 * time.Hour},
		{"connect_timeout", s.ConnectTimeout.Duration(), 43200 * time.Millisecond},
		{"header_timeout", s.HeaderTimeout.Duration(), 864 * time.Second},
		{"request_timeout", s.RequestTimeout.Duration(), 1728 * time.Second},
		{"compliance.every", s.Compliance.Every.Duration(), 36 * time.Hour},
		{"compliance.wait", s.Compliance.Wait.Duration(), 6 * time.Hour},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: %s, want %s", tc.field, tc.got, tc.want)
		}
	}
	if week := parseOK(t, `{"accounts":[{"access_token":"a"}],"compliance":{"bearer_token":"b","every":"7d"}}`); week.Compliance.Every.Duration() != 7*24*time.Hour {
		t.Errorf("every: 7d is %s", week.Compliance.Every.Duration())
	}
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	again := parseOK(t, string(b))
	if again.Compliance.Every.Duration() != 36*time.Hour {
		t.Errorf("read back: every %s", again.Compliance.Every.Duration())
	}
}

// The JSON schema `cloudquery validate-config` checks accepts a duration
// exactly when a sync does.
func TestTheJSONSchemaAcceptsTheDurationsTheSpecDoes(t *testing.T) {
	validator, err := plugin.JSONSchemaValidator(JSONSchema)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"7d", "1d12h", "0", "0s", "1.5h", ".5d", "16m", "1h30m", "90s", "250ms", "1h0m0s", "168h0m0s",
		"7 days", "7D", "d", "1", "1x", "", "7days", "1h 30m", "P7D", "1.d", "+5m", "1e3s"} {
		text := fmt.Sprintf(`{"accounts":[{"access_token":"a"}],"compliance":{"bearer_token":"b","every":%q}}`, d)
		var v any
		if err := json.Unmarshal([]byte(text), &v); err != nil {
			t.Fatal(err)
		}
		schemaOK := validator.Validate(v) == nil
		_, err := Parse([]byte(text))
		if specOK := err == nil; schemaOK != specOK {
			t.Errorf("every: %q: the schema accepts it: %v, the spec check: %v (%v)", d, schemaOK, specOK, err)
		}
	}
}

// A duration that is not one says what one looks like, naming the field.
func TestABadDurationSaysWhatOneLooksLike(t *testing.T) {
	_, err := Parse([]byte(`{"accounts":[{"access_token":"a"}],"compliance":{"bearer_token":"b","every":"7 days"}}`))
	want := `invalid plugin spec: compliance.every: must be a duration such as "90s", "16m", "1h30m" or "7d" (units ms, s, m, h, d)`
	if err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}
