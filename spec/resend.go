package spec

import "github.com/cq-source-x/cq-source-x/outbox"

// Resend says how long a CloudQuery sync sends again the rows of its
// incremental tables (docs/delivery.md).
type Resend struct {
	// Each new row of x_bookmarks (with its content tables' rows) and of x_post_compliance is sent again by the next syncs until this many syncs that sent it have run to their end.
	// A sync stopped before the destination wrote its last rows (Ctrl-C, a crash, a failed write) then loses none: the next syncs send them again, from the state. A stopped sync does not count.
	// `1` sends each row once (a sync stopped after saving its state, before the destination's last write, then loses rows).
	Syncs *int `json:"syncs,omitempty" jsonschema:"minimum=1,maximum=100,default=3"`
}

// Policy is the outbox policy the section describes.
func (r *Resend) Policy() outbox.Policy { return outbox.Policy{Syncs: *r.Syncs} }
