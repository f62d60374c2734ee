package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// Mistakes a run would otherwise find only as it goes (exit 3), or never,
// are found before any request: exit 2, and one line naming the field.
func TestExport_MistakesAreFoundBeforeAnyRequest(t *testing.T) {
	sim := startSim(t)
	var requests atomic.Int32
	sim.OnRequest(func(xsim.RequestInfo) { requests.Add(1) })
	sim.SeedBookmarks("1001", 3)
	token := sim.IssueToken("1001")
	t.Setenv("CQX_TEST_EMPTY", "")
	account := fmt.Sprintf("  - {user_id: \"1001\", access_token: %s}", token)
	export := func(dir, baseURL string, plugin ...string) []string {
		return []string{"export", "--spec", specFile(t, dir, baseURL, plugin...), "--out", filepath.Join(dir, "out")}
	}
	for _, tc := range []struct {
		name  string
		args  func(dir string) []string
		field string
	}{
		{"two accounts with one token", func(dir string) []string {
			return export(dir, sim.URL(), "accounts:", account, "  - {user_id: \"1002\", access_token: "+token+"}")
		}, "spec.accounts[1].access_token: is accounts[0].access_token too"},
		{"two accounts with one token file", func(dir string) []string {
			return export(dir, sim.URL(), "accounts:", "  - {token_file: a.json}", "  - {token_file: "+filepath.Join(dir, "a.json")+"}")
		}, "spec.accounts[1].token_file: " + "/"},
		{"a missing compliance.bearer_token_file", func(dir string) []string {
			return export(dir, sim.URL(), "accounts:", account, "compliance: {bearer_token_file: ./missing.txt}")
		}, "spec.compliance.bearer_token_file: "},
		{`base_url: ""`, func(dir string) []string { return export(dir, `""`, "accounts:", account) }, "spec.base_url: is empty"},
		{"a ${VAR} that is set but empty", func(dir string) []string {
			return export(dir, "${CQX_TEST_EMPTY}", "accounts:", account)
		}, "spec.base_url: is empty"},
		{"an --out that holds what an export did not write", func(dir string) []string {
			args := export(dir, sim.URL(), "accounts:", account)
			out := args[len(args)-1]
			os.MkdirAll(filepath.Join(out, "Documents"), 0o755)
			os.WriteFile(filepath.Join(out, "notes.txt"), nil, 0o644)
			return args
		}, "--out "},
		{"sandbox --addr 0.0.0.0", func(string) []string { return []string{"sandbox", "--addr", "0.0.0.0:0"} },
			"sandbox: --addr 0.0.0.0:0: the sandbox serves plain http"},
		{"browse --addr 0.0.0.0", func(dir string) []string { return []string{"browse", "--out", dir, "--addr", "0.0.0.0:8099"} },
			"browse: --addr 0.0.0.0:8099: the page shows the archive to whoever reaches it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCLI(t, tc.args(t.TempDir())...)
			first, _, _ := strings.Cut(stderr, "\n")
			if code != ExitUsage || !strings.HasPrefix(first, "Error: ") || !strings.Contains(first, tc.field) {
				t.Errorf("exit %d, want %d and a first line naming %q:\n%s", code, ExitUsage, tc.field, stderr)
			}
			if n := requests.Load(); n != 0 {
				t.Errorf("%d requests sent", n)
			}
		})
	}
}

// export --dry-run says, before any request, what a run can bill at most
// — each walk stops at planner.max_billed_posts, with the users the
// content kinds expand, at the spec's rates — and, once the archive has
// syncs, what they billed.
func TestExport_DryRunSaysWhatARunCanBillBeforeItBills(t *testing.T) {
	sim := startSim(t)
	var requests atomic.Int32
	sim.OnRequest(func(xsim.RequestInfo) { requests.Add(1) })
	sim.SeedBookmarks("1001", 30)
	sim.CreateFolder("1001", "77", "reading")
	dir := t.TempDir()
	spec := specFile(t, dir, sim.URL(), "accounts:", fmt.Sprintf("  - {user_id: \"1001\", access_token: %s}", sim.IssueToken("1001")),
		"content: {authors: true}")
	out := filepath.Join(dir, "out")

	code, stdout, stderr := runCLI(t, "export", "--spec", spec, "--out", out, "--dry-run")
	if code != 0 || requests.Load() != 0 {
		t.Fatalf("exit %d, %d requests:\n%s%s", code, requests.Load(), stdout, stderr)
	}
	mustContain(t, stdout, "accounts[0] (user 1001): first sync", "the bookmarks list: at most 100000 posts (post reads) and 100000 users, USD 1500.00",
		"each folder: at most 100000 posts, USD 500.00 (the run lists them first, at no cost)",
		"In all, at most 100000 posts and 100000 users, USD 1500.00", "what bounds a walk is planner.max_billed_posts (100000 posts a walk)",
		"Dry run: nothing was read from X")
	if _, err := os.Stat(out); err == nil {
		t.Error("a dry run made the output directory")
	}

	if code, _, stderr := runCLI(t, "export", "--spec", spec, "--out", out, "--quiet"); code != 0 {
		t.Fatalf("export: %d %s", code, stderr)
	}
	requests.Store(0)
	code, stdout, _ = runCLI(t, "export", "--spec", spec, "--out", out, "--dry-run")
	if code != 0 || requests.Load() != 0 {
		t.Fatalf("exit %d, %d requests:\n%s", code, requests.Load(), stdout)
	}
	mustContain(t, stdout, "accounts[0] (user 1001): incremental: the bookmarks walk holds 30 posts", "last bookmarks walks billed (newest first): 30 posts",
		"billed 30 posts, USD", "the bookmarks list: at most 100000 posts (post reads) and 100000 users, USD 1500.00",
		"each folder: at most 100000 posts, USD 500.00 (1 folder at the last sync: 100000 posts, USD 500.00)", "In all, at most 200000 posts and 100000 users, USD 2000.00")
}

// Accounts that fail for the same reason are told once: a spec of many
// accounts whose tokens X refuses prints one FAILED line, naming a few of
// them and counting the rest, with the reason as each one reads it.
func TestExport_IdenticalFailuresAreToldOnce(t *testing.T) {
	sim := startSim(t)
	var accounts [][2]string
	for i := range 6 {
		accounts = append(accounts, [2]string{fmt.Sprint(1001 + i), fmt.Sprintf("refused-token-%d", i)})
	}
	spec := writeSpec(t, sim.URL(), accounts)
	for _, quiet := range []bool{false, true} {
		args := []string{"export", "--spec", spec, "--out", t.TempDir()}
		if quiet {
			args = append(args, "--quiet")
		}
		code, _, stderr := runCLI(t, args...)
		_, errorLine, _ := strings.Cut(stderr, "Error: ")
		if code != ExitAllAccountsFailed || strings.Count(stderr, "6 accounts (accounts[0] (user 1001), accounts[1] (user 1002), accounts[2] (user 1003), accounts[3] (user 1004) and 2 more): the API refused accounts[i].access_token (401 Unauthorized)") != 1 ||
			strings.Count(stderr, "the API refused") != 1 || strings.Contains(errorLine, "accounts[5]") {
			t.Errorf("quiet %v: exit %d:\n%s", quiet, code, stderr)
		}
	}
}
