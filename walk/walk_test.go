package walk

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
)

// list is a newest-first bookmark list with position tokens, the way the
// document describes the API (Parts 2–4). The end-to-end versions of these
// tests run against the HTTP simulator in sandbox/xsim.
type list struct {
	ids       []string
	requests  int
	billed    int
	lastSize  int
	onRequest func(n int)
	fail      map[int]error // request number → error
}

func newList(n int) *list {
	l := &list{}
	for i := range n {
		l.ids = append(l.ids, strconv.Itoa(1_000_000+n-i)) // newest first
	}
	return l
}

func (l *list) bookmark(id string) {
	l.unbookmark(id)
	l.ids = append([]string{id}, l.ids...)
}

func (l *list) unbookmark(id string) {
	if i := slices.Index(l.ids, id); i >= 0 {
		l.ids = slices.Delete(l.ids, i, i+1)
	}
}

func (l *list) fetch(_ context.Context, maxResults int, token string) (Page[string], error) {
	l.requests++
	if err := l.fail[l.requests]; err != nil {
		return Page[string]{}, err
	}
	if l.onRequest != nil {
		l.onRequest(l.requests)
	}
	if maxResults < 1 || maxResults > 100 {
		return Page[string]{}, fmt.Errorf("max_results %d out of range", maxResults)
	}
	l.lastSize = maxResults
	off := 0
	if token != "" {
		off, _ = strconv.Atoi(token)
	}
	off = min(off, len(l.ids))
	end := min(off+maxResults, len(l.ids))
	page := Page[string]{Items: slices.Clone(l.ids[off:end])}
	if end < len(l.ids) {
		page.Next = strconv.Itoa(end)
	}
	l.billed += len(page.Items)
	return page, nil
}

// archive is what a destination would hold: every post ever emitted.
type archive struct {
	ids  map[string]int // id → times emitted
	mem  *Memory
	clk  *clock.Virtual
	last *Result
}

func newArchive() *archive {
	return &archive{ids: map[string]int{}, clk: clock.NewVirtual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))}
}

func (a *archive) sync(t *testing.T, l *list, s Settings) *Result {
	t.Helper()
	a.clk.Advance(24 * time.Hour)
	w := &Walker[string]{
		Fetch:    l.fetch,
		ID:       func(s string) string { return s },
		Settings: s,
		Clock:    a.clk,
		Emit: func(_ context.Context, items []string) error {
			for _, id := range items {
				a.ids[id]++
			}
			return nil
		},
	}
	res, err := w.Run(context.Background(), a.mem)
	a.last = res
	if err != nil {
		return res
	}
	// Round-trip the memory through its state encoding, as a real sync does.
	enc, err := res.Memory.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if a.mem, err = UnmarshalMemory(enc); err != nil {
		t.Fatal(err)
	}
	return res
}

// missing returns the posts in the list that the archive does not hold.
func (a *archive) missing(l *list) []string {
	var out []string
	for _, id := range l.ids {
		if a.ids[id] == 0 {
			out = append(out, id)
		}
	}
	return out
}

func mustClean(t *testing.T, res *Result, want Outcome) {
	t.Helper()
	if res.Outcome != want {
		t.Fatalf("outcome %s, want %s (result %+v)", res.Outcome, want, res)
	}
}

func TestFirstSyncReadsWholeListInLargestPages(t *testing.T) {
	l := newList(250)
	a := newArchive()
	res := a.sync(t, l, Settings{})
	mustClean(t, res, ReachedEnd)
	if res.New != 250 || res.Billed != 250 {
		t.Fatalf("new %d billed %d, want 250 and 250", res.New, res.Billed)
	}
	if want := []int{90, 90, 90}; !slices.Equal(res.PageSizes, want) {
		t.Fatalf("page sizes %v, want %v", res.PageSizes, want)
	}
	if got := res.Memory.Held.IDs(); !slices.Equal(got, l.ids) {
		t.Fatalf("memory holds %d ids, want the list of %d", len(got), len(l.ids))
	}
}

