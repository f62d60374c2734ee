package main

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"

	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/test/costbench"
)

// scenario is a set of accounts and their list sizes.
type scenario struct {
	Name  string
	Sizes []int // list length of each account, in spec order
}

// parseScenario reads "A" (A accounts, sizes drawn from the workload's
// initial_bookmarks) or "AxP" (A accounts of P posts each).
func parseScenario(s string, w *costbench.Workload) (scenario, error) {
	accounts, posts, fixed := strings.Cut(s, "x")
	a, err := strconv.Atoi(accounts)
	if err != nil || a < 1 {
		return scenario{}, fmt.Errorf("scenario %q: want ACCOUNTS or ACCOUNTSxPOSTS, e.g. 10000 or 1x1000000", s)
	}
	if !fixed {
		if w == nil {
			return scenario{}, fmt.Errorf("scenario %q draws list sizes from a workload file: give -workload", s)
		}
		return scenario{Name: fmt.Sprintf("%s accounts, %s", thousands(a), w.Name), Sizes: initialSizes(w, a)}, nil
	}
	p, err := strconv.Atoi(posts)
	if err != nil || p < 0 {
		return scenario{}, fmt.Errorf("scenario %q: posts per account must be a number >= 0", s)
	}
	sizes := make([]int, a)
	for i := range sizes {
		sizes[i] = p
	}
	return scenario{Name: fmt.Sprintf("%s × %s posts", thousands(a), thousands(p)), Sizes: sizes}, nil
}

// initialSizes draws the list length of each of n users as the cost
// benchmark does (test/costbench NewScript): a bucket of initial_bookmarks
// by share, then a size uniform in it, from the same PCG stream, so the
// first w.Users sizes are the cost benchmark's.
func initialSizes(w *costbench.Workload, n int) []int {
	rng := rand.New(rand.NewPCG(w.Seed, w.Seed^0x636f737462656e63)) // "costbenc"
	sizes := make([]int, n)
	for u := range sizes {
		b := w.InitialBookmarks[pickBucket(rng, w.InitialBookmarks)]
		sizes[u] = b.Min
		if b.Max > b.Min {
			sizes[u] += rng.IntN(b.Max - b.Min + 1)
		}
	}
	return sizes
}

func pickBucket(rng *rand.Rand, buckets []costbench.Bucket) int {
	x := rng.Float64()
	for i, b := range buckets {
		if x < b.Share {
			return i
		}
		x -= b.Share
	}
	for i := len(buckets) - 1; i >= 0; i-- { // rounding left x above the last share
		if buckets[i].Share > 0 {
			return i
		}
	}
	return len(buckets) - 1
}

// posts is the scenario's total of posts.
func (s scenario) posts() int {
	n := 0
	for _, p := range s.Sizes {
		n += p
	}
	return n
}

// userID is the X user id of the i-th account.
func userID(i int) string { return strconv.Itoa(1_000_001 + i) }

// seed starts a simulator on loopback (rate limits off: the benchmark
// measures the program, not X's 180 requests per 15 minutes) holding the
// scenario's lists, and returns it with one access token per account.
func (s scenario) seed() (*xsim.Server, []string, error) {
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		return nil, nil, err
	}
	tokens := make([]string, len(s.Sizes))
	for i, n := range s.Sizes {
		id := userID(i)
		sim.AddUser(id, "user"+id)
		sim.SeedBookmarks(id, n)
		tokens[i] = sim.IssueToken(id)
	}
	return sim, tokens, nil
}

// writeSpec writes a CloudQuery spec file for the accounts, all tables,
// as a user of the exporter or of `cloudquery sync` would; with content,
// the authors and referenced posts too, and the photos stored.
func writeSpec(path, baseURL string, tokens []string, concurrency int, content bool) error {
	if len(tokens) == 0 {
		return errors.New("no accounts")
	}
	var b strings.Builder
	fmt.Fprintf(&b, "kind: source\nspec:\n  name: x\n  path: cq-source-x/x\n  registry: local\n  version: v0.0.0\n  tables: [\"*\"]\n  destinations: [\"file\"]\n  spec:\n    base_url: %q\n", baseURL)
	// A list of a million posts is past the default cap on billed posts
	// (far past any list X serves): the benchmark reads it whole.
	b.WriteString("    planner: {max_billed_posts: 0}\n")
	if concurrency > 0 {
		fmt.Fprintf(&b, "    concurrency: %d\n", concurrency)
	}
	if content {
		b.WriteString("    content: {authors: true, referenced_posts: true}\n    media_files: {}\n")
	}
	b.WriteString("    accounts:\n")
	for i, tok := range tokens {
		fmt.Fprintf(&b, "      - user_id: %q\n        access_token: %q\n", userID(i), tok)
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// thousands writes n with comma separators.
func thousands(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + thousands(-n)
	}
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
