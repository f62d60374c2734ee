package resources

import (
	"reflect"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/internal/outbox"
	"github.com/cq-source-x/cq-source-x/media"
)

func encodeMediaState(t *testing.T, st *mediaState) string {
	t.Helper()
	files, err := packLines(st.records)
	if err != nil {
		t.Fatal(err)
	}
	var batch outbox.Batch
	if err := batch.Add(mediaFileRow{PostID: "1", Status: media.Stored}); err != nil {
		t.Fatal(err)
	}
	entry, err := batch.Entry("sync-1", time.Unix(100, 0))
	if err != nil {
		t.Fatal(err)
	}
	box, err := (&outbox.Box{}).With(entry).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return `{"version":1,"files":"` + files + `","outbox":` + box + `}`
}

func TestTheMediaStateReadsBackWhatItHolds(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	want := []mediaRecord{
		{PostID: "10", MediaKey: "3_1", MediaType: "photo", File: media.FilePhoto, URL: "https://pbs.twimg.com/media/A.jpg", Status: media.Stored, FileKey: "ab/ab.jpg", SeenAt: at},
		{PostID: "10", MediaPostID: "9", MediaKey: "7_2", MediaType: "video", File: media.FileVideo, URL: "https://video.twimg.com/v.mp4", Status: media.TooLarge, Limit: 512, SeenAt: at},
		{PostID: "11", MediaKey: "3_3", File: media.FilePhoto, URL: "https://pbs.twimg.com/media/B.jpg", SeenAt: at},
	}
	value := encodeMediaState(t, &mediaState{records: want})
	st, err := decodeMediaState("x_media_files/1001", value)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(st.records, want) || len(st.outbox.Entries) != 1 {
		t.Fatalf("read back %+v, %d outbox entries", st.records, len(st.outbox.Entries))
	}
	for _, bad := range []string{`{"version":2}`, `{"version":1,"files":"bm90IGd6aXA="}`, `not json`} {
		if _, err := decodeMediaState("x_media_files/1001", bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

func TestAFileIsDueUntilItsStatusIsFinalOldestFirst(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 3, d, 0, 0, 0, 0, time.UTC) }
	st := &mediaState{}
	st.add([]mediaRecord{
		{PostID: "1", MediaKey: "k", URL: "new", SeenAt: day(3)},
		{PostID: "2", MediaKey: "k", URL: "transient", Status: media.Transient, SeenAt: day(2)},
		{PostID: "3", MediaKey: "k", URL: "budget", Status: media.OverBudget, SeenAt: day(1)},
		{PostID: "4", MediaKey: "k", URL: "small limit", Status: media.TooLarge, Limit: 100, SeenAt: day(1)},
		{PostID: "5", MediaKey: "k", URL: "same limit", Status: media.TooLarge, Limit: 200, SeenAt: day(1)},
	})
	for _, s := range []media.Status{media.Stored, media.Gone, media.Forbidden, media.Failed} {
		st.add([]mediaRecord{{PostID: "6", MediaKey: "k", URL: string(s), Status: s}})
	}
	if n := st.add([]mediaRecord{{PostID: "1", MediaKey: "k", URL: "new", SeenAt: day(9)}}); n != 0 {
		t.Fatalf("a file recorded twice")
	}
	var got []string
	for _, i := range st.due(200) {
		got = append(got, st.records[i].URL)
	}
	if want := []string{"budget", "small limit", "transient", "new"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("due %q, want %q", got, want)
	}
}

// The media state's key is registered with its decoder: repair keeps it,
// and a damaged value is found before a sync relies on it.
func TestTheMediaStateIsCheckedWhenItIsRead(t *testing.T) {
	key := account.MediaFilesKey("1001")
	value := encodeMediaState(t, &mediaState{records: []mediaRecord{{PostID: "1", MediaKey: "3_1", URL: "https://pbs.twimg.com/media/A.jpg"}}})
	if known, err := account.CheckKey(key, value); !known || err != nil {
		t.Errorf("%s: known %v, err %v", key, known, err)
	}
	if known, err := account.CheckKey(key, value[:len(value)/2]); !known || err == nil {
		t.Errorf("%s cut in half: known %v, err %v", key, known, err)
	}
}

// The compliance actions drop a post's files from the media state, with
// the rows the outbox keeps of them, and learn which stored files they
// named; the other posts' records stay.
func TestTheFilesOfPostsAreDroppedFromTheMediaState(t *testing.T) {
	key := account.MediaFilesKey("1001")
	value := encodeMediaState(t, &mediaState{records: []mediaRecord{
		{PostID: "10", MediaKey: "3_1", URL: "a", Status: media.Stored, FileKey: "ab/ab.jpg"},
		{PostID: "10", MediaKey: "3_2", URL: "b", Status: media.Gone},
		{PostID: "11", MediaKey: "3_1", URL: "a", Status: media.Stored, FileKey: "ab/ab.jpg"},
		{PostID: "12", MediaKey: "3_3", URL: "c", Status: media.Stored, FileKey: "cd/cd.png"},
	}})
	after, stored, err := DropMediaFilesOfPosts(key, value, func(id, _ string) bool { return id == "10" || id == "12" })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stored, []string{"ab/ab.jpg", "cd/cd.png"}) {
		t.Fatalf("stored files of the dropped posts: %q", stored)
	}
	uses, err := MediaFileUses(key, after)
	if err != nil {
		t.Fatal(err)
	}
	if len(uses) != 1 || uses[0].PostID != "11" || uses[0].FileKey != "ab/ab.jpg" {
		t.Fatalf("left: %+v", uses)
	}
	if st, _ := decodeMediaState(key, after); len(st.outbox.Entries) != 1 {
		t.Fatalf("the outbox lost the rows of posts kept")
	}
	// The outbox's rows of a dropped post go: no sync sends them again.
	after, _, err = DropMediaFilesOfPosts(key, value, func(id, _ string) bool { return id == "1" })
	if st, _ := decodeMediaState(key, after); err != nil || len(st.outbox.Entries) != 0 {
		t.Fatalf("the outbox kept the rows of a dropped post (%v)", err)
	}
}

