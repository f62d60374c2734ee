package export

import (
	"encoding/json"
	"fmt"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/billing"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/walk"
)

// Estimate is what an export can bill at most, told before it runs, from
// the spec and the archive alone (docs/export.md#what-a-run-costs-before-it-runs).
type Estimate struct {
	Accounts []AccountEstimate `json:"accounts"`
	// PerWalk is planner.max_billed_posts, the most posts one walk bills;
	// 0 (no cap) leaves the run without a bound (Bounded false).
	PerWalk int  `json:"max_billed_posts_per_walk"`
	Bounded bool `json:"bounded"`
	// Bound adds up the accounts' bounds of the lists the archive knows;
	// Folder bounds each other folder (one made since the last sync).
	billing.Bound
	Folder billing.Bound `json:"each_other_folder"`
	// Unbounded are the expansions of the spec that bill users no bound
	// counts (the users a post mentions, ...).
	Unbounded []string `json:"unbounded_expansions,omitempty"`
}

type AccountEstimate struct {
	Account string `json:"account"` // accounts[i]
	// UserID is "" when neither the spec nor the token file says it: the
	// run asks GET /2/users/me (a user read), and the account is bounded as
	// a first sync.
	UserID string `json:"user_id,omitempty"`
	First  bool   `json:"first_sync"` // the archive holds nothing of its bookmarks list
	Held   int    `json:"held_posts"` // by the bookmarks walk's memory
	// Folders is how many folders the last sync listed; -1 when unknown
	// (a first sync lists them as it starts, at no cost).
	Folders int `json:"folders"`
	// Interrupted is the bookmarks walk the last run cut off, if any: the
	// next run reads its list from the top again.
	Interrupted *walk.CapStop `json:"interrupted,omitempty"`
	// LastBilled are the posts the bookmarks walk's last clean walks
	// billed, newest first.
	LastBilled []int `json:"last_walks_billed,omitempty"`
	Owned      bool  `json:"owned_reads"` // the account's bookmark reads are owned reads
	// Bound is the most the run can bill the account: its Bookmarks walk
	// and a Folder walk for each folder the last sync listed.
	billing.Bound
	Bookmarks billing.Bound `json:"bookmarks"`
	Folder    billing.Bound `json:"each_folder"`
}

// EstimateRun tells, for the spec's accounts, what an export into dir can
// bill at most, and what the archive's state knows of the last syncs.
// userIDs are the accounts' user ids known without a request ("" for the
// others).
func EstimateRun(src *cqspec.Source, dir string, userIDs []string) (*Estimate, error) {
	st, err := archive.Load(dir)
	if err != nil {
		return nil, err
	}
	s := src.Plugin
	rates, expanded := s.Rates(), billing.Expand(s.RequestFields().Expansions)
	e := &Estimate{PerWalk: *s.Planner.MaxBilledPosts, Unbounded: expanded.Unbounded}
	e.Bounded = e.PerWalk > 0
	e.Folder = rates.FolderWalk(e.PerWalk)
	for i := range s.Accounts {
		a := AccountEstimate{Account: account.Label(i), UserID: userIDs[i], Folders: -1}
		if err := a.fromState(st); err != nil {
			return nil, err
		}
		a.Owned = s.OwnedReads(i, a.UserID)
		a.Bookmarks = rates.BookmarksWalk(e.PerWalk, expanded, a.Owned)
		if a.UserID == "" {
			a.Bookmarks = a.Bookmarks.Plus(rates.UserReads(1)) // GET /2/users/me
		}
		a.Folder = e.Folder
		a.Bound = a.Bookmarks.Plus(a.Folder.Times(max(a.Folders, 0)))
		e.Bound = e.Bound.Plus(a.Bound)
		e.Accounts = append(e.Accounts, a)
	}
	return e, nil
}

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
