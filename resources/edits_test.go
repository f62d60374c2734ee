package resources

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/plan"
)

// A post a kept bookmark quotes, once X reports it, leaves the page the
// outbox keeps: its JSON, and the author and media no other post of the
// page uses, are gone, and the rows made again from the page have no row
// of it in x_bookmark_referenced_posts.
func TestTheOutboxForgetsAReportedReferencedPost(t *testing.T) {
	page := `{"data":[{"id":"10","text":"a quote","author_id":"1","referenced_tweets":[{"type":"quoted","id":"20"}]}],
		"includes":{"tweets":[{"id":"20","text":"the quoted text","author_id":"2","attachments":{"media_keys":["3_1"]}}],
		"users":[{"id":"1","username":"ann","name":"Ann"},{"id":"2","username":"bo","name":"Bo"}],
		"media":[{"media_key":"3_1","type":"photo","url":"https://pbs.twimg.com/media/q.jpg"}]},"meta":{"result_count":1}}`
	p := sentPage{FirstSeenAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), Positions: []int64{0}, Page: json.RawMessage(page),
		Expansions: []string{"author_id", "referenced_tweets.id", "referenced_tweets.id.author_id", "referenced_tweets.id.attachments.media_keys"}}
	edits := plan.Edits(Holdings(), []plan.Reported{{UserID: "1001", PostID: "20", Action: plan.Redact, Referenced: true}})
	if err := p.edit("1001", plan.NewIndex(edits)); err != nil {
		t.Fatal(err)
	}
	for _, gone := range []string{"the quoted text", `"bo"`, "3_1"} {
		if bytes.Contains(p.Page, []byte(gone)) {
			t.Errorf("the outbox's page still holds %s: %s", gone, p.Page)
		}
	}
	if !bytes.Contains(p.Page, []byte("a quote")) || !bytes.Contains(p.Page, []byte(`"ann"`)) {
		t.Errorf("the bookmark that quotes the post lost its own content: %s", p.Page)
	}
	rows, err := p.rows("1001", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || len(rows[0].refs) != 0 {
		t.Errorf("rows made again: %d, with references %+v; want the bookmark without the reported post", len(rows), rows[0].refs)
	}
}
