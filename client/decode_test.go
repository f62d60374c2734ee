package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// decodePage is decodePostPage without the count of posts.
func decodePage(body []byte) (*PostPage, error) {
	p, _, err := decodePostPage(body)
	return p, err
}

func TestDecodePostPage_RealShapedBody(t *testing.T) {
	body := realisticPage(3, "7140dibdnow9c7btw4")
	p, err := decodePage(body)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Data) != 3 || p.Meta.ResultCount != 3 || p.Meta.NextToken != "7140dibdnow9c7btw4" {
		t.Fatalf("got %d posts, meta %+v", len(p.Data), p.Meta)
	}
	first := p.Data[0]
	wantID := fmt.Sprint(1880000000000000000 + 3*7919)
	if first.ID != wantID || first.AuthorID != "1000000" || first.ConversationID != wantID || first.Lang != "en" {
		t.Errorf("post fields: %+v", first)
	}
	if first.PossiblySensitive == nil || !*first.PossiblySensitive {
		t.Errorf("possibly_sensitive: %v", first.PossiblySensitive)
	}
	if want := time.Date(2026, 1, 1, 0, 30, 0, 0, time.UTC); first.CreatedAt == nil || !first.CreatedAt.Equal(want) {
		t.Errorf("created_at = %v, want %v", first.CreatedAt, want)
	}
	if !reflect.DeepEqual(first.MediaKeys, []string{"3_" + wantID}) || string(first.Attachments) != `{"media_keys":["3_`+wantID+`"]}` {
		t.Errorf("attachments %s, media keys %v", first.Attachments, first.MediaKeys)
	}
	if !bytes.HasPrefix(first.PublicMetrics, []byte(`{"retweet_count":0,`)) || !bytes.HasPrefix(first.Entities, []byte(`{"urls":[`)) ||
		string(first.ReferencedTweets) != `[{"type":"quoted","id":"`+fmt.Sprint(1880000000000000000+3*7919-5)+`"}]` || first.NoteTweet != nil {
		t.Errorf("raw fields: %s | %s | %s | %s", first.PublicMetrics, first.Entities, first.ReferencedTweets, first.NoteTweet)
	}
	if !reflect.DeepEqual(first.EditHistoryTweetIDs, []string{wantID}) {
		t.Errorf("edit_history_tweet_ids = %v", first.EditHistoryTweetIDs)
	}
	wantText := "@golang Go 1.26 ships \"encoding/json\" tweaks &amp; faster maps \u2014 thread \U0001f9f5\n\n#golang is 0% fun: https://t.co/AbCdEf0"
	if first.Text != wantText {
		t.Errorf("text = %q\nwant   %q", first.Text, wantText)
	}
	// Raw is the object exactly as returned: a verbatim slice of the body.
	if !bytes.Contains(body, first.Raw) || !bytes.HasPrefix(first.Raw, []byte("{")) || !bytes.HasSuffix(first.Raw, []byte("}")) {
		t.Errorf("Raw is not a verbatim object from the body: %.80s…", first.Raw)
	}
	var m map[string]any
	if err := json.Unmarshal(first.Raw, &m); err != nil || m["public_metrics"] == nil || m["entities"] == nil {
		t.Errorf("Raw lost fields: %v %v", err, m)
	}
	// Appending to one Raw must not overwrite the next post.
	_ = append(p.Data[0].Raw, "XXXX"...)
	if !json.Valid(p.Data[1].Raw) {
		t.Error("appending to Raw clobbered the body")
	}
	if len(p.Includes.Users) != 17 || len(p.Includes.Media) != 3 {
		t.Errorf("includes: %d users, %d media", len(p.Includes.Users), len(p.Includes.Media))
	}
	if u := p.Expanded.Users["1000000"]; u == nil || !bytes.Contains(u.Raw, []byte(`"username":"gopher0"`)) {
		t.Errorf("Expanded.Users: %+v", u)
	}
	if m := p.Expanded.Media["3_"+wantID]; m == nil {
		t.Errorf("Expanded.Media missing 3_%s", wantID)
	}
	if len(p.Errors) != 1 || p.Errors[0].Title != "Not Found Error" || p.Errors[0].ResourceType != "tweet" ||
		p.Errors[0].Parameter != "referenced_tweets.id" || p.Errors[0].ResourceID != "1879999999999999999" || len(p.Errors[0].Raw) == 0 {
		t.Errorf("partial errors: %+v", p.Errors)
	}
}

