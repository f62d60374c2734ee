package archived

import (
	"encoding/json"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/ids"
	"github.com/cq-source-x/cq-source-x/media"
	"github.com/cq-source-x/cq-source-x/outbox"
)

func readBack(t *testing.T, r *Record) *Record {
	t.Helper()
	value, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Unmarshal(value, "record")
	if err != nil {
		t.Fatal(err)
	}
	return back
}

// A record keeps its bookmarks with their dates and authors, and the posts
// they reference with theirs, through the state's text; a post recorded
// again keeps what it was first recorded with, and gets the author it had
// none of.
func TestARecordKeepsItsPostsDatesAndAuthors(t *testing.T) {
	seen := time.Date(2026, 11, 2, 6, 0, 0, 123456000, time.UTC) // the columns keep microseconds
	after := seen.Add(-24 * time.Hour)
	created := time.Date(2025, 3, 1, 12, 0, 1, 0, time.UTC)
	id := "1896000000000000000"
	r := &Record{}
	r.AddBookmarks([]Post{{ID: id, AuthorID: "5", Dates: &Dates{CreatedAt: &created, FirstSeenAt: seen, BookmarkedAfter: &after, FoundPosition: 3}},
		{ID: "9", Dates: &Dates{FirstSeenAt: seen}}}, true)
	r.AddReferenced([]Post{{ID: "20", AuthorID: "7"}, {ID: "9", AuthorID: "5"}})
	r.AddBookmarks([]Post{{ID: "9", AuthorID: "6", Dates: &Dates{FirstSeenAt: after}}}, true)
	back := readBack(t, r)
	if got := back.Bookmarks().Strings(); !slices.Equal(got, []string{"9", id}) {
		t.Fatalf("bookmarks %v", got)
	}
	d := back.DatesOf(1896000000000000000)
	if d == nil || !d.CreatedAt.Equal(created) || !d.FirstSeenAt.Equal(seen) || !d.BookmarkedAfter.Equal(after) || d.FoundPosition != 3 {
		t.Fatalf("dates %+v", d)
	}
	if d := back.DatesOf(9); d == nil || !d.FirstSeenAt.Equal(seen) || d.CreatedAt != nil || d.BookmarkedAfter != nil {
		t.Fatalf("dates of a post recorded twice %+v", d)
	}
	want := map[uint64]ids.Sorted{5: {9, 1896000000000000000}, 6: {9}, 7: {20}}
	if got := back.Authors(); !reflect.DeepEqual(got, want) || !back.AuthorsKept() {
		t.Fatalf("authors %v, want %v", got, want)
	}
	if !slices.Equal(back.Referenced().Strings(), []string{"9", "20"}) {
		t.Fatalf("referenced %v", back.Referenced())
	}
}

// A destination that keeps the rows needs no dates: the record keeps none.
func TestARecordWithoutDatesKeepsNone(t *testing.T) {
	r := &Record{}
	r.AddBookmarks([]Post{{ID: "9", Dates: &Dates{FirstSeenAt: time.Unix(1, 0)}}}, false)
	if back := readBack(t, r); back.DatesOf(9) != nil || back.bookmarks.dates != nil {
		t.Fatalf("dates kept: %+v", back.DatesOf(9))
	}
}

// A damaged or newer value is refused, never read as fewer posts.
func TestADamagedRecordIsRefused(t *testing.T) {
	r := &Record{}
	r.AddBookmarks([]Post{{ID: "9", AuthorID: "5", Dates: &Dates{FirstSeenAt: time.Unix(1, 0)}}}, true)
	value, err := r.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{value[:len(value)/2], strings.Replace(value, `"version":1`, `"version":2`, 1), "not json"} {
		if _, err := Unmarshal(bad, "record"); err == nil {
			t.Errorf("%.40s: read", bad)
		}
	}
}

