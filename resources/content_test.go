package resources

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/client"
)

var allContent = client.Fields{Expansions: []string{"author_id", "attachments.media_keys", "referenced_tweets.id",
	"referenced_tweets.id.author_id", "referenced_tweets.id.attachments.media_keys", "article.cover_media", "article.media_entities"}}

func page(posts []client.Post, ex client.Expanded, errs ...client.PartialError) *client.PostPage {
	return &client.PostPage{Data: posts, Expanded: ex, Errors: errs}
}

// rowsOf are the rows of a page read with fields.
func rowsOf(p *client.PostPage, fields client.Fields) ([]*bookmark, *pageContent) {
	pc := newPageContent(p, fields.Expansions, func(param, value string) []string { return []string{"content." + param + "=" + value} })
	return bookmarkRows("1", pc, time.Now(), nil, 0), pc
}

// A post whose asked-for author, media or referenced post the page lacks,
// with no partial error saying why, is archived with what X returned: the
// row of the missing object says it is missing and which setting asked for
// it, and the page counts it.
func TestAnIncludeXLeftOutIsRecordedMissing(t *testing.T) {
	withAll := client.Expanded{
		Users: map[string]*client.User{"7": {ID: "7"}},
		Media: map[string]*client.Media{"3_1": {MediaKey: "3_1"}},
		Posts: map[string]*client.Post{"11": {ID: "11", AuthorID: "7"}},
	}
	for _, tc := range []struct {
		post client.Post
		want string
		part func(b *bookmark) *client.PartialError
	}{
		{client.Post{ID: "10", AuthorID: "8"}, "Missing: X returned no author 8, which content.expansions=author_id asks for (expansions=author_id), and no error saying why",
			func(b *bookmark) *client.PartialError { return b.author.err }},
		{client.Post{ID: "10", AuthorID: "7", MediaKeys: []string{"3_2"}}, "Missing: X returned no media 3_2, which content.expansions=attachments.media_keys asks for",
			func(b *bookmark) *client.PartialError { return b.media[0].err }},
		{client.Post{ID: "10", AuthorID: "7", References: []client.Reference{{Type: "quoted", ID: "12"}}}, "Missing: X returned no referenced post 12",
			func(b *bookmark) *client.PartialError { return b.refs[0].err }},
		{client.Post{ID: "10", AuthorID: "7", References: []client.Reference{{Type: "quoted", ID: "11"}}, MediaKeys: []string{"3_1"}}, "",
			func(b *bookmark) *client.PartialError { return nil }},
	} {
		rows, pc := rowsOf(page([]client.Post{tc.post}, withAll), allContent)
		if len(rows) != 1 || rows[0].post.ID != "10" {
			t.Fatalf("post %+v: rows %v", tc.post, rows)
		}
		got := orEmpty(tc.part(rows[0])).String()
		if tc.want == "" && (got != "" || len(pc.missing) != 0) || tc.want != "" && (!strings.HasPrefix(got, tc.want) || len(pc.missing) != 1) {
			t.Errorf("post %+v: error %q, missing %v; want %q", tc.post, got, pc.missing, tc.want)
		}
	}
	// Without the expansion, nothing is expected.
	if rows, pc := rowsOf(page([]client.Post{{ID: "10", AuthorID: "8", MediaKeys: []string{"3_2"}}}, client.Expanded{}), client.Fields{}); rows[0].author != nil || rows[0].media != nil || len(pc.missing) != 0 {
		t.Errorf("nothing asked: %+v, missing %v", rows[0], pc.missing)
	}
}

// A referenced post X did not return (deleted, protected or suspended
// author) is a partial error: recorded in its row, not a failure; so is an
// author X gives an error for.
func TestPartialErrorsOfContentAreRecordedNotFailures(t *testing.T) {
	post := client.Post{ID: "10", AuthorID: "8", References: []client.Reference{{Type: "quoted", ID: "11"}, {Type: "replied_to", ID: "12"}}}
	errs := []client.PartialError{
		{Title: "Not Found Error", Detail: "Could not find tweet with referenced_tweets.id: [11].", ResourceType: "tweet", Parameter: "referenced_tweets.id", ResourceID: "11"},
		{Title: "Authorization Error", Detail: "Sorry, you are not authorized to see the Tweet with referenced_tweets.id: [12].", ResourceType: "tweet", Parameter: "referenced_tweets.id", ResourceID: "12"},
		{Title: "Forbidden", Detail: "User has been suspended: [8].", ResourceType: "user", Parameter: "author_id", Value: "8"},
	}
	rows, pc := rowsOf(page([]client.Post{post}, client.Expanded{}, errs...), allContent)
	b := rows[0]
	if len(pc.missing) != 0 {
		t.Errorf("X's errors counted as missing: %v", pc.missing)
	}
	if len(b.refs) != 2 || b.refs[0].post != nil || !strings.HasPrefix(orEmpty(b.refs[0].err).String(), "Not Found Error: Could not find tweet") ||
		!strings.HasPrefix(orEmpty(b.refs[1].err).String(), "Authorization Error") {
		t.Errorf("references %+v", b.refs)
	}
	if b.author == nil || b.author.user != nil || !strings.Contains(orEmpty(b.author.err).String(), "suspended") {
		t.Errorf("author %+v", b.author)
	}
}

