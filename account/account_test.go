package account

import (
	"testing"

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
