package resources

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/internal/plural"
)

// reference is a post a bookmarked post quotes, replies to or reposts, with
// its author and media when asked for, or X's partial error.
type reference struct {
	typ    string
	id     string
	post   *client.Post
	author *expandedUser
	media  []mediaItem
	err    *client.PartialError
}

// expandedUser is an author as a page expanded it, or X's partial error.
type expandedUser struct {
	id   string
	user *client.User
	err  *client.PartialError
}

// authorOf is u's profile, empty when X did not return it (or u is nil).
func authorOf(u *expandedUser) *client.User { return orEmpty(orEmpty(u).user) }

// orEmpty is p, or an empty T for nil: the columns of an object X did not
// return are null.
func orEmpty[T any](p *T) *T {
	if p == nil {
		return new(T)
	}
	return p
}

// mediaItem is one media object of a post, its role in it, or X's partial error.
type mediaItem struct {
	key   string
	role  string // "attachment", "article_cover" or "article_media"
	media *client.Media
	err   *client.PartialError
}

// pageContent resolves the expanded objects of one page's posts, as its request asked.
type pageContent struct {
	expansions []string
	page       *client.PostPage
	errors     map[string]*client.PartialError    // by resource kind and id
	askedBy    func(param, value string) []string // the settings that ask for an expansion (nil: none)
	missing    []string                           // the expanded objects the page left out with no error saying why
}

func newPageContent(p *client.PostPage, expansions []string, askedBy func(param, value string) []string) *pageContent {
	pc := &pageContent{expansions: expansions, page: p, errors: map[string]*client.PartialError{}, askedBy: askedBy}
	for i := range p.Errors {
		pe := &p.Errors[i]
		kind := partialErrorKind(pe)
		for _, id := range []string{pe.ResourceID, pe.Value} {
			if kind != "" && id != "" {
				pc.errors[kind+"/"+id] = pe
			}
		}
	}
	return pc
}

// asks reports whether the page's request asked to expand any of expansions.
func (pc *pageContent) asks(expansions ...string) bool {
	return slices.ContainsFunc(expansions, func(e string) bool { return slices.Contains(pc.expansions, e) })
}

// partialErrorKind is the kind of object a partial error is about, in
// either naming: "post", "user", "media" or "" (e.g. a field's authorization).
func partialErrorKind(pe *client.PartialError) string {
	posts := pe.ResourceType == "tweet" || pe.ResourceType == "post"
	switch {
	case pe.Parameter == "referenced_tweets.id" || pe.Parameter == "referenced_posts" ||
		(posts && pe.Parameter != "tweet.fields" && pe.Parameter != "post.fields"):
		return "post"
	case pe.ResourceType == "user" || strings.HasSuffix(pe.Parameter, "author_id"):
		return "user"
	case pe.ResourceType == "media" || strings.HasSuffix(pe.Parameter, "media_keys"):
		return "media"
	}
	return ""
}

// notReturned is the partial error of an expanded object the page does not
// hold: the error X gave, else a record that it is missing
// (docs/design/plugin.md#resolvers).
func (pc *pageContent) notReturned(postID, kind, what, id, expansion string) *client.PartialError {
	if pe := pc.errors[kind+"/"+id]; pe != nil {
		return pe
	}
	pc.missing = append(pc.missing, fmt.Sprintf("post %s without its %s %s", postID, what, id))
	asker := "the spec asks"
	if pc.askedBy != nil {
		if by := pc.askedBy("expansions", expansion); len(by) > 0 {
			asker = strings.Join(by, " and ") + plural.Pick(len(by), " asks", " ask")
		}
	}
	return &client.PartialError{Title: "Missing", Detail: fmt.Sprintf("X returned no %s %s, which %s for (expansions=%s), and no error saying why", what, id, asker, expansion)}
}

// author is the expanded author of post, asked for with expansion.
func (pc *pageContent) author(post *client.Post, expansion string) *expandedUser {
	if post.AuthorID == "" {
		return nil
	}
	u := &expandedUser{id: post.AuthorID}
	if u.user = pc.page.Expanded.Users[post.AuthorID]; u.user == nil {
		u.err = pc.notReturned(post.ID, "user", "author", post.AuthorID, expansion)
	}
	return u
}

// mediaOf is the media of post: its attachments when expansion (which asks
// for them) is not "", then its article's when articleMedia.
func (pc *pageContent) mediaOf(post *client.Post, expansion string, articleMedia bool) []mediaItem {
	var items []mediaItem
	add := func(k, role, expansion string) {
		if k == "" || slices.ContainsFunc(items, func(m mediaItem) bool { return m.key == k }) {
			return
		}
		m := mediaItem{key: k, role: role, media: pc.page.Expanded.Media[k]}
		if m.media == nil {
			m.err = pc.notReturned(post.ID, "media", "media", k, expansion)
		}
		items = append(items, m)
	}
	if expansion != "" {
		for _, k := range post.MediaKeys {
			add(k, "attachment", expansion)
		}
	}
	if articleMedia {
		add(post.ArticleCover, "article_cover", "article.cover_media")
		for _, k := range post.ArticleMediaKeys {
			add(k, "article_media", "article.media_entities")
		}
	}
	return items
}

// references are the posts post references, with their authors and media as asked.
func (pc *pageContent) references(post *client.Post) []reference {
	var refs []reference
	for _, r := range post.References {
		ref := reference{typ: r.Type, id: r.ID, post: pc.page.Expanded.Posts[r.ID]}
		if ref.post == nil {
			ref.err = pc.notReturned(post.ID, "post", "referenced post", r.ID, "referenced_tweets.id")
		}
		if ref.post != nil && pc.asks("referenced_tweets.id.author_id") {
			ref.author = pc.author(ref.post, "referenced_tweets.id.author_id")
		}
		if ref.post != nil && pc.asks("referenced_tweets.id.attachments.media_keys") {
			ref.media = pc.mediaOf(ref.post, "referenced_tweets.id.attachments.media_keys", false)
		}
		refs = append(refs, ref)
	}
	return refs
}

// fill adds to a bookmark row the expanded objects of its post.
func (pc *pageContent) fill(b *bookmark) {
	if pc.asks("author_id") {
		b.author = pc.author(b.post, "author_id")
	}
	attachments := ""
	if pc.asks("attachments.media_keys") {
		attachments = "attachments.media_keys"
	}
	b.media = pc.mediaOf(b.post, attachments, pc.asks("article.cover_media", "article.media_entities"))
	if pc.asks("referenced_tweets.id", "referenced_tweets.id.author_id", "referenced_tweets.id.attachments.media_keys") {
		b.refs = pc.references(b.post)
	}
}

// fullText is a post's whole text: note_tweet's for a long post, else its text.
func fullText(p *client.Post) string {
	if p.NoteText != "" {
		return p.NoteText
	}
	return p.Text
}

// attachedJSON is the JSON array of the attached media objects of items (nil for none).
func attachedJSON(items []mediaItem) []byte {
	var objs [][]byte
	for _, m := range items {
		if m.role == "attachment" && m.media != nil {
			objs = append(objs, m.media.Raw)
		}
	}
	if len(objs) == 0 {
		return nil
	}
	return slices.Concat([]byte("["), bytes.Join(objs, []byte(",")), []byte("]"))
}
