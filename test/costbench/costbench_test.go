package costbench

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// tinyWorkload has a few users and rounds, and events frequent enough that
// re-bookmarks above new posts and removals of the newest post do happen.
const tinyWorkload = `{
  "name": "tiny",
  "about": "costbench unit test",
  "seed": 7,
  "users": 8,
  "rounds": 6,
  "round_interval": "24h",
  "rate_limit": {"list_requests_per_window": 180, "window": "15m"},
  "initial_bookmarks": [
    {"share": 0.25, "min": 0, "max": 0},
    {"share": 0.75, "min": 5, "max": 400}
  ],
  "new_bookmarks_per_round": [
    {"share": 0.3, "min": 0, "max": 0},
    {"share": 0.4, "min": 1, "max": 5},
    {"share": 0.3, "min": 10, "max": 120}
  ],
  "per_round_events": {
    "unbookmark_probability": 0.5,
    "unbookmark_count": {"min": 1, "max": 3},
    "unbookmark_newest_share": 0.5,
    "rebookmark_held_probability": 0.5
  },
  "event_order": "new bookmarks, unbookmarks and re-bookmarks of held posts are interleaved in random order within a round"
}`

func TestPlannerOnTinyWorkload(t *testing.T) {
	w, err := ParseWorkload([]byte(tinyWorkload))
	if err != nil {
		t.Fatal(err)
	}
	script, err := NewScript(w, PerRound)
	if err != nil {
		t.Fatal(err)
	}
	// The test means something only if the hard cases happen.
	c := script.counts()
	if c.Rebookmarks == 0 || c.NewestRemoved == 0 || c.New == 0 {
		t.Fatalf("the tiny workload has no re-bookmark, removal of the newest post or new post: %+v", c)
	}
	if !rebookmarkAboveNew(script) {
		t.Fatal("no round re-bookmarks a held post above new ones")
	}

	res, err := Run(context.Background(), Config{Workload: w, Habits: PerRound, Strategies: []string{StrategyPlanner, StrategyGrowth}})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Find(StrategyPlanner)
	var sb strings.Builder
	res.WriteTable(&sb, w)
	t.Log("\n" + sb.String())
	if p.Lost != 0 || p.LostAtEnd != 0 {
		t.Errorf("planner lost %d posts (%d at the end)", p.Lost, p.LostAtEnd)
	}
	if n := p.First.RateLimited + p.Incremental.RateLimited; n != 0 {
		t.Errorf("planner caused %d 429s", n)
	}
	if p.FailedWalks != 0 || p.Duplicates != 0 {
		t.Errorf("planner: %d failed walks, %d duplicate rows", p.FailedWalks, p.Duplicates)
	}
	if p.Incremental.CRatio > 1.05 {
		t.Errorf("planner's incremental ratio against the order-confirming bound is %.3f (billed %d, bound %d), want <= 1.05",
			p.Incremental.CRatio, p.Incremental.Billed, p.Incremental.CBound)
	}
	if p.First.Billed != p.First.Bound {
		t.Errorf("planner's first syncs billed %d, want exactly the list lengths %d", p.First.Billed, p.First.Bound)
	}
	if g := res.Find(StrategyGrowth); g.Incremental.Bound != p.Incremental.Bound || g.First.Bound != p.First.Bound {
		t.Errorf("strategies saw different lists: bounds %d/%d and %d/%d", p.First.Bound, p.Incremental.Bound, g.First.Bound, g.Incremental.Bound)
	}
	if !strings.HasPrefix(res.MachineLine(p), "planner workload=tiny habits=per-round incremental_billed=") {
		t.Errorf("machine line %q", res.MachineLine(p))
	}
}

// rebookmarkAboveNew reports whether some round re-bookmarks a held post
// after bookmarking a new one, so that the re-bookmarked post sits above a
// new post: the case the document's stop rule gets wrong.
func rebookmarkAboveNew(s *Script) bool {
	for _, round := range s.Rounds {
		for _, ur := range round {
			newSeen := false
			for _, e := range ur.Events {
				switch e.Kind {
				case NewBookmark:
					newSeen = true
				case Rebookmark:
					if newSeen {
						return true
					}
				}
			}
		}
	}
	return false
}

