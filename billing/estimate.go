package billing

import "slices"

// What X bills with each bookmarked post, by expansion: the posts it
// references (it quotes one and replies to one at most) and their users.
var (
	postsPerExpansion = map[string]int{"referenced_tweets.id": 2}
	usersPerExpansion = map[string]int{"author_id": 1, "referenced_tweets.id.author_id": 2, "in_reply_to_user_id": 1}
	// freeExpansions return objects X does not bill (media, polls, places).
	freeExpansions = []string{"attachments.media_keys", "referenced_tweets.id.attachments.media_keys", "article.cover_media",
		"article.media_entities", "attachments.poll_ids", "geo.place_id"}
)

// Expanded is what a request's expansions bill with each post it reads.
type Expanded struct {
	Posts, Users int      // the most referenced posts and users one post brings
	Unbounded    []string // expansions that bill users no bound counts (the users a post mentions, ...)
}

// Expand is what the expansions bill with each post.
func Expand(expansions []string) Expanded {
	var e Expanded
	for _, x := range expansions {
		switch {
		case postsPerExpansion[x] > 0:
			e.Posts += postsPerExpansion[x]
		case usersPerExpansion[x] > 0:
			e.Users += usersPerExpansion[x]
		case !slices.Contains(freeExpansions, x):
			e.Unbounded = append(e.Unbounded, x)
		}
	}
	return e
}

// Bound is the most something can bill: posts, users, and their USD.
type Bound struct {
	Posts int     `json:"max_posts"`
	Users int     `json:"max_users"`
	USD   float64 `json:"max_usd"`
}

func (b Bound) Plus(o Bound) Bound {
	return Bound{Posts: b.Posts + o.Posts, Users: b.Users + o.Users, USD: b.USD + o.USD}
}

func (b Bound) Times(n int) Bound {
	return Bound{Posts: n * b.Posts, Users: n * b.Users, USD: float64(n) * b.USD}
}

// BookmarksWalk bounds a walk of the bookmarks list that reads posts posts:
// they and what e expands with each, at the owned-read rate or not.
func (r Rates) BookmarksWalk(posts int, e Expanded, owned bool) Bound {
	b := Bound{Posts: posts * (1 + e.Posts), Users: posts * e.Users}
	b.USD = float64(b.Posts)*r.PostRate(owned) + float64(b.Users)*r.User
	return b
}

// FolderWalk bounds a walk of a folder that reads posts posts: post ids,
// post reads (a folder is not an owned read).
func (r Rates) FolderWalk(posts int) Bound {
	return Bound{Posts: posts, USD: float64(posts) * r.Post}
}

// UserReads bounds n GET /2/users/me.
func (r Rates) UserReads(n int) Bound {
	return Bound{Users: n, USD: float64(n) * r.User}
}

// WritesUSD is what n write requests cost: X bills each.
func (r Rates) WritesUSD(n int) float64 { return float64(n) * r.Write }