func TestNothingNewCostsTwoPosts(t *testing.T) {
	l := newList(50)
	a := newArchive()
	a.sync(t, l, Settings{})
	res := a.sync(t, l, Settings{})
	mustClean(t, res, MetHeld)
	if res.New != 0 || res.Billed != 2 || res.Requests != 1 {
		t.Fatalf("new %d billed %d requests %d, want 0, 2, 1", res.New, res.Billed, res.Requests)
	}
}

func TestNewPostsAboveHeldCostKPlusTwo(t *testing.T) {
	for _, k := range []int{1, 2, 5, 17, 60} {
		t.Run(strconv.Itoa(k), func(t *testing.T) {
			l := newList(200)
			a := newArchive()
			a.sync(t, l, Settings{})
			for i := range k {
				l.bookmark(strconv.Itoa(5_000_000 + i))
			}
			res := a.sync(t, l, Settings{})
			mustClean(t, res, MetHeld)
			if res.New != k || res.Billed != k+2 {
				t.Fatalf("new %d billed %d, want %d and %d (pages %v)", res.New, res.Billed, k, k+2, res.PageSizes)
			}
			if m := a.missing(l); len(m) > 0 {
				t.Fatalf("lost %v", m)
			}
		})
	}
}

// Case (a): the newest held post was un-bookmarked. The run begins one
// place down; the post it skipped costs one post more (k + 3), and the
// memory forgets it.
func TestNewestHeldPostUnbookmarked(t *testing.T) {
	l := newList(30)
	a := newArchive()
	a.sync(t, l, Settings{})
	newest := l.ids[0]
	l.unbookmark(newest)
	l.bookmark("7000001")
	l.bookmark("7000002")
	res := a.sync(t, l, Settings{})
	mustClean(t, res, MetHeld)
	if res.New != 2 || res.Billed != 5 || res.Removed != 1 {
		t.Fatalf("new %d billed %d removed %d, want 2, 5, 1", res.New, res.Billed, res.Removed)
	}
	if m := a.missing(l); len(m) > 0 {
		t.Fatalf("lost %v", m)
	}
	if slices.Contains(res.Memory.Held.IDs(), newest) {
		t.Fatalf("memory still holds the removed post %s", newest)
	}
}

// Each remembered post that the run skips — removed at the head of the tail
// or inside the run — costs one post more; removals below where the walk
// stops cost nothing.
func TestEachRememberedPostTheRunSkipsCostsOnePostMore(t *testing.T) {
	for _, c := range []struct {
		name    string
		removed []int // remembered positions
		billed  int   // for 2 new posts
	}{
		{"none", nil, 4},
		{"deep", []int{20, 33}, 4},
		{"the newest", []int{0}, 5},
		{"the second", []int{1}, 5},
		{"the two newest", []int{0, 1}, 6},
		{"the first and the third", []int{0, 2}, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			l := newList(60)
			a := newArchive()
			a.sync(t, l, Settings{})
			held := slices.Clone(l.ids)
			for _, p := range c.removed {
				l.unbookmark(held[p])
			}
			l.bookmark("7000001")
			l.bookmark("7000002")
			res := a.sync(t, l, Settings{})
			mustClean(t, res, MetHeld)
			if m := a.missing(l); len(m) > 0 {
				t.Fatalf("lost %v", m)
			}
			if res.Billed != c.billed || res.Needed != c.billed {
				t.Fatalf("billed %d, needed %d, want %d (pages %v)", res.Billed, res.Needed, c.billed, res.PageSizes)
			}
		})
	}
}

