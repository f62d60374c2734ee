package spec

import (
	"strings"
	"testing"
)

// A URL given with no value — "", null, or an environment variable that is
// set but empty — is refused, naming the field: left out, it is X's own
// address, and the sync would read, and be billed by, the real API.
func TestAnEmptyURLIsRefusedNotTakenForX(t *testing.T) {
	for _, tc := range []struct{ spec, field string }{
		{`{"base_url":"","accounts":[{"user_id":"1","access_token":"t"}]}`, "base_url: is empty"},
		{`{"base_url":null,"accounts":[{"user_id":"1","access_token":"t"}]}`, "base_url: is empty"},
		{`{"oauth":{"token_url":""},"accounts":[{"user_id":"1","access_token":"t"}]}`, "oauth.token_url: is empty"},
	} {
		_, err := Parse([]byte(tc.spec))
		if err == nil || !strings.Contains(err.Error(), tc.field) || !strings.Contains(err.Error(), "${VAR}") {
			t.Errorf("%s: %v, want %q", tc.spec, err, tc.field)
		}
	}
	if s, err := Parse([]byte(`{"accounts":[{"user_id":"1","access_token":"t"}]}`)); err != nil || s.BaseURL != DefaultBaseURL {
		t.Errorf("left out: %v %v", s, err)
	}
}

// Two accounts with one token, or one token file, are one user twice: the
// spec is refused, naming the second, before any request.
func TestTwoAccountsWithOneTokenAreRefused(t *testing.T) {
	for _, tc := range []struct{ spec, field string }{
		{`{"accounts":[{"access_token":"t1"},{"access_token":"t1"}]}`, "accounts[1].access_token: is accounts[0].access_token too"},
		{`{"accounts":[{"token_file":"a.json"},{"token_file":"./a.json"}]}`, "accounts[1].token_file: is accounts[0].token_file too"},
	} {
		_, err := Parse([]byte(tc.spec))
		if err == nil || !strings.Contains(err.Error(), tc.field) || strings.Contains(err.Error(), "t1") {
			t.Errorf("%s: %v, want %q (and no token repeated)", tc.spec, err, tc.field)
		}
	}
}
