package spec

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParse: Parse never panics; a spec it accepts is valid, and reads
// back the same once encoded (defaults and all).
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"accounts":[{"user_id":"1001","access_token":"t"}]}`,
		`{"base_url":"http://127.0.0.1:8080","accounts":[{"token_file":"a.json"}],"oauth":{"client_id":"c","client_secret":"s","token_url":"https://x.example/token"}}`,
		`{"accounts":[{"access_token":"t"}],"planner":{"max_page_size":100,"confirmations":3,"max_billed_posts":5},"rate_limit_wait_cap":"1m","post_read_usd":0.001,"fields":{"expansions":["author_id"],"tweet_fields":["lang"]}}`,
		`{"accounts":[{"access_token":"t"}],"fields":{"tweet_fields":[],"expansions":[]}}`,
		`{"accounts":[]}`, `null`, `{"accounts":[{"user_id":"007"}]}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse(data)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Parse accepted a spec Validate refuses: %v", err)
		}
		again, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(again)
		if err != nil {
			t.Fatalf("an accepted spec, encoded, is refused: %v\n%s", err, again)
		}
		if !reflect.DeepEqual(back, s) {
			t.Fatalf("an accepted spec reads back differently:\n%+v\n%+v", s, back)
		}
	})
}