// Case (b): a held post was re-bookmarked and sits at the top, above new posts.
// The document's rule (stop at the first held post) would lose the new posts.
func TestRebookmarkedHeldPostAboveNewPosts(t *testing.T) {
	l := newList(40)
	a := newArchive()
	a.sync(t, l, Settings{})
	l.bookmark("7000001")
	l.bookmark("7000002")
	rebookmarked := l.ids[len(l.ids)-5] // an old held post
	l.bookmark(rebookmarked)
	res := a.sync(t, l, Settings{})
	mustClean(t, res, MetHeld)
	if m := a.missing(l); len(m) > 0 {
		t.Fatalf("lost %v", m)
	}
	if res.New != 2 || res.Rebookmarked != 1 || res.Billed != 5 {
		t.Fatalf("new %d rebookmarked %d billed %d, want 2, 1, 5 (k=3 above the tail, +2)", res.New, res.Rebookmarked, res.Billed)
	}
	if a.ids[rebookmarked] != 1 {
		t.Fatalf("re-bookmarked post emitted %d times, want once (content is immutable)", a.ids[rebookmarked])
	}
	// The memory has it at the top now, not at its old place.
	held := res.Memory.Held.IDs()
	if held[0] != rebookmarked || slices.Index(held[1:], rebookmarked) >= 0 {
		t.Fatalf("memory order wrong: %v", held[:5])
	}
}

// The newest held post re-bookmarked above a new one: the held post is first
// and the next one is new, so it cannot be the tail.
func TestRebookmarkedNewestHeldPostAboveNewPost(t *testing.T) {
	l := newList(10)
	a := newArchive()
	a.sync(t, l, Settings{})
	l.bookmark("7000001")
	l.bookmark(l.ids[1]) // the previously newest held post
	res := a.sync(t, l, Settings{})
	mustClean(t, res, MetHeld)
	if m := a.missing(l); len(m) > 0 {
		t.Fatalf("lost %v", m)
	}
}

// Removed deep in the list, where no walk goes, two posts stay remembered.
// Saved again one after the other above new posts, they come back as held
// posts in increasing remembered position: they are not the tail, and the
// walk reads on to the new posts below them.
func TestRemovedPostsSavedAgainInAPairAboveNewPostsAreNotTakenForTheTail(t *testing.T) {
	l := newList(200)
	a := newArchive()
	a.sync(t, l, Settings{})
	upper, lower := l.ids[120], l.ids[150]
	l.unbookmark(upper)
	l.unbookmark(lower)
	l.bookmark("7000001")
	a.sync(t, l, Settings{}) // stops near the top: both are still remembered
	added := []string{"7000002", "7000003", "7000004", "7000005"}
	for _, id := range added {
		l.bookmark(id)
	}
	l.bookmark(lower)
	l.bookmark(upper) // the one remembered above is saved last: on top
	res := a.sync(t, l, Settings{})
	mustClean(t, res, MetHeld)
	if m := a.missing(l); len(m) > 0 {
		t.Fatalf("lost %v (billed %d)", m, res.Billed)
	}
	if res.New != len(added) {
		t.Fatalf("new %d, want %d", res.New, len(added))
	}
}

// Held posts saved again one after the other above new posts, in any
// order, are not the tail.
func TestHeldPostsSavedAgainInABurstAboveNewPostsAreNotTakenForTheTail(t *testing.T) {
	for _, order := range [][]int{{25, 10}, {40, 25, 10}, {25, 40, 10}, {10, 40, 25}} {
		t.Run(fmt.Sprint(order), func(t *testing.T) {
			l := newList(80)
			a := newArchive()
			a.sync(t, l, Settings{})
			held := slices.Clone(l.ids)
			for _, id := range []string{"7000001", "7000002", "7000003"} {
				l.bookmark(id)
			}
			for _, p := range order {
				l.bookmark(held[p])
			}
			res := a.sync(t, l, Settings{})
			mustClean(t, res, MetHeld)
			if m := a.missing(l); len(m) > 0 {
				t.Fatalf("lost %v (billed %d)", m, res.Billed)
			}
		})
	}
}

