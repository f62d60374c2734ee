package main

import (
	"context"
	"fmt"
	"testing"

	"github.com/cq-source-x/cq-source-x/walk"
	"github.com/cq-source-x/cq-source-x/walk/walktest"
)

// The sweep's models share the walk's loop, planner and memory and differ in
// the stop decision only: the model with the new rule's decision must do
// exactly what walk.Walker does, sync by sync, for its figures for the
// other rules to mean anything.
func TestTheModelOfTheNewRuleIsTheWalker(t *testing.T) {
	newRule, err := ruleNamed("new")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range walktest.Kinds {
		for _, c := range []int{1, 2, 3} {
			for seed := range uint64(15) {
				sc := walktest.Scenario{Kind: k, Seed: seed, Rounds: 8, Confirmations: c}
				var walker, model []string
				record := func(sync walktest.Sync, into *[]string) walktest.Sync {
					return func(ctx context.Context, l *walktest.List, prev *walk.Memory, emit func([]string)) (*walk.Result, error) {
						res, err := sync(ctx, l, prev, emit)
						if err == nil {
							*into = append(*into, fmt.Sprintf("%s new %d removed %d found %d needed %d billed %d pages %v held %v",
								res.Outcome, res.New, res.Removed, res.Found, res.Needed, res.Billed, res.PageSizes, res.Memory.Held.IDs()))
						}
						return res, err
					}
				}
				sc.Run(context.Background(), record(newRule.sync(c, false), &walker))
				sc.Run(context.Background(), record(newRule.sync(c, true), &model))
				if len(walker) != len(model) || len(walker) == 0 {
					t.Fatalf("%s seed %d c %d: %d syncs by the walker, %d by the model", k.Name, seed, c, len(walker), len(model))
				}
				for i := range walker {
					if walker[i] != model[i] {
						t.Fatalf("%s seed %d c %d: sync %d:\nwalker %.400s\nmodel  %.400s", k.Name, seed, c, i, walker[i], model[i])
					}
				}
			}
		}
	}
}
