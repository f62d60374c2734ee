package spec

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestComplianceSectionDefaults(t *testing.T) {
	s, err := Parse([]byte(`{"accounts":[{"access_token":"user"}],"compliance":{"bearer_token":"AAAAapp"}}`))
	if err != nil {
		t.Fatal(err)
	}
	c := s.Compliance
	if c.Every.Duration() != 168*time.Hour || c.Wait.Duration() != 10*time.Minute || c.MaxIDsPerJob != 100_000 {
		t.Errorf("defaults %v", c)
	}
	if s, _ := Parse([]byte(`{"accounts":[{"access_token":"user"}]}`)); s.Compliance != nil {
		t.Error("a spec without the section checks compliance")
	}
}

// Every bad compliance section is an error naming its field; a user's
// token given there says which token is needed and where it is.
func TestBadComplianceSectionsNameTheField(t *testing.T) {
	for _, tc := range []struct{ name, section, want string }{
		{"no token", `{}`, "compliance.bearer_token: set bearer_token or bearer_token_file"},
		{"both", `{"bearer_token":"a","bearer_token_file":"f"}`, "not both"},
		{"Bearer prefix", `{"bearer_token":"Bearer a"}`, "compliance.bearer_token: contains whitespace"},
		{"an account's token", `{"bearer_token":"user"}`, "compliance.bearer_token: is accounts[0].access_token, a user's token; compliance jobs need the app's app-only bearer token: in the X developer portal (developer.x.com), open your app's \"Keys and tokens\" page"},
		{"an account's token file", `{"bearer_token_file":"alice.json"}`, "compliance.bearer_token_file: is accounts[1].token_file"},
		{"negative every", `{"bearer_token":"a","every":"-1h"}`, "compliance.every: must not be negative"},
		{"negative wait", `{"bearer_token":"a","wait":"-1s"}`, "compliance.wait: must not be negative"},
		{"job size", `{"bearer_token":"a","max_ids_per_job":-1}`, "compliance.max_ids_per_job: must be at least 1"},
		{"misspelt", `{"bearer_tokn":"a"}`, `unknown field "bearer_tokn"`},
	} {
		_, err := Parse([]byte(`{"accounts":[{"access_token":"user"},{"token_file":"alice.json"}],"compliance":` + tc.section + `}`))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

// bearer_token_file holds the token alone, in printable ASCII; a token file from `login` (a
// user's token, as JSON) is refused with a message saying which token is
// needed and where it is.
func TestBearerTokenFile(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := &Compliance{BearerTokenFile: write("good", "AAAAAAAAAAAAAAAAAAAAAtoken%3Dx\n")}
	if tok, err := good.ReadBearerToken(); err != nil || tok != "AAAAAAAAAAAAAAAAAAAAAtoken%3Dx" {
		t.Errorf("good file: %q %v", tok, err)
	}
	for name, content := range map[string]string{
		"login":   `{"access_token":"u","refresh_token":"r","client_id":"c","user_id":"1"}`,
		"empty":   "\n",
		"words":   "Bearer AAAA",
		"control": "AAAAAAAA\x1b[2JAAAA",
		"delete":  "AAAAAAAA\x7fAAAA",
	} {
		c := &Compliance{BearerTokenFile: write(name, content)}
		_, err := c.ReadBearerToken()
		if err == nil || !strings.Contains(err.Error(), "compliance.bearer_token_file") {
			t.Errorf("%s: %v", name, err)
		}
		if name == "login" && !strings.Contains(err.Error(), "Keys and tokens") {
			t.Errorf("login file: %v", err)
		}
		if (name == "control" || name == "delete") && (err == nil || !strings.Contains(err.Error(), "the token contains a character that is not printable ASCII (character 9)")) {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := (&Compliance{BearerTokenFile: filepath.Join(dir, "missing")}).ReadBearerToken(); err == nil {
		t.Error("a missing file was read")
	}
}

// The bearer token never shows when the section is printed.
func TestComplianceSectionHidesItsToken(t *testing.T) {
	c := Compliance{BearerToken: "AAAAsecret"}
	c.setDefaults()
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, &c, c, &c)} {
		if strings.Contains(s, "AAAAsecret") || !strings.Contains(s, "REDACTED") {
			t.Errorf("printed %q", s)
		}
	}
}