// Posts at consecutive remembered positions (a thread saved together) saved
// again oldest first look, where they are, exactly like the tail. Below the
// newest held posts they still are not taken for it: the tail would need
// every remembered post above them removed, and the run is not that much
// longer than its confirmations.
func TestConsecutivePostsSavedAgainOldestFirstAreNotTakenForTheTail(t *testing.T) {
	for _, removedFirst := range []bool{false, true} {
		t.Run(fmt.Sprintf("removed first: %v", removedFirst), func(t *testing.T) {
			l := newList(200)
			a := newArchive()
			a.sync(t, l, Settings{})
			thread := []string{l.ids[60], l.ids[61], l.ids[62]}
			if removedFirst {
				for _, id := range thread {
					l.unbookmark(id)
				}
				a.sync(t, l, Settings{})
			}
			for _, id := range []string{"7000001", "7000002", "7000003"} {
				l.bookmark(id)
			}
			for i := len(thread) - 1; i >= 0; i-- {
				l.bookmark(thread[i]) // oldest first: they keep their order
			}
			res := a.sync(t, l, Settings{})
			mustClean(t, res, MetHeld)
			if m := a.missing(l); len(m) > 0 {
				t.Fatalf("lost %v (billed %d)", m, res.Billed)
			}
		})
	}
}

// The documented exception: the newest held posts saved again oldest first,
// after new posts, make the top of the list exactly what an unchanged tail
// would show. More than Confirmations of them hide the new posts below;
// one more confirmation reads past them.
func TestTheNewestHeldPostsSavedAgainOldestFirstHideTheNewPostsBelowThem(t *testing.T) {
	for _, c := range []struct {
		confirmations, saved int
		hidden               bool
	}{{1, 2, true}, {2, 2, false}, {2, 3, true}, {3, 3, false}} {
		t.Run(fmt.Sprintf("confirmations %d, %d saved again", c.confirmations, c.saved), func(t *testing.T) {
			s := Settings{Confirmations: c.confirmations}
			l := newList(50)
			a := newArchive()
			a.sync(t, l, s)
			newest := slices.Clone(l.ids[:c.saved])
			added := []string{"7000001", "7000002"}
			for _, id := range added {
				l.bookmark(id)
			}
			for i := len(newest) - 1; i >= 0; i-- {
				l.bookmark(newest[i])
			}
			res := a.sync(t, l, s)
			mustClean(t, res, MetHeld)
			m := a.missing(l)
			switch {
			case c.hidden && !slices.Equal(m, reversed(added)):
				t.Fatalf("missing %v, want the new posts %v: the exception is documented as hiding them", m, added)
			case !c.hidden && len(m) > 0:
				t.Fatalf("lost %v", m)
			}
		})
	}
}

// Case (c): several held posts removed, at the top and further down.
func TestSeveralHeldPostsRemoved(t *testing.T) {
	l := newList(60)
	a := newArchive()
	a.sync(t, l, Settings{})
	removed := []string{l.ids[0], l.ids[1], l.ids[2], l.ids[4], l.ids[30]}
	for _, id := range removed {
		l.unbookmark(id)
	}
	l.bookmark("7000001")
	res := a.sync(t, l, Settings{})
	mustClean(t, res, MetHeld)
	if m := a.missing(l); len(m) > 0 {
		t.Fatalf("lost %v", m)
	}
	// The tail's head is the fourth held post, and the fifth is gone too:
	// one post more for each of the four removals the run skips.
	if res.New != 1 || res.Billed != 7 {
		t.Fatalf("new %d billed %d, want 1 and 7", res.New, res.Billed)
	}
	// The walk passed the places of the first four removals, so it knows
	// them gone; the fifth is below where it stopped.
	if res.Removed != 4 {
		t.Fatalf("removed %d, want 4", res.Removed)
	}
	// All held posts removed: the walk reaches the end and forgets them.
	for _, id := range slices.Clone(l.ids) {
		l.unbookmark(id)
	}
	l.bookmark("7000002")
	res = a.sync(t, l, Settings{})
	mustClean(t, res, ReachedEnd)
	if got := res.Memory.Held.IDs(); !slices.Equal(got, []string{"7000002"}) {
		t.Fatalf("memory %v, want only the new post", got)
	}
}