// The media table's download_url is a photo's url or the best mp4.
func TestDownloadURLIsThePhotoOrTheBestMP4(t *testing.T) {
	br := func(n int64) *int64 { return &n }
	video := &client.Media{Type: "video", Variants: []client.Variant{
		{BitRate: br(832000), ContentType: "video/mp4", URL: "low.mp4"},
		{ContentType: "application/x-mpegURL", URL: "list.m3u8"},
		{BitRate: br(2176000), ContentType: "video/mp4", URL: "high.mp4"},
	}}
	if got := downloadURL(video); got != "high.mp4" {
		t.Errorf("video: %q", got)
	}
	if got := downloadURL(&client.Media{Type: "photo", URL: "p.jpg"}); got != "p.jpg" {
		t.Errorf("photo: %q", got)
	}
}

// A reply that quotes the post it answers references that post twice, with
// two types: it has a row of each, under keys of their own, each with the
// referenced post's author and media; a reference the API repeats is one
// row.
func TestAPostReferencingOnePostTwiceHasARowPerType(t *testing.T) {
	post := client.Post{ID: "10", AuthorID: "8", References: []client.Reference{{Type: "replied_to", ID: "11"}, {Type: "quoted", ID: "11"}, {Type: "quoted", ID: "11"}}}
	ex := client.Expanded{
		Users: map[string]*client.User{"7": {ID: "7", Username: "ada"}, "8": {ID: "8", Username: "bo"}},
		Media: map[string]*client.Media{"3_1": {MediaKey: "3_1", Raw: []byte(`{"media_key":"3_1"}`)}},
		Posts: map[string]*client.Post{"11": {ID: "11", AuthorID: "7", MediaKeys: []string{"3_1"}}},
	}
	bookmarks, _ := rowsOf(page([]client.Post{post}, ex), allContent)
	parent := schema.NewResourceData(Bookmarks(), nil, bookmarks[0])
	table := ReferencedPosts()
	res := make(chan any, 1)
	if err := fetchReferencedPosts(context.Background(), nil, parent, res); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	var types []string
	for _, item := range (<-res).([]*referencedPost) {
		r := schema.NewResourceData(table, parent, item)
		for _, c := range table.Columns {
			if err := c.Resolver(context.Background(), nil, r, c); err != nil {
				t.Fatal(err)
			}
		}
		var key []string
		for _, pk := range table.PrimaryKeys() {
			key = append(key, r.Get(pk).String())
		}
		keys[strings.Join(key, "/")] = true
		types = append(types, r.Get("type").String())
		if r.Get("author_username").String() != "ada" || !strings.Contains(r.Get("media").String(), "3_1") {
			t.Errorf("row %v: author %s, media %s", key, r.Get("author_username"), r.Get("media"))
		}
	}
	if !slices.Equal(types, []string{"replied_to", "quoted"}) || len(keys) != 2 {
		t.Errorf("types %v, keys %v: want a row of each type, under two keys", types, keys)
	}
}

// A bookmark is resolved with the child tables it has rows of only: the
// scheduler would start a resolver of each child table for every row, and
// most bookmarks have no media, author or reference to give them.
func TestABookmarkIsResolvedWithTheChildTablesItHasRowsOf(t *testing.T) {
	table := Bookmarks()
	if table.PostResourceResolver == nil {
		t.Fatal("x_bookmarks resolves every child table of every row")
	}
	for _, tc := range []struct {
		b    *bookmark
		want []string
	}{
		{&bookmark{post: &client.Post{ID: "1"}}, nil},
		{&bookmark{post: &client.Post{ID: "2"}, media: []mediaItem{{key: "3_1"}}}, []string{BookmarkMediaTable}},
		{&bookmark{post: &client.Post{ID: "3"}, author: &expandedUser{id: "7"}, refs: []reference{{id: "4"}}}, []string{BookmarkAuthorsTable, ReferencedPostsTable}},
	} {
		r := schema.NewResourceData(table, nil, tc.b)
		if err := table.PostResourceResolver(context.Background(), nil, r); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, child := range r.Table.Relations {
			got = append(got, child.Name)
		}
		if !slices.Equal(got, tc.want) || r.Table.Name != BookmarksTable || len(r.Table.Columns) != len(table.Columns) {
			t.Errorf("post %s: child tables %v, want %v", tc.b.post.ID, got, tc.want)
		}
	}
	if len(table.Relations) != 3 {
		t.Errorf("the table itself lost child tables: %d left", len(table.Relations))
	}
}
