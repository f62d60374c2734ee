package main

import (
	"bytes"
	"io"
	"os"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/test/costbench"
)

// The benchmark re-runs its own binary as the exporter and the shard syncs;
// under `go test` that binary is the test binary, which does the same.
func TestMain(m *testing.M) {
	if len(os.Args) > 1 && isChild(os.Args[1]) {
		os.Exit(runChild(os.Args[1:]))
	}
	os.Exit(m.Run())
}

const referenceWorkload = "../../costbench/workloads/reference.json"

// A tiny run of every part: a first sync writes every post, an incremental
// one bills two posts per account that holds any (the held post and its
// confirmation) and writes nothing, and the shards cover every account
// once (synced, and asked for their accounts only). run fails on any other
// outcome.
func TestTinyScenarios(t *testing.T) {
	var out bytes.Buffer
	err := run(options{scenarios: "2x150,7", workload: referenceWorkload, export: true, shards: 2, spread: "3"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	text := out.String()
	for _, want := range []string{
		"| 2 × 150 posts | first | 300 | 300 |",
		"| 2 × 150 posts | incremental | 300 | 0 |",
		"| 2.00 (2) |",
		"--shard i/2 over 7 accounts, reference",
		"every account in exactly one shard: true",
		"--shard i/3 over 7 accounts, reference: every account in exactly one shard: true",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in\n%s", want, text)
		}
	}
}

// -browse serves each scenario's archive with the browse command, pages
// and searches included; run fails if a page is not served.
func TestTinyBrowse(t *testing.T) {
	var out bytes.Buffer
	if err := run(options{scenarios: "1x150", export: true, browse: true}, &out); err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`\| 1 × 150 posts \| 150 \| [0-9.]+ s \| [0-9.]+ s \| [0-9.]+ ms \| [0-9.]+ ms \| [0-9]+ MiB \|`).MatchString(out.String()) {
		t.Errorf("no browse figures in\n%s", out.String())
	}
}

// List sizes are drawn as the cost benchmark draws them: its 200 users
// are the first 200 accounts of a scenario.
func TestSizesAreTheCostBenchmarks(t *testing.T) {
	w, err := costbench.LoadWorkload(referenceWorkload)
	if err != nil {
		t.Fatal(err)
	}
	script, err := costbench.NewScript(w, costbench.PerUser)
	if err != nil {
		t.Fatal(err)
	}
	sizes := initialSizes(w, w.Users+50)
	for u, list := range script.Initial {
		if sizes[u] != len(list) {
			t.Fatalf("user %d: %d posts, the cost benchmark seeds %d", u, sizes[u], len(list))
		}
	}
}

func TestParseScenario(t *testing.T) {
	w := &costbench.Workload{Name: "w", Seed: 1, InitialBookmarks: []costbench.Bucket{{Share: 1, Min: 5, Max: 5}}}
	for in, want := range map[string]string{"1x1000000": "1 × 1,000,000 posts", "3": "3 accounts, w", "10000x0": "10,000 × 0 posts"} {
		sc, err := parseScenario(in, w)
		if err != nil || sc.Name != want {
			t.Errorf("%q: %q, %v; want %q", in, sc.Name, err, want)
		}
	}
	for _, bad := range []string{"", "x", "0", "2x", "-1x5", "ax5"} {
		if _, err := parseScenario(bad, w); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if _, err := parseScenario("5", nil); err == nil {
		t.Error("a drawn scenario without a workload accepted")
	}
}

// A child's peak RSS is its own. (Its rusage would report at least this
// process's: Go starts children with vfork, and exec records the parent's
// high-water mark as the child's.)
func TestPeakRSSIsTheChilds(t *testing.T) {
	if _, err := os.Stat("/proc/self/status"); err != nil {
		t.Skip("no /proc: the rusage figure is an upper bound")
	}
	// The ballast is far above what the child holds, so that a child
	// loaded by other tests running beside it is not taken for the parent.
	const ballastSize = 512 << 20
	ballast := make([]byte, ballastSize)
	for i := range ballast {
		ballast[i] = 1 // resident
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := runProcess(self, []string{childExport, "--help"}, nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if p.RSS == 0 || p.RSS > ballastSize/2 {
		t.Errorf("the child's peak RSS is %d MiB; this process holds %d MiB", p.RSS>>20, ballastSize>>20)
	}
	runtime.KeepAlive(ballast)
}