// The record made from the state main kept at 51419f4 (two CloudQuery
// syncs of the content examples and 45 bookmarks, one post redacted since)
// holds its bookmarks with their dates, the posts they reference, every
// post's author, its media files and the rows of them to send again.
func TestARecordIsMadeFromWhatAnEarlierVersionKept(t *testing.T) {
	b, err := os.ReadFile("../plugin/testdata/state-v2.json")
	if err != nil {
		t.Fatal(err)
	}
	var keys map[string]string
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	r, err := Migrate(Legacy{Archived: keys["x_post_compliance/archived/1001"], Referenced: keys["x_post_compliance/referenced/1001"],
		Authors: keys["x_post_compliance/authors/1001"], MediaFiles: keys["x_media_files/1001"]}, "state-v2")
	if err != nil {
		t.Fatal(err)
	}
	back := readBack(t, r)
	if n := len(back.Bookmarks()); n != 49 {
		t.Errorf("%d bookmarks, want 49", n)
	}
	if len(back.Referenced()) == 0 || len(back.Files) == 0 || len(back.Outbox.Entries) == 0 || back.Marked || !back.AuthorsKept() {
		t.Errorf("referenced %d, files %d, outbox entries %d, marked %v, authors kept %v",
			len(back.Referenced()), len(back.Files), len(back.Outbox.Entries), back.Marked, back.AuthorsKept())
	}
	posts := 0
	for _, ps := range back.Authors() {
		posts += len(ps)
	}
	if posts != len(back.Bookmarks())+len(back.Referenced()) {
		t.Errorf("%d posts have an author, of %d", posts, len(back.Bookmarks())+len(back.Referenced()))
	}
	for _, id := range back.Bookmarks() {
		if back.DatesOf(id) == nil {
			t.Errorf("post %d has no dates", id)
		}
	}
	older, err := Migrate(Legacy{Bookmarks: ids.Sorted{3, 1}}, "state-v0")
	if err != nil || len(older.Bookmarks()) != 2 || older.AuthorsKept() || older.DatesOf(1) != nil {
		t.Errorf("the posts of a state that kept ids alone: %v, %v", older.Bookmarks(), err)
	}
}

// The repair of an archive makes the record's bookmarks its files' posts:
// those it held keep their dates, the others have none.
func TestSetBookmarksKeepsWhatItHeld(t *testing.T) {
	r := &Record{}
	r.AddBookmarks([]Post{{ID: "1", AuthorID: "5", Dates: &Dates{FirstSeenAt: time.Unix(1, 0)}}, {ID: "2"}}, true)
	if !r.SetBookmarks(ids.Sorted{1, 3}) || r.SetBookmarks(ids.Sorted{1, 3}) {
		t.Fatal("SetBookmarks does not say whether it changed the record")
	}
	if back := readBack(t, r); !slices.Equal(back.Bookmarks(), ids.Sorted{1, 3}) || back.DatesOf(1) == nil || back.DatesOf(3) != nil || len(back.Authors()[5]) != 1 {
		t.Fatalf("bookmarks %v", back.Bookmarks())
	}
}

// The media files read back as recorded, with the rows kept to send again.
func TestTheFilesReadBackAsRecorded(t *testing.T) {
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	want := []File{
		{PostID: "10", MediaKey: "3_1", MediaType: "photo", File: media.FilePhoto, URL: "https://pbs.twimg.com/media/A.jpg", Status: media.Stored, FileKey: "ab/ab.jpg", SeenAt: at},
		{PostID: "10", MediaPostID: "9", MediaKey: "7_2", MediaType: "video", File: media.FileVideo, URL: "https://video.twimg.com/v.mp4", Status: media.TooLarge, Limit: 512, SeenAt: at},
		{PostID: "11", MediaKey: "3_3", File: media.FilePhoto, URL: "https://pbs.twimg.com/media/B.jpg", SeenAt: at},
	}
	r := &Record{Outbox: withRow(t, `{"post_id":"1","status":"stored"}`)}
	r.AddFiles(want)
	if back := readBack(t, r); !reflect.DeepEqual(back.Files, want) || len(back.Outbox.Entries) != 1 {
		t.Fatalf("read back %+v, %d outbox entries", back.Files, len(back.Outbox.Entries))
	}
}

func withRow(t *testing.T, rows ...string) *outbox.Box {
	t.Helper()
	var batch outbox.Batch
	for _, row := range rows {
		if err := batch.Add(json.RawMessage(row)); err != nil {
			t.Fatal(err)
		}
	}
	return (&outbox.Box{}).With(batch.Entry("sync-1", time.Unix(100, 0)))
}