func TestLowerBound(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	sim := xsim.New(xsim.Options{Clock: clk})
	const u = "42"
	step := func() { clk.Advance(time.Minute) }
	bound := func(first bool, prev time.Time) (int, int) {
		t.Helper()
		list := sim.Bookmarks(u)
		b, err := LowerBound(list, func(id string) (time.Time, bool) { return sim.BookmarkedAt(u, id) }, prev, first)
		if err != nil {
			t.Fatal(err)
		}
		return b, ConfirmingBound(b, len(list))
	}
	check := func(name string, first bool, prev time.Time, wantB, wantC int) {
		t.Helper()
		if b, c := bound(first, prev); b != wantB || c != wantC {
			t.Errorf("%s: bound %d, confirming %d; want %d, %d (list %v)", name, b, c, wantB, wantC, sim.Bookmarks(u))
		}
	}

	sim.AddUser(u, "u")
	check("empty list, first sync", true, time.Time{}, 0, 0)
	step()
	check("empty list, later sync", false, clk.Now(), 0, 0)

	held := sim.SeedBookmarks(u, 5) // newest first
	step()
	check("first sync", true, time.Time{}, 5, 5)
	prev := clk.Now() // the "previous sync" starts here
	step()
	check("nothing changed", false, prev, 1, 2)

	// New posts above: three new, the first held post is fourth.
	for range 3 {
		if err := sim.Bookmark(u, sim.NewPostID()); err != nil {
			t.Fatal(err)
		}
		step()
	}
	check("three new posts above", false, prev, 4, 5)

	// The newest (a new post) is un-bookmarked: two new posts remain above.
	if err := sim.Unbookmark(u, sim.Bookmarks(u)[0]); err != nil {
		t.Fatal(err)
	}
	step()
	check("newest new post un-bookmarked", false, prev, 3, 4)

	// A held post re-bookmarked above the new posts has a new time: it does
	// not count as held, the first untouched held post does.
	if err := sim.Bookmark(u, held[2]); err != nil {
		t.Fatal(err)
	}
	step()
	if got := sim.Bookmarks(u); got[0] != held[2] || got[3] != held[0] {
		t.Fatalf("unexpected list %v", got)
	}
	check("re-bookmark above new posts", false, prev, 4, 5)

	// Next sync: everything above is now held, but the newest held post is
	// un-bookmarked: the next one is first.
	prev = clk.Now()
	step()
	if err := sim.Unbookmark(u, held[2]); err != nil {
		t.Fatal(err)
	}
	step()
	check("held newest un-bookmarked", false, prev, 1, 2)

	// Every held post re-bookmarked: nothing is held; the bound is the list.
	prev = clk.Now()
	step()
	list := sim.Bookmarks(u)
	for i := len(list) - 1; i >= 0; i-- {
		if err := sim.Bookmark(u, list[i]); err != nil {
			t.Fatal(err)
		}
		step()
	}
	if got := sim.Bookmarks(u); !slices.Equal(got, list) {
		t.Fatalf("re-bookmarking in order changed the order: %v, was %v", got, list)
	}
	check("every post re-bookmarked", false, prev, len(list), len(list))

	// All un-bookmarked: an empty list again.
	for _, id := range sim.Bookmarks(u) {
		if err := sim.Unbookmark(u, id); err != nil {
			t.Fatal(err)
		}
	}
	check("emptied list", false, clk.Now(), 0, 0)
}

