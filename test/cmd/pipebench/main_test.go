package main

import (
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/xsim"
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

// A run is cut at the first and the last request the simulator saw: its
// start before, its end after; a run that sent none has neither.
func TestRunsAreSplitAtTheirFirstAndLastRequest(t *testing.T) {
	var times requestTimes
	start := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	if head, tail := times.split(start, time.Second); head != 0 || tail != 0 {
		t.Fatalf("no request: %v, %v", head, tail)
	}
	times.first, times.last = start.Add(20*time.Millisecond), start.Add(900*time.Millisecond)
	head, tail := times.split(start, time.Second)
	if head != 20*time.Millisecond || tail != 100*time.Millisecond {
		t.Fatalf("start %v, end %v; want 20ms and 100ms", head, tail)
	}
	times.reset()
	times.saw()
	if times.first.IsZero() || !times.first.Equal(times.last) {
		t.Fatalf("one request: first %v, last %v", times.first, times.last)
	}
}