// A file is tried until its status is final, oldest first; one too large
// is tried again under a larger limit; a file is recorded once.
func TestAFileIsDueUntilItsStatusIsFinalOldestFirst(t *testing.T) {
	day := func(d int) time.Time { return time.Date(2026, 3, d, 0, 0, 0, 0, time.UTC) }
	r := &Record{}
	r.AddFiles([]File{
		{PostID: "1", MediaKey: "k", URL: "new", SeenAt: day(3)},
		{PostID: "2", MediaKey: "k", URL: "transient", Status: media.Transient, SeenAt: day(2)},
		{PostID: "3", MediaKey: "k", URL: "budget", Status: media.OverBudget, SeenAt: day(1)},
		{PostID: "4", MediaKey: "k", URL: "small limit", Status: media.TooLarge, Limit: 100, SeenAt: day(1)},
		{PostID: "5", MediaKey: "k", URL: "same limit", Status: media.TooLarge, Limit: 200, SeenAt: day(1)},
	})
	for _, s := range []media.Status{media.Stored, media.Gone, media.Forbidden, media.Failed} {
		r.AddFiles([]File{{PostID: "6", MediaKey: "k", URL: string(s), Status: s}})
	}
	if n := r.AddFiles([]File{{PostID: "1", MediaKey: "k", URL: "new", SeenAt: day(9)}}); n != 0 {
		t.Fatalf("a file recorded twice")
	}
	var got []string
	for _, i := range r.DueFiles(200) {
		got = append(got, r.Files[i].URL)
	}
	if want := []string{"budget", "small limit", "transient", "new"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("due %q, want %q", got, want)
	}
}

// The files of posts X reported leave the record, with the rows kept of
// them, and the stored files they named are told; the other posts' files
// stay.
func TestTheFilesOfPostsAreDropped(t *testing.T) {
	r := &Record{Outbox: withRow(t, `{"post_id":"10","status":"stored"}`, `{"post_id":"11","status":"stored"}`)}
	r.AddFiles([]File{
		{PostID: "10", MediaKey: "3_1", URL: "a", Status: media.Stored, FileKey: "ab/ab.jpg"},
		{PostID: "10", MediaKey: "3_2", URL: "b", Status: media.Gone},
		{PostID: "11", MediaKey: "3_1", URL: "a", Status: media.Stored, FileKey: "ab/ab.jpg"},
		{PostID: "12", MediaKey: "3_3", URL: "c", Status: media.Stored, FileKey: "cd/cd.png"},
	})
	stored, err := r.DropFiles(func(id, _ string) bool { return id == "10" || id == "12" })
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(stored, []string{"ab/ab.jpg", "cd/cd.png"}) || !slices.Equal(r.StoredFiles(), []string{"ab/ab.jpg"}) {
		t.Fatalf("stored files of the dropped posts %q, left %q", stored, r.StoredFiles())
	}
	rows := 0
	for _, e := range r.Outbox.Entries {
		_ = e.Each(func([]byte) error { rows++; return nil })
	}
	if rows != 1 {
		t.Fatalf("the outbox holds %d rows, want the kept post's", rows)
	}
}

// A repair's marks make the files due: a file whose row was lost is tried
// again as one never tried, a stored file lost is fetched again.
func TestARepairsMarksMakeTheFilesDue(t *testing.T) {
	r := &Record{}
	r.AddFiles([]File{
		{PostID: "10", MediaKey: "3_1", URL: "row lost", Status: media.Stored, FileKey: "ab/ab.jpg"},
		{PostID: "11", MediaKey: "3_2", URL: "file lost", Status: media.Stored, FileKey: "cd/cd.jpg"},
		{PostID: "12", MediaKey: "3_3", URL: "whole", Status: media.Stored, FileKey: "ef/ef.jpg"},
	})
	if !r.MarkLost(func(f *File) bool { return f.URL == "row lost" }, func(f *File) bool { return f.URL != "whole" }) {
		t.Fatal("nothing marked")
	}
	back := readBack(t, r)
	want := []File{
		{PostID: "10", MediaKey: "3_1", URL: "row lost"},
		{PostID: "11", MediaKey: "3_2", URL: "file lost", Status: media.Stored, FileKey: "cd/cd.jpg", Refetch: true},
		{PostID: "12", MediaKey: "3_3", URL: "whole", Status: media.Stored, FileKey: "ef/ef.jpg"},
	}
	if !reflect.DeepEqual(back.Files, want) {
		t.Fatalf("marked:\n%+v\nwant\n%+v", back.Files, want)
	}
	var due []string
	for _, i := range back.DueFiles(1 << 20) {
		due = append(due, back.Files[i].URL)
	}
	if !reflect.DeepEqual(due, []string{"row lost", "file lost"}) {
		t.Fatalf("due: %q", due)
	}
}