// Case (d): the list is shorter than one page, and may be empty.
func TestListShorterThanOnePage(t *testing.T) {
	for _, n := range []int{0, 1, 2, 3} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			l := newList(n)
			a := newArchive()
			res := a.sync(t, l, Settings{})
			mustClean(t, res, ReachedEnd)
			if res.New != n || res.Requests != 1 {
				t.Fatalf("new %d requests %d", res.New, res.Requests)
			}
			res = a.sync(t, l, Settings{})
			if !res.Outcome.Clean() || res.New != 0 || res.Billed > max(n, 0) || res.Billed > 2 {
				t.Fatalf("second sync: %+v", res)
			}
			l.bookmark("7000001")
			res = a.sync(t, l, Settings{})
			if !res.Outcome.Clean() || res.New != 1 {
				t.Fatalf("third sync: %+v", res)
			}
			if m := a.missing(l); len(m) > 0 {
				t.Fatalf("lost %v", m)
			}
		})
	}
}

// Case (e), first half: posts bookmarked while the walk runs push the list
// down; the walk reads a post twice, drops the repeat, and the next sync finds
// the new post at the top.
func TestBookmarkDuringWalkRepeatsAPostAndNextSyncFindsIt(t *testing.T) {
	l := newList(100)
	a := newArchive()
	a.sync(t, l, Settings{})
	for i := range 30 {
		l.bookmark(strconv.Itoa(7_000_000 + i))
	}
	l.requests = 0
	l.onRequest = func(n int) {
		if n == 3 {
			l.bookmark("8000001")
		}
	}
	res := a.sync(t, l, Settings{})
	mustClean(t, res, MetHeld)
	if res.Duplicates != 1 {
		t.Fatalf("duplicates %d, want 1 (pages %v)", res.Duplicates, res.PageSizes)
	}
	for id, n := range a.ids {
		if n > 1 {
			t.Fatalf("post %s emitted %d times", id, n)
		}
	}
	l.onRequest = nil
	res = a.sync(t, l, Settings{})
	mustClean(t, res, MetHeld)
	if m := a.missing(l); len(m) > 0 {
		t.Fatalf("lost %v", m)
	}
}

// Case (e), second half: a bookmark removed above the read position while the
// walk runs pulls the list up, and the post at the page boundary is skipped.
// The limit of the guarantee (docs/walk.md): at most one post per removal,
// at a page boundary of this walk; the next sync finds it when the posts it
// reads above it do not confirm a tail, as here.
func TestRemovalDuringWalkSkipsAtMostThePostAtAPageBoundary(t *testing.T) {
	l := newList(100)
	a := newArchive()
	a.sync(t, l, Settings{})
	for i := range 10 {
		l.bookmark(strconv.Itoa(7_000_000 + i))
	}
	l.requests = 0
	var pageBoundary string
	l.onRequest = func(n int) {
		if n == 2 { // the walk has read its first page: remove the top post
			pageBoundary = l.ids[l.lastSize] // the first post of the next page
			l.unbookmark(l.ids[0])
		}
	}
	res := a.sync(t, l, Settings{})
	mustClean(t, res, MetHeld)
	if m := a.missing(l); len(m) != 1 || m[0] != pageBoundary {
		t.Fatalf("missing %v, want exactly the post at the page boundary %s", m, pageBoundary)
	}
	l.onRequest = nil
	res = a.sync(t, l, Settings{})
	mustClean(t, res, MetHeld)
	if m := a.missing(l); len(m) > 0 {
		t.Fatalf("the next sync did not recover %v", m)
	}
}

func TestFailedWalkDoesNotAdvance(t *testing.T) {
	l := newList(20)
	a := newArchive()
	a.sync(t, l, Settings{})
	before, _ := a.mem.Marshal()
	for i := range 8 {
		l.bookmark(strconv.Itoa(7_000_000 + i))
	}
	boom := errors.New("connection reset")
	l.fail = map[int]error{l.requests + 2: boom}
	res := a.sync(t, l, Settings{})
	if res.Outcome != Failed || res.Memory != nil {
		t.Fatalf("outcome %s, memory %v: a failed walk must not produce memory", res.Outcome, res.Memory)
	}
	if after, _ := a.mem.Marshal(); after != before {
		t.Fatal("memory changed after a failed walk")
	}
	l.fail = nil
	res = a.sync(t, l, Settings{})
	mustClean(t, res, MetHeld)
	if m := a.missing(l); len(m) > 0 {
		t.Fatalf("lost %v", m)
	}
}

