package resources

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cq-source-x/cq-source-x/client"
)

// asked is what a bookmarks request asked for with each post, read from its
// field selection (which the spec's content kinds and fields section make).
type asked struct {
	authors, media, referenced, refAuthors, refMedia, articleMedia bool
}

func askedBy(f client.Fields) asked {
	has := func(e string) bool { return slices.Contains(f.Expansions, e) }
	return asked{
		authors:      has("author_id"),
		media:        has("attachments.media_keys"),
		referenced:   has("referenced_tweets.id") || has("referenced_tweets.id.author_id") || has("referenced_tweets.id.attachments.media_keys"),
		refAuthors:   has("referenced_tweets.id.author_id"),
		refMedia:     has("referenced_tweets.id.attachments.media_keys"),
		articleMedia: has("article.cover_media") || has("article.media_entities"),
	}
}

// reference is a post a bookmarked post quotes, replies to or reposts, with
// its own author and media when they were asked for. A post X did not
// return (deleted, or of a protected or suspended author) has its partial
// error instead.
type reference struct {
	typ    string
	id     string
	post   *client.Post
	author *expandedUser
	media  []mediaItem
	err    *client.PartialError
}

// expandedUser is an author as a page expanded it, or the partial error
// that says why it did not.
type expandedUser struct {
	id   string
	user *client.User
	err  *client.PartialError
}

// mediaItem is one media object of a post, where it sits in the post, or
// the partial error that says why the page does not hold it.
type mediaItem struct {
	key   string
	role  string // "attachment", "article_cover" or "article_media"
	media *client.Media
	err   *client.PartialError
}

// pageContent resolves the expanded objects of one page's posts.
type pageContent struct {
	asked  asked
	page   *client.PostPage
	errors map[string]*client.PartialError // by resource kind and id
}

func newPageContent(p *client.PostPage, a asked) *pageContent {
	pc := &pageContent{asked: a, page: p, errors: map[string]*client.PartialError{}}
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

// partialErrorKind is the kind of object a partial error is about: "post",
// "user" or "media" ("" for others, e.g. a field authorization error).
func partialErrorKind(pe *client.PartialError) string {
	switch {
	case pe.Parameter == "referenced_tweets.id" || (pe.ResourceType == "tweet" && pe.Parameter != "tweet.fields"):
		return "post"
	case pe.ResourceType == "user" || strings.HasSuffix(pe.Parameter, "author_id"):
		return "user"
	case pe.ResourceType == "media" || strings.HasSuffix(pe.Parameter, "media_keys"):
		return "media"
	}
	return ""
}

// missingError is a post whose expanded object was asked for but is neither
// in the page's includes nor named by a partial error: the response lacks
// part of what was asked, and the post is not stored without it.
func missingError(postID, what, id, expansion string) error {
	return fmt.Errorf("the API returned post %s without its %s %s, which expansions=%s asks for, and no error saying why; nothing of the walk was stored (turn that content kind off in the spec to archive posts without it)", postID, what, id, expansion)
}

// author is the expanded author of post, asked for with expansion.
func (pc *pageContent) author(post *client.Post, expansion string) (*expandedUser, error) {
	if post.AuthorID == "" {
		return nil, nil
	}
	u := &expandedUser{id: post.AuthorID}
	if u.user = pc.page.Expanded.Users[post.AuthorID]; u.user != nil {
		return u, nil
	}
	if u.err = pc.errors["user/"+post.AuthorID]; u.err != nil {
		return u, nil
	}
	return nil, missingError(post.ID, "author", post.AuthorID, expansion)
}

// mediaOf is the media of post: its attachments when expansion (which asks
// for them) is not "", then its article's when articleMedia. An article's
// media keys are read from an object X does not document, so a key missing
// from the includes is recorded rather than refused.
func (pc *pageContent) mediaOf(post *client.Post, expansion string, articleMedia bool) ([]mediaItem, error) {
	var items []mediaItem
	seen := func(k string) bool {
		return slices.ContainsFunc(items, func(m mediaItem) bool { return m.key == k })
	}
	var attached []string
	if expansion != "" {
		attached = post.MediaKeys
	}
	for _, k := range attached {
		if seen(k) {
			continue
		}
		m := mediaItem{key: k, role: "attachment", media: pc.page.Expanded.Media[k]}
		if m.media == nil {
			if m.err = pc.errors["media/"+k]; m.err == nil {
				return nil, missingError(post.ID, "media", k, expansion)
			}
		}
		items = append(items, m)
	}
	if !articleMedia {
		return items, nil
	}
	for i, k := range append([]string{post.ArticleCover}, post.ArticleMediaKeys...) {
		if k == "" || seen(k) {
			continue
		}
		role := "article_media"
		if i == 0 {
			role = "article_cover"
		}
		m := mediaItem{key: k, role: role, media: pc.page.Expanded.Media[k]}
		if m.media == nil {
			if m.err = pc.errors["media/"+k]; m.err == nil {
				m.err = &client.PartialError{Title: "Missing", Detail: "the response's includes hold no media " + k + " for this article"}
			}
		}
		items = append(items, m)
	}
	return items, nil
}

// references are the posts post references, with their authors and media
// as asked.
func (pc *pageContent) references(post *client.Post) ([]reference, error) {
	var refs []reference
	for _, r := range post.References {
		ref := reference{typ: r.Type, id: r.ID, post: pc.page.Expanded.Posts[r.ID]}
		if ref.post == nil {
			if ref.err = pc.errors["post/"+r.ID]; ref.err == nil {
				return nil, missingError(post.ID, "referenced post", r.ID, "referenced_tweets.id")
			}
			refs = append(refs, ref)
			continue
		}
		var err error
		if pc.asked.refAuthors {
			if ref.author, err = pc.author(ref.post, "referenced_tweets.id.author_id"); err != nil {
				return nil, err
			}
		}
		if pc.asked.refMedia {
			if ref.media, err = pc.mediaOf(ref.post, "referenced_tweets.id.attachments.media_keys", false); err != nil {
				return nil, err
			}
		}
		refs = append(refs, ref)
	}
	return refs, nil
}

// fill adds to a bookmark row the expanded objects of its post.
func (pc *pageContent) fill(b *bookmark) error {
	var err error
	if pc.asked.authors {
		if b.author, err = pc.author(b.post, "author_id"); err != nil {
			return err
		}
	}
	if pc.asked.media || pc.asked.articleMedia {
		expansion := ""
		if pc.asked.media {
			expansion = "attachments.media_keys"
		}
		if b.media, err = pc.mediaOf(b.post, expansion, pc.asked.articleMedia); err != nil {
			return err
		}
	}
	if pc.asked.referenced {
		if b.refs, err = pc.references(b.post); err != nil {
			return err
		}
	}
	return nil
}

// fullText is the whole text of a post: note_tweet's for a long post, else
// its text.
func fullText(p *client.Post) string {
	if p.NoteText != "" {
		return p.NoteText
	}
	return p.Text
}

// errorText is a partial error on one line, or "" for none.
func errorText(pe *client.PartialError) string {
	if pe == nil {
		return ""
	}
	return pe.String()
}
