package main

import (
	"testing"

	"github.com/cq-source-x/cq-source-x/test/xsim"
)

// Both floors read every post of the list from the simulator, as the
// export does, so the times they give are for the same pages.
func TestFloorsFetchEveryPost(t *testing.T) {
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks(user, 500)
	token := sim.IssueToken(user)
	for name, loop := range map[string]func(string, string) (int, error){"bare": floorLoop, "client": clientLoop} {
		n, err := loop(sim.URL(), token)
		if err != nil || n != 500 {
			t.Errorf("%s floor: %d posts, %v; want 500", name, n, err)
		}
	}
	if got := sim.TotalPostsBilled(); got != 1000 {
		t.Errorf("simulator billed %d posts for two walks of 500", got)
	}
}
