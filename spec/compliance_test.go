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
	if c.Every.Duration() != 12*time.Hour || c.Wait.Duration() != 10*time.Minute || c.MaxIDsPerJob != 100_000 || c.OnChange != "redact" {
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
		{"unknown action", `{"bearer_token":"a","on_change":"erase"}`, `compliance.on_change: must be redact, delete or keep, got "erase"`},
		{"unknown action of a reason", `{"bearer_token":"a","on_change_by_reason":{"protected":"hide"}}`, `compliance.on_change_by_reason.protected: must be redact, delete or keep, got "hide"`},
		{"scrub for a reason that is not scrub_geo", `{"bearer_token":"a","on_change_by_reason":{"deleted":"scrub"}}`, `compliance.on_change_by_reason.deleted: must be redact, delete or keep`},
		{"unknown reason", `{"bearer_token":"a","on_change_by_reason":{"gone":"keep"}}`, `compliance.on_change_by_reason: has reason "gone"; the reasons are deleted, suspended`},
		{"redact for scrub_geo", `{"bearer_token":"a","on_change_by_reason":{"scrub_geo":"redact"}}`, `compliance.on_change_by_reason.scrub_geo: must be scrub or keep, got "redact"`},
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

// on_change applies to every reason but scrub_geo, which removes the
// location unless on_change is keep; on_change_by_reason overrides both,
// also for reasons X may add.
func TestComplianceActionPerReason(t *testing.T) {
	for _, tc := range []struct {
		section string
		want    map[string]string
	}{
		{``, map[string]string{"deleted": "redact", "protected": "redact", "withheld": "redact", "": "redact", "scrub_geo": "scrub"}},
		{`,"on_change":"delete"`, map[string]string{"deleted": "delete", "suspended": "delete", "scrub_geo": "scrub"}},
		{`,"on_change":"keep"`, map[string]string{"deleted": "keep", "scrub_geo": "keep"}},
		{`,"on_change":"keep","on_change_by_reason":{"deleted":"delete","scrub_geo":"scrub"}`, map[string]string{"deleted": "delete", "protected": "keep", "scrub_geo": "scrub"}},
	} {
		s, err := Parse([]byte(`{"accounts":[{"access_token":"user"}],"compliance":{"bearer_token":"AAAAapp"` + tc.section + `}}`))
		if err != nil {
			t.Fatalf("%s: %v", tc.section, err)
		}
		for reason, want := range tc.want {
			if got := s.Compliance.Action(reason); got != want {
				t.Errorf("%s: %s -> %s, want %s", tc.section, reason, got, want)
			}
		}
	}
}
