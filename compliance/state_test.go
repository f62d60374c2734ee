package compliance

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/ids"
	"github.com/cq-source-x/cq-source-x/internal/clock"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/rs/zerolog"
)

// The checks survive a round trip through the state
// backend's text, and a damaged value is refused rather than misread.
func TestComplianceStateRoundTrip(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	a := &accountChecks{roundStart: start, lastRound: start.Add(-168 * time.Hour)}
	a.setAll([]check{{id: 5, at: start.UnixMilli(), reason: reasonDeleted}, {id: 9, at: 1, reason: reasonOther}})
	a.setAll([]check{{id: 7, at: 2}, {id: 9, at: 3, reason: reasonCode("scrub_geo")}})
	value, err := a.marshalChecks()
	if err != nil {
		t.Fatal(err)
	}
	var b accountChecks
	if err := b.unmarshalChecks(value, "checks"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.checks, a.checks) || len(b.checks) != 3 || !b.roundStart.Equal(start) || !b.lastRound.Equal(a.lastRound) {
		t.Fatalf("checks %+v, want %+v", b, a)
	}
	if err := b.unmarshalChecks(strings.Replace(value, `"count":3`, `"count":4`, 1), "checks"); err == nil {
		t.Error("checks whose count does not match were read")
	}
}

// Which posts a round checks: not checked since it started, never one
// reported deleted; none outside a round.
func TestDuePosts(t *testing.T) {
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	a := &accountChecks{archived: ids.Sorted{1, 2, 3, 4}}
	a.setAll([]check{
		{id: 1, at: start.Add(-time.Hour).UnixMilli()},                                   // clean, before the round
		{id: 2, at: start.Add(-time.Hour).UnixMilli(), reason: reasonDeleted},            // deleted: never again
		{id: 3, at: start.Add(time.Minute).UnixMilli(), reason: reasonCode("protected")}, // checked in this round
	})
	if a.hasDue() {
		t.Error("posts are due outside a round")
	}
	a.roundStart = start
	var due []uint64
	for _, id := range a.archived {
		if a.due(id) {
			due = append(due, id)
		}
	}
	if !slices.Equal(due, []uint64{1, 4}) {
		t.Errorf("due %v, want 1 (checked before the round) and 4 (never)", due)
	}
	if got := dueBatch([]*accountChecks{a, {archived: ids.Sorted{0, 4, 8}, roundStart: start}}, 3); !slices.Equal(got, ids.Sorted{0, 1, 4}) {
		t.Errorf("batch %v, want the 3 smallest due ids, each once", got)
	}
}

// What X says of a post changing is a row, also from `deactivated` to a
// reason this version does not know (X may add some): deactivated is a
// reason of its own, not one of those. The same report again is no row.
func TestAChangeFromDeactivatedToAnUnknownReasonIsARow(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	c := &Check{Clock: clk, Logger: zerolog.Nop()}
	a := &accountChecks{userID: "1001", archived: ids.Sorted{7}}
	rec := &jobRecord{ID: "job-1", IDs: ids.Sorted{7}}
	for i, step := range []struct {
		reason string
		row    bool
	}{{"deactivated", true}, {"deactivated", false}, {"withheld_everywhere", true}} {
		var rows []*Finding
		emit := func(_ context.Context, found []*Finding) error { rows = append(rows, found...); return nil }
		reported := results{7: {ID: "7", Action: "delete", Reason: step.reason}}
		if err := c.apply(context.Background(), rec, reported, []*accountChecks{a}, emit); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Hour)
		if row := len(rows) == 1; row != step.row {
			t.Errorf("report %d (%s): a row: %v, want %v", i+1, step.reason, row, step.row)
		}
	}
}

// The compliance keys are checked as they are read: the state key registry
// decodes them with this package's decoders.
func TestComplianceKeysAreCheckedWhenTheyAreRead(t *testing.T) {
	checks, err := (&accountChecks{checks: []check{{id: 1, at: 5}}}).marshalChecks()
	if err != nil {
		t.Fatal(err)
	}
	st := memstate.New()
	if err := saveJob(context.Background(), st, "job", &jobRecord{ID: "7", IDs: ids.Sorted{1, 2}}, false); err != nil {
		t.Fatal(err)
	}
	job, _ := st.GetKey(context.Background(), "job")
	users, err := (&usersCheck{LastRound: time.Unix(1, 0), Reported: map[uint64]uint8{5: reasonCode("suspended"), 7: reasonOther}}).marshal()
	if err != nil {
		t.Fatal(err)
	}
	for key, value := range map[string]string{
		account.UsersKey(""):           users,
		account.ChecksKey("1001"):      checks,
		account.JobKey(""):             job,
		account.JobKey("shard-1-of-2"): job,
	} {
		if known, err := account.CheckKey(key, value); !known || err != nil {
			t.Errorf("%s: known %v, err %v", key, known, err)
		}
		if known, err := account.CheckKey(key, value[:len(value)/2]); !known || err == nil {
			t.Errorf("%s cut in half: known %v, err %v", key, known, err)
		}
	}
}

// The check of the authors' accounts reads back as written.
func TestTheCheckOfTheAuthorsReadsBack(t *testing.T) {
	u := &usersCheck{RoundStart: time.Unix(20, 0).UTC(), Next: 7, LastRound: time.Unix(1, 0).UTC(), Reported: map[uint64]uint8{5: reasonCode("deactivated")}}
	value, err := u.marshal()
	if err != nil {
		t.Fatal(err)
	}
	if got, err := unmarshalUsers(value, "users"); err != nil || !reflect.DeepEqual(got, u) {
		t.Errorf("users check read back %+v (%v), want %+v", got, err, u)
	}
}

// A post of an account X reports gets a row from the job of accounts
// unless X reports the post itself: a deleted post keeps saying deleted; a
// post whose location only was removed gets the account's row. When the
// account comes back, the posts X reports nothing of get a row saying so.
func TestAPostXReportsItselfGetsNoRowFromItsAuthorsAccount(t *testing.T) {
	clk := clock.NewVirtual(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	c := &Check{Clock: clk, Logger: zerolog.Nop(), users: &usersCheck{Reported: map[uint64]uint8{}}}
	a := &accountChecks{userID: "1001", archived: ids.Sorted{1, 2, 3, 4}, authors: map[uint64]ids.Sorted{9: {1, 2, 3, 4}},
		checks: []check{{id: 1, reason: reasonDeleted}, {id: 2, reason: reasonScrubGeo}, {id: 3}}}
	rec := &jobRecord{ID: "job-1", Type: client.ComplianceUsers, IDs: ids.Sorted{9}}
	for _, step := range []struct {
		results results
		want    []string
	}{
		{results{9: {ID: "9", Action: "delete", Reason: "suspended"}}, []string{"2 suspended", "3 suspended", "4 suspended"}},
		{nil, []string{"3 ", "4 "}},
	} {
		var rows []string
		emit := func(_ context.Context, found []*Finding) error {
			for _, f := range found {
				rows = append(rows, f.PostID+" "+f.Reason)
			}
			return nil
		}
		if err := c.applyUsers(context.Background(), rec, step.results, []*accountChecks{a}, emit); err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rows, step.want) {
			t.Errorf("rows %q, want %q", rows, step.want)
		}
	}
}
