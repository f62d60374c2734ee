package compliance

import (
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/ids"
	"github.com/cq-source-x/cq-source-x/plan"
)

// The archived posts keep each row's dates through the state's text;
// posts recorded by an earlier version (the ids alone) have none, and a
// damaged value is refused.
func TestArchivedPostsKeepTheirRowsDates(t *testing.T) {
	seen := time.Date(2026, 11, 2, 6, 0, 0, 123456000, time.UTC) // the columns keep microseconds
	after := seen.Add(-24 * time.Hour)
	created := time.Date(2025, 3, 1, 12, 0, 1, 0, time.UTC)
	old, _ := ids.NewSorted([]uint64{7}).Marshal()
	rec, err := unmarshalArchived(old, "archived")
	if err != nil {
		t.Fatal(err)
	}
	id := uint64(1896000000000000000)
	rec.add([]found{{id, Dates{CreatedAt: &created, FirstSeenAt: seen, BookmarkedAfter: &after, FoundPosition: 3}}, {9, Dates{FirstSeenAt: seen}}})
	value, err := rec.marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := unmarshalArchived(value, "archived")
	if err != nil {
		t.Fatal(err)
	}
	if len(back.ids) != 3 || back.datesOf(7) != nil {
		t.Fatalf("ids %v, dates of the earlier version's post %v", back.ids, back.datesOf(7))
	}
	d := back.datesOf(id)
	if d == nil || !d.CreatedAt.Equal(created) || !d.FirstSeenAt.Equal(seen) || !d.BookmarkedAfter.Equal(after) || d.FoundPosition != 3 {
		t.Fatalf("dates %+v", d)
	}
	if d := back.datesOf(9); d == nil || d.CreatedAt != nil || d.BookmarkedAfter != nil || len(back.sightings) != 2 {
		t.Fatalf("dates of a post without created_at %+v, sightings %v", d, back.sightings)
	}
	if _, err := unmarshalArchived(strings.Replace(value, `"version":2`, `"version":3`, 1), "archived"); err == nil {
		t.Error("a newer version was read")
	}
}

// An action is applied once: pending until recorded as applied, and a
// stronger one (a post whose location was removed, later deleted) is
// pending again. A post that comes back clean is not restored, nor
// pending. Checks written before actions existed read as nothing applied.
func TestActionsAreAppliedOnce(t *testing.T) {
	act := func(reason string) plan.Action {
		if reason == "scrub_geo" {
			return plan.ScrubGeo
		}
		return plan.Redact
	}
	a := &accountChecks{userID: "1001"}
	a.setAll([]check{{id: 1, reason: reasonCode("scrub_geo")}, {id: 2, reason: reasonDeleted}, {id: 3}})
	c := &Check{ActionOf: act, Set: &account.Set{}, accts: []*accountChecks{a}}
	pending := func() map[string]plan.Action {
		p, err := c.Pending(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]plan.Action{}
		for _, post := range p {
			out[post.PostID] = post.Action
		}
		return out
	}
	if got := pending(); len(got) != 2 || got["1"] != plan.ScrubGeo || got["2"] != plan.Redact {
		t.Fatalf("pending %v", got)
	}
	p, _ := c.Pending(t.Context())
	a.markApplied(p)
	if got := pending(); len(got) != 0 {
		t.Fatalf("pending after applied %v", got)
	}
	a.setAll([]check{{id: 1, reason: reasonDeleted, applied: uint8(plan.ScrubGeo)}, {id: 2, applied: uint8(plan.Redact)}})
	if got := pending(); len(got) != 1 || got["1"] != plan.Redact {
		t.Fatalf("pending after a stronger reason, and a post back %v", got)
	}
	v1 := `{"version":1,"count":1,"checks":"` + packChecks(t, []byte{1, 5, 2, 1}) + `"}`
	var b accountChecks
	if err := b.unmarshalChecks(v1, "checks"); err != nil || len(b.checks) != 1 || b.checks[0].applied != 0 || b.checks[0].reason != reasonDeleted {
		t.Fatalf("version 1 checks: %+v, %v", b.checks, err)
	}
}

func packChecks(t *testing.T, raw []byte) string {
	text, err := ids.Pack(raw)
	if err != nil {
		t.Fatal(err)
	}
	return string(text)
}