// A walk asks for one page at a time, and not while a page is being
// emitted: it never asks for a page it might not need, and a slow
// destination does not make pages pile up.
func TestAWalkAsksForOnePageAtATime(t *testing.T) {
	l := newList(90 * 5)
	var busy, overlaps atomic.Int32
	enter := func() {
		if busy.Add(1) > 1 {
			overlaps.Add(1)
		}
	}
	w := &Walker[string]{
		Fetch: func(ctx context.Context, size int, token string) (Page[string], error) {
			enter()
			defer busy.Add(-1)
			time.Sleep(time.Millisecond)
			return l.fetch(ctx, size, token)
		},
		ID: func(s string) string { return s },
		Emit: func(context.Context, []string) error {
			enter()
			defer busy.Add(-1)
			time.Sleep(time.Millisecond)
			return nil
		},
	}
	first, err := w.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		l.bookmark(strconv.Itoa(7_000_000 + i))
	}
	if _, err := w.Run(context.Background(), first.Memory); err != nil {
		t.Fatal(err)
	}
	if n := overlaps.Load(); n > 0 {
		t.Fatalf("%d requests or emits started while another was under way", n)
	}
}

// Once Emit has failed the walk has failed, and it asks for no more pages:
// each would be billed for nothing.
func TestAWalkAsksForNoPageAfterEmitFailed(t *testing.T) {
	l := newList(90 * 40)
	w := &Walker[string]{
		Fetch: l.fetch,
		ID:    func(s string) string { return s },
		Emit: func(context.Context, []string) error {
			return errors.New("the destination refused the batch")
		},
	}
	res, err := w.Run(context.Background(), nil)
	if err == nil || res.Outcome != Failed {
		t.Fatalf("outcome %s, error %v", res.Outcome, err)
	}
	if l.requests != 1 || res.Requests != 1 || res.Billed != l.billed {
		t.Fatalf("Emit failed on page 1, and the walk made %d requests (result: %d, billed %d of the API's %d)", l.requests, res.Requests, res.Billed, l.billed)
	}
}

func TestBilledPostCapStopsCleanlyWithoutAdvancing(t *testing.T) {
	l := newList(500)
	a := newArchive()
	res := a.sync(t, l, Settings{MaxBilledPosts: 200})
	if res.Outcome != StoppedByBudget || res.Billed != 200 || res.Memory != nil {
		t.Fatalf("outcome %s billed %d memory %v, want stopped_by_budget, 200, nil", res.Outcome, res.Billed, res.Memory)
	}
	if a.mem != nil {
		t.Fatal("memory stored after a walk stopped by the cap")
	}
}

func TestMemoryRoundTrip(t *testing.T) {
	for name, ids := range map[string][]string{
		"numbers":    {"1858423391020347392", "20", "1", "18446744073709551615", "1858423391020347391"},
		"strings":    {"123", "abc", "0042", "", "99"},
		"empty list": {},
	} {
		t.Run(name, func(t *testing.T) {
			m := &Memory{Held: NewIDList(ids...), SyncedAt: time.Unix(1700000000, 0).UTC(), History: []SyncRecord{{Found: 3, Interval: time.Hour}}}
			enc, err := m.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			got, err := UnmarshalMemory(enc)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Held.IDs(), ids) && !(len(ids) == 0 && got.Held.Len() == 0) {
				t.Fatalf("got %q, want %q", got.Held.IDs(), ids)
			}
			if !got.SyncedAt.Equal(m.SyncedAt) || len(got.History) != 1 || got.History[0].Found != 3 {
				t.Fatalf("metadata lost: %+v", got)
			}
		})
	}
}