// TestScriptModel checks the script's own bound against hand-built cases.
func TestScriptModel(t *testing.T) {
	l := []modelEntry{{"a", 0}, {"b", 0}, {"c", 2}, {"d", 3}, {"e", 3}} // oldest first
	got := expectAll([][]modelEntry{l, nil, {{"x", 3}}}, 3)
	want := []Expect{{5, 3}, {0, 0}, {1, 1}} // c (epoch 2 < 3) is third from the top
	if !slices.Equal(got, want) {
		t.Errorf("expectAll = %v, want %v", got, want)
	}
	if got := expectAll([][]modelEntry{l}, 0); got[0] != (Expect{5, 5}) {
		t.Errorf("first sync: %v", got)
	}
}

func TestScriptDeterministic(t *testing.T) {
	w, err := ParseWorkload([]byte(tinyWorkload))
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []Habits{PerUser, PerRound} {
		a, _ := NewScript(w, h)
		b, _ := NewScript(w, h)
		if !slices.EqualFunc(a.Rounds, b.Rounds, func(x, y []UserRound) bool {
			return slices.EqualFunc(x, y, func(p, q UserRound) bool { return slices.Equal(p.Events, q.Events) })
		}) {
			t.Errorf("%s: two scripts of one seed differ", h)
		}
	}
}

func TestGrowthSchedule(t *testing.T) {
	// Document Part 8: twelve pages of 5, then doubling up to 100, reaches
	// 410 posts in 18 requests.
	total := 0
	var sizes []int
	for i := range 18 {
		sizes = append(sizes, growthPages(i))
		total += growthPages(i)
	}
	if total != 410 {
		t.Errorf("18 requests read %d posts (%v), want 410", total, sizes)
	}
	if growthPages(1000) != 100 {
		t.Errorf("page 1000 is %d", growthPages(1000))
	}
}

func TestParseWorkload(t *testing.T) {
	if _, err := ParseWorkload([]byte(`{"users": 1, "surprise": true}`)); err == nil || !strings.Contains(err.Error(), "surprise") {
		t.Errorf("unknown field: err = %v", err)
	}
	bad := strings.Replace(tinyWorkload, `"share": 0.3, "min": 0`, `"share": 0.5, "min": 0`, 1)
	if _, err := ParseWorkload([]byte(bad)); err == nil || !strings.Contains(err.Error(), "sum") {
		t.Errorf("shares not summing to 1: err = %v", err)
	}
	for _, f := range []string{"workloads/reference.json", "workloads/churn.json"} {
		if _, err := LoadWorkload(f); err != nil {
			t.Errorf("%s: %v", f, err)
		}
	}
}

// tinyChurn is tinyWorkload with churn.json's events, frequent enough that
// removed posts are saved again and held posts re-saved in bursts, above new
// posts, many times.
var tinyChurn = strings.NewReplacer(
	`"name": "tiny"`, `"name": "tiny-churn"`,
	`"rebookmark_held_probability": 0.5`, `"rebookmark_held_probability": 0.3,
    "rebookmark_burst": {"probability": 0.5, "min": 2, "max": 3, "order": "random"},
    "resave_removed_share_of_new": 0.3`,
	`"unbookmark_count": {"min": 1, "max": 3}`, `"unbookmark_count": {"min": 2, "max": 6}`,
	`"rounds": 6`, `"rounds": 10`,
	`"event_order": "new bookmarks, unbookmarks and re-bookmarks of held posts are interleaved in random order within a round"`,
	`"event_order": "`+churnOrder+`"`,
).Replace(tinyWorkload)

const churnOrder = "new bookmarks, unbookmarks and re-bookmarks of held posts are interleaved in random order within a round; " +
	"a share of each round's new bookmarks (resave_removed_share_of_new) are posts this account removed in an earlier round, saved again; " +
	"a re-bookmark burst re-saves 2-3 held posts one after the other, in random order; " +
	"unbookmarks other than the newest pick a held post uniformly at random anywhere in the list"

