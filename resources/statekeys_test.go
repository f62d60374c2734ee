package resources

import (
	"context"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/walk"
)

// Every state key the plugin writes is known, and a damaged value of each
// is found before a sync relies on it.
func TestEveryStateKeyIsCheckedWhenItIsRead(t *testing.T) {
	mem, err := (&walk.Memory{Held: walk.NewIDList("3", "2", "1"), SyncedAt: time.Unix(1, 0)}).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	archived, err := newPostIDs([]uint64{1, 2}).marshal()
	if err != nil {
		t.Fatal(err)
	}
	checks, err := (&accountChecks{checks: []check{{id: 1, at: 5}}}).marshalChecks()
	if err != nil {
		t.Fatal(err)
	}
	st := memstate.New()
	if err := saveJob(context.Background(), st, "job", &jobRecord{ID: "7", IDs: postIDs{1, 2}}, false); err != nil {
		t.Fatal(err)
	}
	job, _ := st.GetKey(context.Background(), "job")
	media := encodeMediaState(t, &mediaState{records: []mediaRecord{{PostID: "1", MediaKey: "3_1", URL: "https://pbs.twimg.com/media/A.jpg"}}})
	for key, value := range map[string]string{
		"x_media_files/1001":                 media,
		"x_bookmarks/1001":                   mem,
		"x_bookmark_folder_posts/1001/77":    mem,
		"x_bookmarks/1001/capped":            `{"cap":10,"billed":10,"new":8}`,
		"x_bookmark_folders/1001":            `[{"id":"77","name":"Reading"}]`,
		"x_post_compliance/archived/1001":    archived,
		"x_post_compliance/checks/1001":      checks,
		"x_post_compliance/job":              job,
		"x_post_compliance/job/shard-1-of-2": job,
	} {
		if known, err := CheckState(key, value); !known || err != nil {
			t.Errorf("%s: known %v, err %v", key, known, err)
		}
		if known, err := CheckState(key, value[:len(value)/2]); !known || err == nil {
			t.Errorf("%s cut in half: known %v, err %v", key, known, err)
		}
		if known, _ := CheckState(key, ""); !known {
			t.Errorf("%s cleared: not known", key)
		}
	}
	for _, key := range []string{"x_bookmarks", "x_bookmarks/abc", "x_bookmarks/1/2", "x_post_compliance/other/1", "x_post_compliance/job/", "other/1", "x_media_files/1001/capped", "x_media_files/abc"} {
		if IsStateKey(key) {
			t.Errorf("%s is taken for a key the plugin writes", key)
		}
	}
}
