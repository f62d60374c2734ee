package account

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/walk"
)

// A report lives as long as the sync; the walk's memory (every post of the
// list) is in the state already and is not kept in it.
func TestReportKeepsNoWalkMemory(t *testing.T) {
	mem := &walk.Memory{Held: walk.NewIDList("1", "2", "3")}
	res := &walk.Result{Outcome: walk.ReachedEnd, New: 3, Billed: 3, Memory: mem}
	var r Report
	r.AddWalk(WalkReport{List: "bookmarks", Result: res})
	got := r.Walks()[0].Result
	if got.Memory != nil {
		t.Error("the report holds the walk's memory")
	}
	if got.New != 3 || got.Billed != 3 || got.Outcome != walk.ReachedEnd {
		t.Errorf("the report lost the walk's counts: %+v", got)
	}
	if res.Memory != mem {
		t.Error("the walker's result lost its memory, which the resolver still saves")
	}
}

// An account is named by its place in the spec, and its user when known;
// its session ID keys logs and metrics by user once known.
func TestAnAccountIsNamedByItsPlaceAndItsUser(t *testing.T) {
	if got := Label(2); got != "accounts[2]" {
		t.Errorf("Label: %q", got)
	}
	if got := Name(0, ""); got != "accounts[0]" {
		t.Errorf("Name without a user: %q", got)
	}
	if got := (&Session{Index: 1, UserID: "7"}).Name(); got != "accounts[1] (user 7)" {
		t.Errorf("Name: %q", got)
	}
	if got := (&Session{Index: 1, UserID: "7"}).ID(); got != "user:7" {
		t.Errorf("ID: %q", got)
	}
}

// The same X user twice in one spec is refused for the second account
// that claims it: its posts would be read, and billed, twice.
func TestTheSameUserIsClaimedByOneAccount(t *testing.T) {
	var set Set
	a, b := &Session{Index: 0}, &Session{Index: 1}
	if err := set.Claim(a, "7"); err != nil {
		t.Fatal(err)
	}
	if err := set.Claim(a, "7"); err != nil {
		t.Errorf("an account claiming its own user again: %v", err)
	}
	if err := set.Claim(b, "7"); err == nil || !strings.Contains(err.Error(), "accounts[0] and accounts[1] are the same X user (7)") {
		t.Errorf("a second account of the user: %v", err)
	}
}

// Setup runs once, the first time a resolver asks, and its error fails
// every resolver of the account, named.
func TestReadyRunsTheSetupOnce(t *testing.T) {
	calls := 0
	s := &Session{Index: 3, Setup: func(context.Context) error { calls++; return errors.New("no token") }}
	for range 2 {
		if err := s.Ready(context.Background()); err == nil || err.Error() != "accounts[3]: no token" {
			t.Errorf("Ready: %v", err)
		}
	}
	if calls != 1 {
		t.Errorf("the setup ran %d times", calls)
	}
}

// The report says which tables a walk finished and which failed, and
// joins the walks' errors.
func TestTheReportSumsUpTheWalksByTable(t *testing.T) {
	var r Report
	r.AddWalk(WalkReport{Table: "x_bookmarks"})
	r.AddWalk(WalkReport{Table: "x_bookmark_folder_posts"})
	r.AddWalk(WalkReport{Table: "x_bookmark_folder_posts", Err: errors.New("folder 2 failed")})
	done, failed := r.Tables()
	if !slices.Equal(done, []string{"x_bookmark_folder_posts", "x_bookmarks"}) || !slices.Equal(failed, []string{"x_bookmark_folder_posts"}) {
		t.Errorf("done %v, failed %v", done, failed)
	}
	if err := r.Err(); err == nil || err.Error() != "folder 2 failed" {
		t.Errorf("Err: %v", err)
	}
}

// The folder request budget is shared among the folders, never below
// minFolderWalkBudget a walk.
func TestTheFolderBudgetIsSharedAmongTheFolders(t *testing.T) {
	s := &Session{FolderBudget: 30}
	if got := s.FolderWalkBudget(); got != 30 {
		t.Errorf("before the folders are counted: %d", got)
	}
	s.SetFolderCount(5)
	if got := s.FolderWalkBudget(); got != 6 {
		t.Errorf("5 folders: %d", got)
	}
	s.SetFolderCount(100)
	if got := s.FolderWalkBudget(); got != minFolderWalkBudget {
		t.Errorf("100 folders: %d", got)
	}
}

// A walk's memory is stored and read back under its key; a key never set
// is no memory (a first walk), and a damaged one an error naming the key.
func TestAWalkMemoryIsStoredUnderItsKey(t *testing.T) {
	ctx := context.Background()
	s := &Session{State: memstate.New()}
	key := BookmarksKey("7")
	if mem, err := s.LoadMemory(ctx, key); mem != nil || err != nil {
		t.Fatalf("no memory yet: %v, %v", mem, err)
	}
	if err := s.SaveMemory(ctx, key, &walk.Memory{Held: walk.NewIDList("2", "1")}); err != nil {
		t.Fatal(err)
	}
	mem, err := s.LoadMemory(ctx, key)
	if err != nil || mem.Held.Len() != 2 {
		t.Fatalf("read back: %v, %v", mem, err)
	}
	_ = s.State.SetKey(ctx, key, "{damaged")
	if _, err := s.LoadMemory(ctx, key); err == nil || !strings.Contains(err.Error(), `state "x_bookmarks/7"`) {
		t.Errorf("a damaged memory: %v", err)
	}
}

// The syncs that ran to their end are kept per scope, the last endedKept
// of them, and flushed at once.
func TestTheEndedSyncsAreKeptPerScope(t *testing.T) {
	ctx := context.Background()
	st := memstate.New()
	for i := range endedKept + 3 {
		if err := SaveEnded(ctx, st, "shard-1-of-2", fmt.Sprint("sync-", i)); err != nil {
			t.Fatal(err)
		}
	}
	ended, err := LoadEnded(ctx, st, "shard-1-of-2")
	if err != nil || len(ended) != endedKept || ended.Has("sync-2") || !ended.Has("sync-3") || !ended.Has(fmt.Sprint("sync-", endedKept+2)) {
		t.Errorf("%d kept (%v)", len(ended), err)
	}
	if other, _ := LoadEnded(ctx, st, ""); len(other) != 0 {
		t.Errorf("another scope holds %v", other)
	}
	if flushed := st.Committed()[EndedKey("shard-1-of-2")]; flushed == "" {
		t.Error("the ended syncs were not flushed")
	}
	if _, err := DecodeEnded(EndedKey(""), "[1"); err == nil {
		t.Error("a damaged value was read")
	}
}