func TestDamagedMemoryIsAClearError(t *testing.T) {
	for name, value := range map[string]string{
		"not json":      "{",
		"newer version": `{"version":9}`,
		"bad list":      `{"version":1,"held":"!!!","count":1}`,
		"count differs": `{"version":1,"held":"AQIEAg==","count":5}`,
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := UnmarshalMemory(value); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// A million-post list is held in 8 bytes a post and encodes compactly.
func TestHeldListOfNumbersIsCompact(t *testing.T) {
	l := &IDList{}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 100_000 {
		l.Append(strconv.FormatUint(1_700_000_000_000_000_000+rng.Uint64N(100_000_000_000_000_000), 10))
	}
	enc, err := l.MarshalText()
	if err != nil {
		t.Fatal(err)
	}
	if perID := float64(len(enc)) / 100_000; perID > 12 {
		t.Fatalf("%.1f bytes an id encoded, want at most 12", perID)
	}
}

// X may return a page with nothing on it (its posts deleted or withheld) and
// a next_token; the walk follows it, but not forever.
func TestEmptyPagesWithANextTokenAreFollowedButNotForever(t *testing.T) {
	l := newList(30)
	a := newArchive()
	a.sync(t, l, Settings{})
	l.bookmark("7000001")
	empty := 0
	fetch := func(ctx context.Context, maxResults int, token string) (Page[string], error) {
		if empty < 2 {
			empty++
			return Page[string]{Next: "e" + strconv.Itoa(empty)}, nil
		}
		if token != "" && token[0] == 'e' {
			token = ""
		}
		return l.fetch(ctx, maxResults, token)
	}
	w := &Walker[string]{Fetch: fetch, ID: func(s string) string { return s }, Clock: a.clk}
	res, err := w.Run(context.Background(), a.mem)
	if err != nil || res.New != 1 {
		t.Fatalf("walk across empty pages: %v, %+v", err, res)
	}
	n := 0
	w.Fetch = func(context.Context, int, string) (Page[string], error) {
		n++
		return Page[string]{Next: "again" + strconv.Itoa(n)}, nil
	}
	res, err = w.Run(context.Background(), a.mem)
	if err == nil || res.Outcome != Failed || res.Requests != maxEmptyPages+1 {
		t.Fatalf("endless empty pages: %v, %+v", err, res)
	}
}

// A post read again is a repeat wherever the walk is, however many reads
// back it was read: not new, not in the walk's memory twice.
func TestRepeatsAreFoundHoweverFarBack(t *testing.T) {
	for _, n := range []int{199, 200, 201, 400, 1007} {
		wk := newProgress(Settings{}, nil, time.Unix(0, 0), func(s string) string { return s })
		var first []string
		for i := range n {
			first = append(first, fmt.Sprint(1000+i))
		}
		if fresh, err := wk.countPage(Page[string]{Items: first}, n); err != nil || len(fresh) != n {
			t.Fatalf("n=%d: the first page: %d new, %v", n, len(fresh), err)
		}
		again := append([]string{"1"}, first...)
		fresh, err := wk.countPage(Page[string]{Items: again}, n+1)
		if err != nil || !slices.Equal(fresh, []string{"1"}) || wk.res.Duplicates != n || wk.stop.order.Len() != n+1 {
			t.Fatalf("n=%d: every post read again: new %v, %d repeats, %d held, %v", n, fresh, wk.res.Duplicates, wk.stop.order.Len(), err)
		}
	}
}

func reversed(s []string) []string {
	out := slices.Clone(s)
	slices.Reverse(out)
	return out
}

// The run's skipped posts are counted with a Fenwick tree of the positions
// read above it; it answers as counting them one by one does.
func TestHeldPostsReadAboveTheRunAreCountedByPosition(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 1000
	var f fenwick
	var added []int
	for range 300 {
		p := rng.IntN(n)
		f.add(p, n)
		added = append(added, p)
		q := rng.IntN(n + 10)
		want := 0
		for _, a := range added {
			if a <= q {
				want++
			}
		}
		if got := f.sum(q); got != want {
			t.Fatalf("sum(%d) = %d, want %d", q, got, want)
		}
	}
	var empty fenwick
	if empty.sum(5) != 0 {
		t.Fatal("an empty tree counts something")
	}
}
