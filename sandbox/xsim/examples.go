package xsim

import "strings"

// ContentExamples are the posts SeedContentExamples bookmarks, one for
// each kind of content a bookmark can carry, and the posts they reference.
type ContentExamples struct {
	// Bookmarked, oldest first.
	LongPost         string // a long post (note_tweet) with a photo and a video, quoting Quoted
	ArticlePost      string // a post carrying an X Article with a cover and a photo in its body
	ReplyToDeleted   string // a reply to Deleted
	QuoteOfProtected string // a quote of Protected
	// Referenced.
	Quoted    string // a post by Authors[1] with a photo
	Deleted   string // deleted by its author
	Protected string // by an author who protected their posts
	// Authors are the two users who wrote them all.
	Authors [2]string
	// LongText is the whole text of LongPost; ArticleText the body of
	// ArticlePost's article.
	LongText, ArticleTitle, ArticleText string
}

// SeedContentExamples bookmarks for userID four posts that carry every kind
// of content — authors with profiles, photos, a video with variants, a long
// text, an article, a quoted post with its own author and photo, and
// references to a deleted and to a protected post — and returns them.
func (s *Server) SeedContentExamples(userID string) ContentExamples {
	e := ContentExamples{
		LongPost: "3101", ArticlePost: "3102", ReplyToDeleted: "3103", QuoteOfProtected: "3104",
		Quoted: "3001", Deleted: "3002", Protected: "3003", Authors: [2]string{"2001", "2002"},
		ArticleTitle: "On keeping what you save",
	}
	s.AddUser(e.Authors[0], "ada")
	s.AddUser(e.Authors[1], "bo")
	e.LongText = strings.Repeat("A bookmark archive keeps the whole of what was saved: the author, the pictures, the post it answers. ", 6)
	e.ArticleText = strings.Repeat("An article is a long text with a title and pictures, and X returns its whole body as plain text. ", 40)
	ada, bo := e.Authors[0], e.Authors[1]
	s.PutPost(Post{ID: e.Quoted, Text: "the quoted post, with a photo", AuthorID: bo, MediaKeys: []string{"3_4001"}, Lang: "en"})
	s.PutPost(Post{ID: e.Deleted, Text: "a post its author deleted", AuthorID: ada})
	s.PutPost(Post{ID: e.Protected, Text: "a post of a protected account", AuthorID: bo})
	s.PutPost(Post{ID: e.LongPost, Text: string([]rune(e.LongText)[:270]) + "…", NoteText: e.LongText, AuthorID: ada, Lang: "en",
		MediaKeys: []string{"3_4101", "7_4102"}, ReferencedTweets: []ReferencedTweet{{"quoted", e.Quoted}}})
	s.PutPost(Post{ID: e.ArticlePost, Text: "https://x.com/i/article/" + e.ArticlePost, AuthorID: bo, Lang: "en",
		Article: &Article{Title: e.ArticleTitle, PlainText: e.ArticleText, CoverMedia: "3_4103", MediaEntities: []string{"3_4104"}}})
	s.PutPost(Post{ID: e.ReplyToDeleted, Text: "@ada I disagree", AuthorID: bo, InReplyToUserID: ada, ConversationID: e.Deleted,
		ReferencedTweets: []ReferencedTweet{{"replied_to", e.Deleted}}})
	s.PutPost(Post{ID: e.QuoteOfProtected, Text: "worth reading", AuthorID: ada, ReferencedTweets: []ReferencedTweet{{"quoted", e.Protected}}})
	for _, id := range []string{e.LongPost, e.ArticlePost, e.ReplyToDeleted, e.QuoteOfProtected} {
		_ = s.Bookmark(userID, id)
	}
	_ = s.DeletePost(e.Deleted)
	_ = s.SetPostCompliance(e.Protected, "protected")
	return e
}