func TestDecodePostPage_CreatedAtWithOrWithoutMillis(t *testing.T) {
	body := `{"data":[{"id":"1","text":"a","created_at":"2024-01-15T10:30:00.000Z"},{"id":"2","text":"b","created_at":"2024-01-15T10:30:00Z"},{"id":"3","text":"c","created_at":"2024-01-15T12:30:00+02:00"},{"id":"4","text":"d","created_at":"yesterday"}],"meta":{"result_count":4}}`
	p, err := decodePage([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := time.Date(2024, 1, 15, 10, 30, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		if p.Data[i].CreatedAt == nil || !p.Data[i].CreatedAt.Equal(want) {
			t.Errorf("post %d: created_at = %v", i, p.Data[i].CreatedAt)
		}
	}
	if p.Data[3].CreatedAt != nil {
		t.Errorf("an unparseable created_at should leave CreatedAt nil (Raw keeps it), got %v", p.Data[3].CreatedAt)
	}
}

func TestDecodePostPage_NoDataIsAnEmptyPage(t *testing.T) {
	for _, body := range []string{`{"meta":{"result_count":0}}`, `{"data":null,"meta":{"result_count":0}}`, `{"data":[],"meta":{"result_count":0}}`} {
		p, err := decodePage([]byte(body))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		if len(p.Data) != 0 || p.Meta.ResultCount != 0 || p.Meta.NextToken != "" {
			t.Errorf("%s: %+v", body, p)
		}
	}
}

func TestDecodePostPage_RejectsWrongShapes(t *testing.T) {
	for _, body := range []string{
		``, `   `, `[]`, `"x"`, `null`,
		`{"data":[{"id":"1"`,          // cut short
		`{"data":{"id":"1"}}`,         // data not an array
		`{"data":[1,2]}`,              // elements not objects
		`{"data":[{"id":1}]}`,         // id not a string
		`{"data":[{"text":"no id"}]}`, // id missing
		`{"data":[{"id":"1","possibly_sensitive":"yes"}]}`,
		`{"data":[{"id":"1","edit_history_tweet_ids":"1"}]}`,
		`{"meta":{"result_count":"many"}}`,
		`{"includes":[]}`,
		`{"data":[]} trailing`,
		`{}`, // no meta: no next_token, read as the last page
		`{"data":[{"id":"1"}]}`,
		`{"data":[{"id":"1"}],"meta":{"next_token":"A"}}`, // no result_count
		`{"errors":[{"title":"Not Found Error"}]}`,
	} {
		if p, err := decodePage([]byte(body)); err == nil {
			t.Errorf("%q decoded without error: %+v", body, p)
		}
	}
}

// A body is not JSON wherever it stops being JSON: one that first has a
// value of the wrong shape and further on is cut short or broken is a
// syntax error (asked for again), not a shape error.
func TestABodyThatIsNotJSONAfterAWrongShapeIsASyntaxError(t *testing.T) {
	for _, body := range []string{
		`{"data":[{"id":1}],"meta":{"result_count":1`,
		`{"data":{"id":"1"},"meta":[1,}`,
		`{"meta":{"result_count":"one"}} trailing`,
		`00`,
	} {
		if _, err := decodePage([]byte(body)); !isSyntaxError(err) {
			t.Errorf("%s: %v, want a syntax error", body, err)
		}
	}
}

// A page of the wrong shape is refused saying where, in the terms of
// JSON: what the body holds there and what belongs, not the decoder's
// Go types.
func TestAWrongShapeIsToldInTheTermsOfJSON(t *testing.T) {
	for body, want := range map[string]string{
		`{"data":[{"id":1}],"meta":{"result_count":1}}`:        "a number at /data/0/id, where a string belongs",
		`{"data":{"id":"1"},"meta":{"result_count":1}}`:        "an object at /data, where an array belongs",
		`{"meta":{"result_count":"1"}}`:                        "a string at /meta/result_count, where an integer belongs",
		`[{"data":[]}]`:                                        "an array at the top level, where an object belongs",
		`{"includes":{"media":[7]},"meta":{"result_count":0}}`: "a number at /includes/media/0, where an object belongs",
	} {
		_, err := decodePage([]byte(body))
		if err == nil || isSyntaxError(err) || err.Error() != want {
			t.Errorf("%s: %v, want the shape error %q", body, err, want)
		}
	}
}

// differentialBodies are pages with the awkward corners of JSON: escapes,
// nulls, white space, duplicate and unknown keys, nested values.
var differentialBodies = []string{
	`{"data":[{"id":"1","text":"plain"}],"meta":{"result_count":1}}`,
	` { "data" : [ { "id" : "1" , "text" : "sp\u00e9cial \"quoted\" \\ back\/slash \ud83d\ude00 \t tab" , "lang" : null } ] , "meta" : { "result_count" : 1 , "next_token" : "ABC" } } `,
	`{"meta":{"result_count":2,"previous_token":"0123"},"data":[{"id":"2","text":"","author_id":"9","in_reply_to_user_id":"8","conversation_id":"2","possibly_sensitive":false,"edit_history_tweet_ids":["2","1"]},{"id":"3","possibly_sensitive":null,"edit_history_tweet_ids":[]}]}`,
	`{"data":[{"id":"1","id":"2","text":"dup"}],"meta":{"result_count":1}}`,
	`{"data":[{"id":"1","entities":{"urls":[{"url":"]}\"{["}],"x":[[],{}]},"text":"after nested"}],"meta":{"result_count":1}}`,
	`{"data":[{"id":"1","created_at":"2024-01-15T10:30:00.123Z","public_metrics":{"like_count":1e3,"x":-0.5,"y":true,"z":null}}],"includes":{"users":[{"id":"9","name":"n"}],"media":[],"other":[1]},"errors":[{"title":"t","detail":"d","value":"v"}],"unknown":{"a":[1,2,{"b":"c"}]},"meta":{"result_count":1}}`,
	"{\"data\":[{\"id\":\"1\",\"text\":\"raw utf-8 \xe2\x80\x94 and emoji \xf0\x9f\x98\x80\"}],\"meta\":{\"result_count\":1}}",
	`{"data":[{"id":"1","text":"esc \u0000 \u001f \u2028"}],"meta":{"result_count":1}}`,
	`{"data":[{"\u0069d":"7","text":"escaped key"}],"meta":{"result_count":1}}`,
	`{"data":[{"id":"1","attachments":{"poll_ids":["5"],"media_keys":["3_1","7_2"]},"note_tweet":{"text":"long","entities":{}},"public_metrics":null,"entities":{"urls":[]},"referenced_tweets":[{"type":"quoted","id":"2"}]},{"id":"2","attachments": null},{"id":"3","attachments" : { "media_keys" : [ ] } }],"meta":{"result_count":1}}`,
}

// The awkward corners of JSON decode, and every post keeps its object verbatim.
func TestDecodePostPage_AwkwardJSON(t *testing.T) {
	bodies := append([]string{string(realisticPage(100, "NEXT")), string(realisticPage(1, ""))}, differentialBodies...)
	for i, body := range bodies {
		p, err := decodePage([]byte(body))
		if err != nil {
			t.Fatalf("body %d: %v", i, err)
		}
		checkPosts(t, []byte(body), p)
	}
	p, _ := decodePage([]byte(differentialBodies[1]))
	if want := "sp\u00e9cial \"quoted\" \\ back/slash \U0001f600 \t tab"; p.Data[0].Text != want {
		t.Errorf("text %q, want %q", p.Data[0].Text, want)
	}
}

// checkPosts checks that each post of a page is an object of the body,
// verbatim, that decodes to the same post again.
func checkPosts(t *testing.T, body []byte, p *PostPage) {
	t.Helper()
	for i, post := range p.Data {
		if !bytes.Contains(body, post.Raw) || !json.Valid(post.Raw) || post.ID == "" {
			t.Fatalf("post %d: Raw %.80q is not an object of the body", i, post.Raw)
		}
		var again Post
		if err := decodePost(post.Raw, &again); err != nil || !reflect.DeepEqual(again, post) {
			t.Fatalf("post %d decodes again as %+v, %v; was %+v", i, again, err, post)
		}
	}
}

// FuzzDecodePostPage checks that the decoder never panics, tells a body that
// is not JSON from one of the wrong shape as json.Valid does, and keeps
// every post of a page it accepts verbatim (once invalid UTF-8 is replaced).
// A page it accepts holds valid UTF-8 only, X ids only, and no post twice.
// (It was the oracle when encoding/json replaced a hand-written scanner:
// docs/design/decoder.md.)
func FuzzDecodePostPage(f *testing.F) {
	for _, b := range differentialBodies {
		f.Add([]byte(b))
	}
	for _, b := range hostileBodies {
		f.Add([]byte(b))
	}
	f.Add(realisticPage(2, "X"))
	f.Fuzz(func(t *testing.T, body []byte) {
		p, err := decodePage(body)
		if isSyntaxError(err) == json.Valid(body) {
			t.Fatalf("decoder error %v, but json.Valid = %v", err, json.Valid(body))
		}
		if err == nil {
			checkPosts(t, validText(body), p)
			checkAccepted(t, p)
		}
	})
}

// checkAccepted checks what a page the decoder accepts guarantees.
func checkAccepted(t *testing.T, p *PostPage) {
	t.Helper()
	seen := map[string]bool{}
	for i, post := range p.Data {
		if !ValidID(post.ID) || seen[post.ID] {
			t.Fatalf("post %d: id %q accepted (seen before: %v)", i, post.ID, seen[post.ID])
		}
		seen[post.ID] = true
		for _, id := range append([]string{post.AuthorID, post.ConversationID, post.InReplyToUserID}, post.EditHistoryTweetIDs...) {
			if id != "" && !ValidID(id) {
				t.Fatalf("post %d: id %q accepted", i, id)
			}
		}
		if !utf8.Valid(post.Raw) || !utf8.ValidString(post.Text) || !bytes.Equal(loneSurrogates(post.Raw), post.Raw) {
			t.Fatalf("post %d is not valid Unicode: %q", i, post.Raw)
		}
	}
	for _, objs := range [][]json.RawMessage{p.Includes.Users, p.Includes.Tweets, p.Includes.Media, p.Includes.Polls, p.Includes.Places} {
		for _, raw := range objs {
			if !utf8.Valid(raw) {
				t.Fatalf("an expanded object is not valid UTF-8: %q", raw)
			}
		}
	}
	for _, objs := range [][]json.RawMessage{p.Includes.Users, p.Includes.Tweets} {
		for _, raw := range objs {
			if id := topLevelString(raw, "id"); !ValidID(id) {
				t.Fatalf("an expanded object's id %q accepted", id)
			}
		}
	}
}

// hostileBodies are pages a broken or hostile server sent (issue 15):
// each is refused, or accepted only with its strings made valid UTF-8.
var hostileBodies = []string{
	`{"data":[{"id":"1","text":"a"},{"id":"2","text":"b"},{"id":"1","text":"a again"}],"meta":{"result_count":3}}`,
	`{"data":[{"id":"abc","text":"a"}],"meta":{"result_count":1}}`,
	`{"data":[{"id":"-1","text":"a"}],"meta":{"result_count":1}}`,
	`{"data":[{"id":"../../etc/passwd","text":"a"}],"meta":{"result_count":1}}`,
	`{"data":[{"id":"` + strings.Repeat("9", 200) + `","text":"a"}],"meta":{"result_count":1}}`,
	`{"data":[{"id":"007","text":"a"}],"meta":{"result_count":1}}`,
	`{"data":[{"id":"1","author_id":"../x","text":"a"}],"meta":{"result_count":1}}`,
	`{"data":[{"id":"1","text":"a"}],"includes":{"users":[{"id":"1 OR 1=1","name":"n"}]},"meta":{"result_count":1}}`,
	"{\"data\":[{\"id\":\"1\",\"text\":\"bad \xff\xfe utf-8\",\"entities\":{\"x\":\"\xc3\"}}],\"includes\":{\"users\":[{\"id\":\"9\",\"name\":\"\xed\xa0\x80\"}]},\"meta\":{\"result_count\":1}}",
	`{"data":[{"id":"1","text":"lone \ud800 and \uDC00, paired \ud83d\ude00, high then high \ud83d\ud83d\ude00, not an escape \\ud800"}],"meta":{"result_count":1}}`,
}

// A page that holds a post twice is broken (a list that shifts repeats a
// post across two pages, never within one): taken for a shift, it made
// the walk keep a state that misses posts, which later syncs never read.
func TestAPageThatRepeatsAPostIsRefused(t *testing.T) {
	_, err := decodePage([]byte(hostileBodies[0]))
	if err == nil || !strings.Contains(err.Error(), `data[2].id 1 repeats data[0]`) {
		t.Fatalf("error %v", err)
	}
	for _, body := range []string{
		`{"data":[{"id":"5"},{"id":"5"}]}`,
		`{"data":[{"id":"5","name":"a"},{"id":"5","name":"b"}]}`,
	} {
		if _, err := decodeFolderPostsPage([]byte(body)); err == nil || !strings.Contains(err.Error(), "repeats data[0]") {
			t.Errorf("folder posts %s: %v", body, err)
		}
		if _, err := decodeFolderPage([]byte(body)); err == nil || !strings.Contains(err.Error(), "repeats data[0]") {
			t.Errorf("folders %s: %v", body, err)
		}
	}
}

// Post ids are checked as user and folder ids are: 1 to 19 decimal digits,
// no leading zero. So are the ids a post carries, the ids of the users and
// posts a page expands, and those of folder pages.
func TestIDsInAPageAreChecked(t *testing.T) {
	for i, want := range map[int]string{
		1: `data[0]: id "abc" is not an X id`,
		2: `data[0]: id "-1" is not an X id`,
		3: `data[0]: id "../../etc/passwd" is not an X id`,
		4: `data[0]: id (200 characters, not shown) is not an X id`,
		5: `data[0]: id "007" is not an X id`,
		6: `data[0]: author_id "../x" is not an X id`,
		7: `includes.users[0]: id "1 OR 1=1" is not an X id`,
	} {
		if _, err := decodePage([]byte(hostileBodies[i])); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", hostileBodies[i], err, want)
		}
	}
	for _, id := range []string{"0", "01", "abc", "12345678901234567890", "1.5", "1e5", " 1", "+1"} {
		folderPosts := `{"data":[{"id":"` + id + `"}]}`
		folders := `{"data":[{"id":"` + id + `","name":"n"}]}`
		if _, err := decodeFolderPostsPage([]byte(folderPosts)); err == nil || !strings.Contains(err.Error(), "is not an X id") {
			t.Errorf("folder posts %s: %v", folderPosts, err)
		}
		if _, err := decodeFolderPage([]byte(folders)); err == nil || !strings.Contains(err.Error(), "is not an X id") {
			t.Errorf("folders %s: %v", folders, err)
		}
		if _, err := decodeUser([]byte(`{"data":{"id":"` + id + `","name":"n","username":"u"}}`)); err == nil {
			t.Errorf("users/me %s accepted", id)
		}
	}
	for _, id := range []string{"1", "9", "1234567890123456789", "1880000000000000000"} {
		if !ValidID(id) {
			t.Errorf("%s refused", id)
		}
	}
}

// Invalid UTF-8 in a post becomes the replacement character in every copy
// of it the page keeps, as in its decoded text: the "post" column and the
// other raw columns were written with the bytes as sent, and DuckDB then
// refused to read the table.
func TestInvalidUTF8BecomesTheReplacementCharacter(t *testing.T) {
	p, err := decodePage([]byte(hostileBodies[8]))
	if err != nil {
		t.Fatal(err)
	}
	post := p.Data[0]
	if post.Text != "bad \uFFFD\uFFFD utf-8" {
		t.Errorf("text %q", post.Text)
	}
	var raw struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(post.Raw, &raw); err != nil || raw.Text != post.Text || !utf8.Valid(post.Raw) {
		t.Errorf("raw post %q says %q (%v), text %q", post.Raw, raw.Text, err, post.Text)
	}
	if string(post.Entities) != "{\"x\":\"\uFFFD\"}" || string(p.Includes.Users[0]) != "{\"id\":\"9\",\"name\":\"\uFFFD\uFFFD\uFFFD\"}" {
		t.Errorf("entities %q, includes %q", post.Entities, p.Includes.Users[0])
	}
	valid := []byte(`{"data":[{"id":"1","text":"ok \u00e9 é \ud83d\ude00 \\ud800"}],"meta":{"result_count":1}}`)
	if got := validText(valid); &got[0] != &valid[0] {
		t.Error("a valid body was copied")
	}
}

// The small operations' bodies and the compliance results are kept as
// valid Unicode too: a folder name or a reason in bytes that are not UTF-8
// is stored with the replacement character, not refused.
func TestInvalidUTF8InFoldersAndComplianceResultsBecomesTheReplacementCharacter(t *testing.T) {
	fp, err := decodeFolderPage([]byte("{\"data\":[{\"id\":\"7\",\"name\":\"bad \xff\"}],\"meta\":{\"result_count\":1}}"))
	if err != nil || len(fp.Data) != 1 || fp.Data[0].Name != "bad \uFFFD" {
		t.Errorf("folder page: %+v, %v", fp, err)
	}
	var rs []ComplianceResult
	err = readComplianceResults(strings.NewReader("{\"id\":\"7\",\"action\":\"delete\",\"reason\":\"del\xffeted\"}\n"),
		func(r ComplianceResult) { rs = append(rs, r) })
	if err != nil || len(rs) != 1 || rs[0].Reason != "del\uFFFDeted" {
		t.Errorf("compliance results: %+v, %v", rs, err)
	}
}

// So does an escaped half of a surrogate pair without its other half:
// encoding/json decodes it as U+FFFD, and DuckDB's JSON functions refused
// the raw post ("no low surrogate in string").
func TestALoneSurrogateBecomesTheReplacementCharacter(t *testing.T) {
	p, err := decodePage([]byte(hostileBodies[9]))
	if err != nil {
		t.Fatal(err)
	}
	post := p.Data[0]
	want := `"lone \ufffd and \ufffd, paired \ud83d\ude00, high then high \ufffd\ud83d\ude00, not an escape \\ud800"`
	if !bytes.Contains(post.Raw, []byte(want)) {
		t.Errorf("raw %s, want it to hold %s", post.Raw, want)
	}
	var raw struct {
		Text string `json:"text"`
	}
	if err := json.Unmarshal(post.Raw, &raw); err != nil || raw.Text != post.Text {
		t.Errorf("raw says %q, text %q (%v)", raw.Text, post.Text, err)
	}
}

func TestDecodeFolderAndUserBodies(t *testing.T) {
	fp, err := decodeFolderPage([]byte(`{"data":[{"id":"1146654567674912769","name":"Reading list"},{"id":"1146654567674912770","name":"Go"}],"meta":{"result_count":2,"next_token":"1B"}}`))
	if err != nil || len(fp.Data) != 2 || fp.Data[0].Name != "Reading list" || fp.Meta.NextToken != "1B" {
		t.Errorf("folders: %+v %v", fp, err)
	}
	pp, err := decodeFolderPostsPage([]byte(`{"data":[{"id":"1880000000000000001"},{"id":"1880000000000000002"}],"meta":{"result_count":2}}`))
	if err != nil || len(pp.Data) != 2 || pp.Data[1].ID != "1880000000000000002" {
		t.Errorf("folder posts: %+v %v", pp, err)
	}
	u, err := decodeUser([]byte(`{"data":{"id":"2244994945","name":"X Developers","username":"XDevelopers"}}`))
	if err != nil || u.ID != "2244994945" || u.Name != "X Developers" || u.Username != "XDevelopers" {
		t.Errorf("user: %+v %v", u, err)
	}
	if _, err := decodeUser([]byte(`{"errors":[{"title":"x"}]}`)); err == nil {
		t.Error("a users/me body without data decoded")
	}
	for body, want := range map[string]bool{`{"data":{"bookmarked":true}}`: true, `{"data":{"bookmarked":false}}`: false} {
		if got, err := decodeBookmarked([]byte(body)); err != nil || got != want {
			t.Errorf("%s: %v %v", body, got, err)
		}
	}
	if _, err := decodeBookmarked([]byte(`{"data":{}}`)); err == nil {
		t.Error("a body without data.bookmarked decoded")
	}
}

// BenchmarkDecodePostPage decodes a realistic 90-post page (the walks'
// page size; about 130 KB, with includes and a partial error).
func BenchmarkDecodePostPage(b *testing.B) {
	body := realisticPage(90, "7140dibdnow9c7btw4")
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := decodePage(body); err != nil {
			b.Fatal(err)
		}
	}
}

