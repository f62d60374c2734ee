package plan

import (
	"slices"
	"testing"
)

// The tables as the plugin declares them.
var tables = []Holding{
	{Table: "x_bookmarks", Of: "post_id", Keeps: []string{"user_id", "post_id", "first_seen_at"}, Geo: "post"},
	{Table: "x_bookmark_authors", Of: "post_id"},
	{Table: "x_bookmark_referenced_posts", Of: "post_id", Holds: "referenced_post_id", Geo: "post"},
	{Table: "x_media_files", Of: "post_id", Holds: "media_post_id"},
}

func edits(p Reported) []string {
	var out []string
	for _, e := range Edits(tables, []Reported{p}) {
		out = append(out, e.Table+" "+e.Column+" "+[...]string{"", "remove", "blank", "scrub"}[e.Op])
	}
	return out
}

func check(t *testing.T, p Reported, want ...string) {
	t.Helper()
	if got := edits(p); !slices.Equal(got, want) {
		t.Errorf("%v %s: edits %q, want %q", p.Action, p.PostID, got, want)
	}
}

// A redacted bookmark keeps its row, blanked, and loses its rows of every
// other table that holds it.
func TestARedactedBookmarkKeepsItsRowBlankAndLosesTheRest(t *testing.T) {
	check(t, Reported{UserID: "1", PostID: "7", Action: Redact, Bookmarked: true},
		"x_bookmarks post_id blank", "x_bookmark_authors post_id remove", "x_bookmark_referenced_posts post_id remove", "x_media_files post_id remove")
}

// A deleted bookmark loses its row too.
func TestADeletedBookmarkLosesItsRow(t *testing.T) {
	check(t, Reported{UserID: "1", PostID: "7", Action: Delete, Bookmarked: true},
		"x_bookmarks post_id remove", "x_bookmark_authors post_id remove", "x_bookmark_referenced_posts post_id remove", "x_media_files post_id remove")
}

// A post bookmarks reference loses the rows that hold its content, and the
// bookmarks that reference it keep theirs.
func TestAReferencedPostLosesTheRowsThatHoldIt(t *testing.T) {
	check(t, Reported{UserID: "1", PostID: "9", Action: Redact, Referenced: true},
		"x_bookmark_referenced_posts referenced_post_id remove", "x_media_files media_post_id remove")
}

// A scrub edits the JSON of the post itself: a bookmark's row, or the row
// that holds a referenced post; nothing else.
func TestAScrubEditsTheJSONOfThePostOnly(t *testing.T) {
	check(t, Reported{UserID: "1", PostID: "7", Action: ScrubGeo, Bookmarked: true}, "x_bookmarks post_id scrub")
	check(t, Reported{UserID: "1", PostID: "9", Action: ScrubGeo, Referenced: true}, "x_bookmark_referenced_posts referenced_post_id scrub")
}

// A post kept is not edited.
func TestAKeptPostIsNotEdited(t *testing.T) {
	check(t, Reported{UserID: "1", PostID: "7", Action: Keep, Bookmarked: true, Referenced: true})
}

// A row two edits match is removed when either removes it; a blanked row
// keeps its key, its kept columns and the SDK's.
func TestARemovalWinsAndABlankKeepsTheKeptColumns(t *testing.T) {
	ix := NewIndex(Edits(tables, []Reported{
		{UserID: "1", PostID: "7", Action: ScrubGeo, Bookmarked: true},
		{UserID: "1", PostID: "9", Action: Redact, Referenced: true},
		{UserID: "1", PostID: "8", Action: Redact, Bookmarked: true},
	}))
	row := map[string]string{"post_id": "7", "referenced_post_id": "9"}
	if e, ok := ix.Find("x_bookmark_referenced_posts", "1", func(c string) string { return row[c] }); !ok || e.Op != Remove {
		t.Errorf("the row of 7 quoting 9: %+v, %v; want removed", e, ok)
	}
	if _, ok := ix.Find("x_bookmark_referenced_posts", "2", func(c string) string { return row[c] }); ok {
		t.Error("another account's row matched")
	}
	e, ok := ix.Find("x_bookmarks", "1", func(c string) string { return map[string]string{"post_id": "8"}[c] })
	if !ok || e.Op != Blank || !e.Kept("first_seen_at") || !e.Kept("_cq_id") || e.Kept("text") {
		t.Errorf("the row of 8: %+v, %v", e, ok)
	}
}
