package export

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/walk"
)

// ServedPosts is how many of a list's posts X serves: the newest 800, as
// X documented until May 2026 (docs/design/x-api-facts.md). A list X
// serves further is bounded by planner.max_billed_posts.
const ServedPosts = 800

// What each bookmarked post can bring besides itself, by expansion: the
// posts it references (it quotes one and replies to one at most; a repost
// references one) and the users X returns with it.
var (
	postsPerExpansion = map[string]int{"referenced_tweets.id": 2}
	usersPerExpansion = map[string]int{"author_id": 1, "referenced_tweets.id.author_id": 2, "in_reply_to_user_id": 1}
	// free expansions return objects X does not bill (media, polls, places).
	freeExpansions = []string{"attachments.media_keys", "referenced_tweets.id.attachments.media_keys", "article.cover_media",
		"article.media_entities", "attachments.poll_ids", "geo.place_id"}
)

// Estimate is what an export would bill, told before it runs, from the
// spec and the archive alone: no request is sent.
type Estimate struct {
	Accounts []AccountEstimate `json:"accounts"`
	// MaxPosts, MaxUsers and MaxUSD add up the accounts' bounds.
	MaxPosts int     `json:"max_posts"`
	MaxUsers int     `json:"max_users"`
	MaxUSD   float64 `json:"max_usd"`
	// Unbounded are the expansions of the spec that bill users this
	// estimate does not bound (the users a post mentions, ...).
	Unbounded []string `json:"unbounded_expansions,omitempty"`
	// PostsCap is planner.max_billed_posts: the bound of a walk of a list X
	// serves beyond ServedPosts (0: no cap).
	PostsCap int `json:"max_billed_posts_per_walk"`
}

// AccountEstimate is one account's part.
type AccountEstimate struct {
	Account string `json:"account"` // accounts[i]
	// UserID is "" when neither the spec nor the token file says it: the
	// run asks GET /2/users/me (a user read), and the account is bounded as
	// a first sync.
	UserID string `json:"user_id,omitempty"`
	// First: the archive holds nothing of the account's bookmarks list.
	First bool `json:"first_sync"`
	// Held is how many posts the bookmarks walk's memory holds.
	Held int `json:"held_posts"`
	// Folders is how many folders the last sync listed; -1 when unknown
	// (a first sync lists them as it starts, at no cost).
	Folders int `json:"folders"`
	// Interrupted is the bookmarks walk the last run cut off, if any: the
	// next run reads its list from the top again.
	Interrupted *walk.CapStop `json:"interrupted,omitempty"`
	// LastBilled are the posts the bookmarks walk's last clean walks
	// billed, newest first (from its memory).
	LastBilled []int `json:"last_walks_billed,omitempty"`
	// Owned: the account's bookmark reads are owned reads.
	Owned bool `json:"owned_reads"`
	// MaxPosts and MaxUsers bound what the run can bill the account (at
	// most ServedPosts a list), and MaxUSD prices them at the spec's rates.
	MaxPosts int     `json:"max_posts"`
	MaxUsers int     `json:"max_users"`
	MaxUSD   float64 `json:"max_usd"`
}

// EstimateRun tells, for the spec's accounts, what an export into dir would
// bill at most, and what the archive knows of the last syncs. userIDs are
// the accounts' user ids as far as they are known without a request ("" for
// the others). It reads the state, never X.
func EstimateRun(src *cqspec.Source, dir string, userIDs []string) (*Estimate, error) {
	st, err := archive.Load(dir)
	if err != nil {
		return nil, err
	}
	s := src.Plugin
	e := &Estimate{PostsCap: *s.Planner.MaxBilledPosts}
	refs, users := 0, 0
	for _, x := range s.RequestFields().Expansions {
		switch {
		case postsPerExpansion[x] > 0:
			refs += postsPerExpansion[x]
		case usersPerExpansion[x] > 0:
			users += usersPerExpansion[x]
		case !slices.Contains(freeExpansions, x):
			e.Unbounded = append(e.Unbounded, x)
		}
	}
	for i := range s.Accounts {
		a := AccountEstimate{Account: account.Label(i), UserID: userIDs[i], Folders: -1}
		if err := a.fromState(st); err != nil {
			return nil, err
		}
		lists := 1 + max(a.Folders, 0)
		bookmarks := ServedPosts * (1 + refs)
		a.MaxPosts = bookmarks + ServedPosts*max(a.Folders, 0)
		a.MaxUsers = ServedPosts * users
		if a.UserID == "" {
			a.MaxUsers++ // GET /2/users/me
		}
		a.Owned = s.OwnedReads(i, a.UserID)
		postRate := *s.PostReadUSD
		if a.Owned {
			postRate = *s.OwnedReadUSD
		}
		// Folder entries are billed at the post rate; the bookmarks and
		// their referenced posts at the owned rate for owned reads.
		a.MaxUSD = float64(bookmarks)*postRate + float64(ServedPosts*(lists-1))**s.PostReadUSD + float64(a.MaxUsers)**s.UserReadUSD
		e.MaxPosts += a.MaxPosts
		e.MaxUsers += a.MaxUsers
		e.MaxUSD += a.MaxUSD
		e.Accounts = append(e.Accounts, a)
	}
	return e, nil
}

// fromState fills in what the state knows of the account's lists.
func (a *AccountEstimate) fromState(st *archive.State) error {
	a.First = true
	if a.UserID == "" {
		return nil
	}
	mem, err := walk.UnmarshalMemory(st.Keys[account.BookmarksKey(a.UserID)])
	if err != nil {
		return err
	}
	if mem != nil {
		a.First, a.Held = false, mem.Held.Len()
		for i := len(mem.History) - 1; i >= 0; i-- {
			a.LastBilled = append(a.LastBilled, mem.History[i].Billed)
		}
	}
	if value := st.Keys[account.FoldersKey(a.UserID)]; value != "" {
		var folders []json.RawMessage
		if err := json.Unmarshal([]byte(value), &folders); err != nil {
			return fmt.Errorf("state %q: %w", account.FoldersKey(a.UserID), err)
		}
		a.Folders = len(folders)
	}
	if cut, err := walk.UnmarshalCapStop(st.Keys[account.CapKey(account.BookmarksKey(a.UserID))]); err == nil && cut != nil && cut.Interrupted {
		a.Interrupted = cut
	}
	return nil
}