// The churn workload's events happen as its file says: removed posts are
// saved again (only posts removed in an earlier round), and bursts re-save
// 2-3 distinct held posts one right after the other.
func TestChurnWorkloadSavesRemovedPostsAgainAndReSavesHeldPostsInBursts(t *testing.T) {
	w, err := LoadWorkload("workloads/churn.json")
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewScript(w, PerUser)
	if err != nil {
		t.Fatal(err)
	}
	c := s.counts()
	if c.ResavedRemoved == 0 || c.Bursts == 0 {
		t.Fatalf("no removed post saved again or no burst: %+v", c)
	}
	for u := range s.UserIDs {
		removedIn := map[string]int{}
		for r, round := range s.Rounds {
			ur := round[u]
			for _, e := range ur.Events {
				switch e.Kind {
				case Unbookmark:
					removedIn[e.PostID] = r
				case ResaveRemoved:
					at, ok := removedIn[e.PostID]
					if !ok || at >= r {
						t.Fatalf("user %d round %d: %s saved again, but not removed in an earlier round", u, r+1, e.PostID)
					}
					delete(removedIn, e.PostID)
				}
			}
			if ur.Bursts > 0 && !hasBurst(ur.Events) {
				t.Fatalf("user %d round %d: a burst, but no two re-bookmarks in a row: %v", u, r+1, ur.Events)
			}
		}
	}
	t.Logf("%+v", c)
}

func hasBurst(events []Event) bool {
	for i := 1; i < len(events); i++ {
		if events[i].Kind == Rebookmark && events[i-1].Kind == Rebookmark && events[i].PostID != events[i-1].PostID {
			return true
		}
	}
	return false
}

// Removed posts saved again and bursts of re-saved held posts, above new
// posts, make the planner lose nothing (issue: the stop rule took re-saved
// posts for the tail).
func TestPlannerLosesNothingOnAChurnWorkload(t *testing.T) {
	w, err := ParseWorkload([]byte(tinyChurn))
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{Workload: w, Habits: PerRound, Strategies: []string{StrategyPlanner}})
	if err != nil {
		t.Fatal(err)
	}
	if c := res.Events; c.ResavedRemoved == 0 || c.Bursts == 0 {
		t.Fatalf("the tiny churn workload saves no removed post again or makes no burst: %+v", c)
	}
	p := res.Find(StrategyPlanner)
	if p.Lost != 0 || p.FailedWalks != 0 {
		var sb strings.Builder
		res.WriteTable(&sb, w)
		t.Fatalf("planner lost %d posts (%d at the end), %d failed walks\n%s", p.Lost, p.LostAtEnd, p.FailedWalks, sb.String())
	}
}

// A workload says how events happen; a field, an order or an event_order
// the benchmark does not implement is refused, never ignored.
func TestWorkloadFieldsAndReadingsNotImplementedAreRefused(t *testing.T) {
	for name, c := range map[string]struct{ from, to, want string }{
		"unknown event field": {`"unbookmark_newest_share": 0.5`, `"unbookmark_newest_share": 0.5, "resave_held_share": 0.1`, "resave_held_share"},
		"unknown burst order": {`"order": "random"`, `"order": "oldest-first"`, "oldest-first"},
		"unknown event_order": {churnOrder, "everything at once", "event_order"},
		"burst of none":       {`"min": 2, "max": 3, "order"`, `"min": 0, "max": 3, "order"`, "rebookmark_burst"},
		"share above 1":       {`"resave_removed_share_of_new": 0.3`, `"resave_removed_share_of_new": 3`, "resave_removed_share_of_new"},
	} {
		t.Run(name, func(t *testing.T) {
			bad := strings.Replace(tinyChurn, c.from, c.to, 1)
			if bad == tinyChurn {
				t.Fatalf("%q not found in the workload", c.from)
			}
			if _, err := ParseWorkload([]byte(bad)); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one naming %q", err, c.want)
			}
		})
	}
	if _, err := ParseWorkload([]byte(tinyChurn)); err != nil {
		t.Fatal(err)
	}
}

