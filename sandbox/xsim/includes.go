package xsim

import (
	"time"
)

// includesPlan is what a bookmarks page expands: the users, media and
// referenced posts its includes hold, and the referenced posts that cannot
// be shown (deleted, or of a protected or suspended author), which come back
// as partial errors beside the data, as on X.
type includesPlan struct {
	users, media, tweets []string
	unavailable          []refError
}

type refError struct {
	id     string
	reason string // "deleted", "protected" or "suspended"
}

// planIncludes decides the includes of a page of posts ids at now. s.mu held.
func (s *Server) planIncludes(ids []string, fs *fieldSpec, now time.Time) *includesPlan {
	if fs.ex == 0 {
		return nil
	}
	p := &includesPlan{}
	v := viewPool.Get().(*view)
	defer viewPool.Put(v)
	addMedia := func(k []byte) { p.media = addUniq(p.media, string(k)) }
	for _, id := range ids {
		s.fillView(v, id)
		if fs.ex&exAuthorID != 0 && len(v.author) > 0 {
			p.users = addUniq(p.users, string(v.author))
		}
		if fs.ex&exInReplyToUser != 0 && len(v.replyTo) > 0 {
			p.users = addUniq(p.users, string(v.replyTo))
		}
		if fs.ex&exMediaKeys != 0 {
			for _, m := range v.media {
				addMedia(m)
			}
		}
		if fs.ex&exArticleCover != 0 && len(v.article.cover) > 0 {
			addMedia(v.article.cover)
		}
		if fs.ex&exArticleEntities != 0 {
			for _, k := range v.article.entities {
				addMedia(k)
			}
		}
		if fs.ex&exReferencedTweets != 0 {
			for _, r := range v.refs {
				p.addRef(string(r.id), s.refUnavailable(string(r.id), now))
			}
		}
	}
	if fs.ex&(exReferencedAuthors|exRefMediaKeys) != 0 {
		for _, id := range p.tweets {
			s.fillView(v, id)
			if fs.ex&exReferencedAuthors != 0 && len(v.author) > 0 {
				p.users = addUniq(p.users, string(v.author))
			}
			if fs.ex&exRefMediaKeys != 0 {
				for _, m := range v.media {
					addMedia(m)
				}
			}
		}
	}
	return p
}

func (p *includesPlan) addRef(id, reason string) {
	if reason == "" {
		p.tweets = addUniq(p.tweets, id)
		return
	}
	for _, e := range p.unavailable {
		if e.id == id {
			return
		}
	}
	p.unavailable = append(p.unavailable, refError{id, reason})
}

// refUnavailable says why a referenced post cannot be shown at now: the
// compliance status set for it (SetPostCompliance, DeletePost), else, for
// a post with generated content, one in 40 is deleted and one in 40 is by
// a protected author, from its id. "" = it is shown. s.mu held.
func (s *Server) refUnavailable(id string, now time.Time) string {
	if st, ok := s.comp.reasonAt(id, now); ok {
		switch st.reason {
		case "deleted", "protected", "suspended":
			return st.reason
		}
		return ""
	}
	if s.nPosts.Load() > 0 {
		if _, explicit := s.posts.Load(id); explicit {
			return ""
		}
	}
	switch hash64(id) % 40 {
	case 0:
		return "deleted"
	case 1:
		return "protected"
	}
	return ""
}

// billed is what the page bills: its posts, its expanded posts and users,
// and its media.
func (p *includesPlan) billed(ids []string) billed {
	b := billed{posts: ids}
	if p != nil {
		b.posts = append(append(make([]string, 0, len(ids)+len(p.tweets)), ids...), p.tweets...)
		b.users, b.media, b.included = p.users, len(p.media), len(p.tweets)
	}
	return b
}

// appendIncludes encodes the plan's includes ("includes":{...},) and
// returns b unchanged when there are none.
func (s *Server) appendIncludes(b []byte, p *includesPlan, v *view, fs *fieldSpec) []byte {
	if p == nil || len(p.users)+len(p.media)+len(p.tweets) == 0 {
		return b
	}
	b = append(b, `"includes":{`...)
	sep := false
	section := func(name string, n int, each func(i int)) {
		if n == 0 {
			return
		}
		if sep {
			b = append(b, ',')
		}
		sep = true
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, `":[`...)
		for i := range n {
			if i > 0 {
				b = append(b, ',')
			}
			each(i)
		}
		b = append(b, ']')
	}
	section("users", len(p.users), func(i int) { b = appendUser(b, p.users[i], s.userName(p.users[i]), fs.uf, fs.posts) })
	section("media", len(p.media), func(i int) { b = s.appendMedia(b, p.media[i], fs.mf) })
	posts := "tweets"
	if fs.posts {
		posts = "posts"
	}
	section(posts, len(p.tweets), func(i int) {
		s.fillView(v, p.tweets[i])
		b = appendPost(b, v, fs)
	})
	return append(b, "},"...)
}

// appendRefError encodes the partial error of a referenced post that cannot
// be shown, as X does, naming the expansion as the request did (posts: in
// the posts naming).
func appendRefError(b []byte, e refError, posts bool) []byte {
	param := "referenced_tweets.id"
	if posts {
		param = "referenced_posts"
	}
	b = append(b, `{"value":`...)
	b = appendStr(b, e.id)
	if e.reason == "deleted" {
		b = appendKeyStr(b, "detail", "Could not find tweet with "+param+": ["+e.id+"].")
		b = append(b, `,"title":"Not Found Error","resource_type":"tweet"`...)
		b = appendKeyStr(b, "parameter", param)
		b = appendKeyStr(b, "resource_id", e.id)
		return append(b, `,"type":"https://api.x.com/2/problems/resource-not-found"}`...)
	}
	b = appendKeyStr(b, "detail", "Sorry, you are not authorized to see the Tweet with "+param+": ["+e.id+"].")
	b = append(b, `,"title":"Authorization Error","resource_type":"tweet"`...)
	b = appendKeyStr(b, "parameter", param)
	b = appendKeyStr(b, "resource_id", e.id)
	return append(b, `,"type":"https://api.x.com/2/problems/not-authorized-for-resource"}`...)
}

// postFieldsParam is the post-fields parameter of the naming.
func postFieldsParam(posts bool) string {
	if posts {
		return "post.fields"
	}
	return "tweet.fields"
}