// The folder payloads are not shown in the document, and X's own schema
// leaves their meta free-form: a folder page without meta.result_count
// (or without meta) is taken as it comes, unlike a bookmarks page.
func TestFolderPagesNeedNoResultCount(t *testing.T) {
	for _, body := range []string{`{"data":[{"id":"1"}]}`, `{"data":[{"id":"1"}],"meta":{}}`} {
		if p, err := decodeFolderPostsPage([]byte(body)); err != nil || len(p.Data) != 1 {
			t.Errorf("folder posts %s: %v", body, err)
		}
		if p, err := decodeFolderPage([]byte(`{"data":[{"id":"7","name":"n"}]}`)); err != nil || len(p.Data) != 1 {
			t.Errorf("folders: %v", err)
		}
	}
}

// The content of a bookmark is decoded: a long post's note_tweet text, an X
// Article's title, body and media keys, the referenced posts, and the
// expanded users, media (with variants) and posts, indexed.
func TestDecodePostPage_Content(t *testing.T) {
	body := `{"data":[{"id":"10","text":"long…","author_id":"7","note_tweet":{"text":"the whole long text","entities":{}},
		"referenced_tweets":[{"type":"quoted","id":"11"},{"type":"replied_to","id":"12"}],"attachments":{"media_keys":["7_1"]},
		"article":{"title":"On archives","plain_text":"Body of the article.","cover_media":"3_9","media_entities":["3_9","3_8",{"media_key":"3_7"}]}}],
		"includes":{"users":[{"id":"7","name":"A","username":"a","created_at":"2010-01-01T00:00:00.000Z","protected":false,"public_metrics":{"followers_count":5}}],
		"media":[{"media_key":"7_1","type":"video","duration_ms":1500,"width":640,"height":480,"preview_image_url":"https://p/1.jpg",
			"variants":[{"bit_rate":2176000,"content_type":"video/mp4","url":"https://v/1.mp4"},{"content_type":"application/x-mpegURL","url":"https://v/1.m3u8"}]}],
		"posts":[{"id":"11","text":"quoted","author_id":"8"}]},"meta":{"result_count":1}}`
	p, err := decodePage([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	post := p.Data[0]
	if post.NoteText != "the whole long text" || post.ArticleTitle != "On archives" || post.ArticleText != "Body of the article." {
		t.Errorf("note %q, article %q %q", post.NoteText, post.ArticleTitle, post.ArticleText)
	}
	if post.ArticleCover != "3_9" || !reflect.DeepEqual(post.ArticleMediaKeys, []string{"3_9", "3_8", "3_7"}) {
		t.Errorf("article cover %q, media keys %v", post.ArticleCover, post.ArticleMediaKeys)
	}
	if !reflect.DeepEqual(post.References, []Reference{{"quoted", "11"}, {"replied_to", "12"}}) {
		t.Errorf("references %v", post.References)
	}
	u := p.Expanded.Users["7"]
	if u == nil || u.Username != "a" || u.CreatedAt == nil || u.Protected == nil || *u.Protected || string(u.PublicMetrics) != `{"followers_count":5}` || !json.Valid(u.Raw) {
		t.Errorf("user %+v", u)
	}
	m := p.Expanded.Media["7_1"]
	if m == nil || m.Type != "video" || *m.DurationMS != 1500 || *m.Width != 640 || len(m.Variants) != 2 || *m.Variants[0].BitRate != 2176000 || m.Variants[1].BitRate != nil {
		t.Errorf("media %+v", m)
	}
	if q := p.Expanded.Posts["11"]; q == nil || q.Text != "quoted" || q.AuthorID != "8" || !json.Valid(q.Raw) {
		t.Errorf("includes.posts (a later name of includes.tweets) %+v", q)
	}
}

// An expanded object without its id, or of the wrong shape, refuses the
// page as a data post would be: it was asked for and cannot be stored.
func TestDecodePostPage_RefusesExpandedObjectsOfTheWrongShape(t *testing.T) {
	for _, includes := range []string{
		`{"users":[{"name":"no id"}]}`,
		`{"users":["7"]}`,
		`{"media":[{"type":"photo"}]}`,
		`{"media":[{"media_key":"3_1","width":"wide"}]}`,
		`{"tweets":[{"text":"no id"}]}`,
	} {
		body := `{"data":[{"id":"10"}],"includes":` + includes + `,"meta":{"result_count":1}}`
		_, res, err := decodePostPage([]byte(body))
		if err == nil || isSyntaxError(err) {
			t.Errorf("%s: err %v, want a shape error", includes, err)
		}
		if len(res.Posts) < 1 {
			t.Errorf("%s: a refused page's posts were not counted: %+v", includes, res)
		}
	}
}

// decodePost decodes one post object on its own, as a page's are.
func decodePost(raw json.RawMessage, p *Post) error {
	var w withRaw[postFields]
	if err := unmarshalObject(raw, &w, bodyOptions(raw)); err != nil {
		return err
	}
	return makePost(&w, p)
}