// The USD table prices each content section from the simulator's bill,
// which the plugin's meter matches sync by sync, in posts, users and USD
// at the owned-read rate (Run fails otherwise): authors and referenced
// posts cost more, media nothing, owned reads less.
func TestUSDPerContentKindOnTinyWorkload(t *testing.T) {
	w, err := ParseWorkload([]byte(tinyWorkload))
	if err != nil {
		t.Fatal(err)
	}
	configs := ContentConfigs()
	pick := map[string]ContentConfig{}
	for _, c := range configs {
		pick[c.Name] = c
	}
	rows, err := RunUSD(context.Background(), Config{Workload: w, Habits: PerRound},
		[]ContentConfig{pick["every kind off"], pick["media only"], pick["every kind on"]}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var sb strings.Builder
	WriteUSDTable(&sb, w, PerRound, rows)
	t.Log("\n" + sb.String())
	off, media, on := rows[0].Incremental, rows[1].Incremental, rows[2].Incremental
	offOwned, offNot := off.USDPerThousand(0.005, 0.01)
	mediaOwned, _ := media.USDPerThousand(0.005, 0.01)
	onOwned, _ := on.USDPerThousand(0.005, 0.01)
	if off.UsersBilled != 0 || on.UsersBilled == 0 || on.PostsBilled <= off.PostsBilled || media.Media == 0 {
		t.Errorf("billed: off %+v, on %+v, media %+v", off, on, media)
	}
	if offOwned >= offNot || mediaOwned != offOwned || onOwned <= offOwned || off.New != on.New {
		t.Errorf("USD per 1,000: off %.3f (not owned %.3f), media %.3f, on %.3f", offOwned, offNot, mediaOwned, onOwned)
	}
}

// Synced twice a day, a workload has the same events as synced daily: each
// day's, in their order, spread over its two syncs, so that only how often
// the lists are synced differs.
func TestTwiceADaySpreadsEachDaysEventsOverItsTwoSyncs(t *testing.T) {
	daily, err := ParseWorkload([]byte(tinyChurn))
	if err != nil {
		t.Fatal(err)
	}
	twice, err := daily.WithRoundInterval(12 * time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range []Habits{PerUser, PerRound} {
		d, _ := NewScript(daily, h)
		s, _ := NewScript(twice, h)
		if len(s.Rounds) != 2*len(d.Rounds) || len(s.Expect) != len(s.Rounds)+1 || s.counts() != d.counts() {
			t.Fatalf("%s: %d syncs for %d days, events %+v for %+v", h, len(s.Rounds), len(d.Rounds), s.counts(), d.counts())
		}
		for r, day := range d.Rounds {
			for u, ur := range day {
				spread := append(slices.Clone(s.Rounds[2*r][u].Events), s.Rounds[2*r+1][u].Events...)
				if !slices.Equal(spread, ur.Events) {
					t.Fatalf("%s: user %d day %d: the two syncs' events %v, the day's %v", h, u, r+1, spread, ur.Events)
				}
			}
		}
	}
}

// Synced twice a day, every other sync runs on the UTC day of the one
// before: X bills it only what the first did not read, and the report
// says how much a planner that knew it could save at most.
func TestTwiceADaySyncsAreDeduplicated(t *testing.T) {
	w, err := ParseWorkload([]byte(tinyWorkload))
	if err != nil {
		t.Fatal(err)
	}
	if w, err = w.WithRoundInterval(12 * time.Hour); err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), Config{Workload: w, Habits: PerRound, Strategies: []string{StrategyPlanner}})
	if err != nil {
		t.Fatal(err)
	}
	p := res.Find(StrategyPlanner).Incremental
	if p.SameDay == 0 || p.PostsBilled >= p.Billed || p.SameDayFloor > p.SameDayBilled {
		t.Errorf("same-day syncs %d: read %d, billed %d; same day billed %d, floor %d", p.SameDay, p.Billed, p.PostsBilled, p.SameDayBilled, p.SameDayFloor)
	}
	var sb strings.Builder
	res.WriteTable(&sb, w)
	if !strings.Contains(sb.String(), "using the de-duplication could save at most") {
		t.Errorf("report:\n%s", sb.String())
	}
}