// A repair marks the files it found lost: one whose last row was lost is
// tried again as never tried (its next row is written whatever becomes of
// it); a stored file lost from the store is fetched again, keeping its
// status and key (a row only if it changes). Both are due; the others are
// left as they were.
func TestARepairsMarksMakeTheFilesDue(t *testing.T) {
	key := account.MediaFilesKey("1001")
	value := encodeMediaState(t, &mediaState{records: []mediaRecord{
		{PostID: "10", MediaKey: "3_1", URL: "row lost", Status: media.Stored, FileKey: "ab/ab.jpg"},
		{PostID: "11", MediaKey: "3_2", URL: "file lost", Status: media.Stored, FileKey: "cd/cd.jpg"},
		{PostID: "12", MediaKey: "3_3", URL: "whole", Status: media.Stored, FileKey: "ef/ef.jpg"},
	}})
	after, err := MarkMediaFiles(key, value,
		func(u MediaFileUse) bool { return u.URL == "row lost" },
		func(u MediaFileUse) bool { return u.URL != "whole" })
	if err != nil {
		t.Fatal(err)
	}
	uses, err := MediaFileUses(key, after)
	if err != nil {
		t.Fatal(err)
	}
	want := []MediaFileUse{
		{PostID: "10", MediaKey: "3_1", URL: "row lost"},
		{PostID: "11", MediaKey: "3_2", URL: "file lost", Status: media.Stored, FileKey: "cd/cd.jpg", Refetch: true},
		{PostID: "12", MediaKey: "3_3", URL: "whole", Status: media.Stored, FileKey: "ef/ef.jpg"},
	}
	if !reflect.DeepEqual(uses, want) {
		t.Fatalf("marked:\n%+v\nwant\n%+v", uses, want)
	}
	st, _ := decodeMediaState(key, after)
	var due []string
	for _, i := range st.due(1 << 20) {
		due = append(due, st.records[i].URL)
	}
	if !reflect.DeepEqual(due, []string{"row lost", "file lost"}) {
		t.Fatalf("due: %q", due)
	}
}
