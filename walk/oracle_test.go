package walk_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/cq-source-x/cq-source-x/walk/walktest"
)

// Every way of changing a list that docs/walk.md considers, on thousands of
// seeded scenarios (walktest.Kinds): after each sync the archive holds every
// post in the list, except in the cases the document names, which the
// oracle recognises from the changes it made; and the memory keeps the
// invariants the stop rule relies on.
func TestTheArchiveHoldsTheListButForTheDocumentedCases(t *testing.T) {
	const seeds, rounds = 100, 10
	var b strings.Builder
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "kind\tconfirmations\tsyncs\thidden by re-saves\tin syncs\tstopped on re-saves\tskipped at a page boundary\tsaved during a walk\tunexplained\tmemory checked in full\t")
	var all walktest.Tally
	perKind := map[string]*walktest.Tally{}
	for _, c := range []int{1, 2, 3} {
		for _, k := range walktest.Kinds {
			var tally walktest.Tally
			for seed := range uint64(seeds) {
				sc := walktest.Scenario{Kind: k, Seed: seed, Rounds: rounds, Confirmations: c, CheckMemory: true}
				tally.Add(sc.Run(context.Background(), walktest.Walker(c)))
			}
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", k.Name, c, tally.Syncs, tally.HiddenByResaves, tally.FooledSyncs, tally.StoppedOnResaves,
				tally.Skipped, tally.SavedDuring, tally.Unexplained, tally.MemoryChecked)
			all.Add(&tally)
			if perKind[k.Name] == nil {
				perKind[k.Name] = &walktest.Tally{}
			}
			perKind[k.Name].Add(&tally)
		}
	}
	tw.Flush()
	t.Log("\n" + b.String())
	for _, v := range all.Violations {
		t.Error(v)
	}
	if all.Unexplained > 0 {
		t.Errorf("%d posts lost for no documented reason", all.Unexplained)
	}
	// The oracle's exceptions must each have happened, and the memory must
	// have been checked in full often, or the test proves less than it says.
	if all.MemoryChecked < all.Syncs/2 {
		t.Errorf("the memory was checked in full after %d syncs of %d", all.MemoryChecked, all.Syncs)
	}
	if perKind["newest-saved-again"].HiddenByResaves == 0 {
		t.Error("no scenario hid a post by saving the newest held posts again, oldest first")
	}
	if perKind["mid-walk"].Skipped == 0 || perKind["mid-walk"].SavedDuring == 0 {
		t.Error("no scenario skipped a post at a page boundary, or saved one during a walk")
	}
}
