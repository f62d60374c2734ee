package compliance

import (
	"testing"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/ids"
	"github.com/cq-source-x/cq-source-x/plan"
)

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
