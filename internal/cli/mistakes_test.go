package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/cq-source-x/cq-source-x/internal/xsim"
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
