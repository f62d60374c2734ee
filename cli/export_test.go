package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Run(context.Background(), args, strings.NewReader(""), &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

// writeSpec writes a spec for the simulator with the given accounts
// (user id → token).
func writeSpec(t *testing.T, baseURL string, accounts [][2]string) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "kind: source\nspec:\n  name: x\n  path: ./cq-source-x\n  registry: local\n  tables: [\"*\"]\n  destinations: [\"file\"]\n  spec:\n    base_url: %s\n    max_attempts: 1\n    accounts:\n", baseURL)
	for _, a := range accounts {
		fmt.Fprintf(&b, "      - user_id: %q\n        access_token: %q\n", a[0], a[1])
	}
	path := filepath.Join(t.TempDir(), "spec.yml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func keysOf(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

// TestExport_JSONAndFailedAccount: an account whose token the API rejects
// makes the exit code ExitSomeAccountsFailed (3) and is named; the other account is exported;
// --json prints the summary in its documented shape.
func TestExport_JSONAndFailedAccount(t *testing.T) {
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks("1001", 12)
	sim.SeedBookmarks("1002", 5)
	spec := writeSpec(t, sim.URL(), [][2]string{{"1001", sim.IssueToken("1001")}, {"1002", "revoked-or-wrong-token"}})
	out := t.TempDir()

	code, stdout, stderr := runCLI(t, "export", "--spec", spec, "--out", out, "--json")
	if code != ExitSomeAccountsFailed {
		t.Fatalf("exit %d with one of two accounts failed, want %d; stderr:\n%s", code, ExitSomeAccountsFailed, stderr)
	}
	if !strings.Contains(stderr, "1 account failed") || !strings.Contains(stderr, "accounts[1] (user 1002)") || !strings.Contains(stderr, "401 Unauthorized") {
		t.Errorf("stderr does not name the failed account:\n%s", stderr)
	}
	if !strings.Contains(stderr, "FAILED accounts[1]") || !strings.Contains(stderr, "list_bookmarks") {
		t.Errorf("stderr has no summary table:\n%s", stderr)
	}

	var sum map[string]any
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatalf("stdout is not JSON: %v\n%s", err, stdout)
	}
	if got, want := keysOf(sum), "accounts,files,finished_at,ok,out,run_id,run_time,started_at,totals"; got != want {
		t.Errorf("summary keys %s, want %s", got, want)
	}
	if sum["ok"] != false {
		t.Errorf("ok = %v", sum["ok"])
	}
	accounts := sum["accounts"].([]any)
	a0, a1 := accounts[0].(map[string]any), accounts[1].(map[string]any)
	if got, want := keysOf(a0), "account,already_archived,bookmarks_written,estimated_usd,includes_missing,new_folder_entries,new_posts,ok,operations,posts_billed,requests,user_id,users_billed"; got != want {
		t.Errorf("account keys %s, want %s", got, want)
	}
	if a0["ok"] != true || a0["bookmarks_written"] != 12.0 || a0["posts_billed"] != 12.0 || a0["account"] != "accounts[0]" {
		t.Errorf("account 0: %v", a0)
	}
	if a1["ok"] != false || !strings.Contains(fmt.Sprint(a1["error"]), "401 Unauthorized") || a1["user_id"] != "1002" {
		t.Errorf("account 1: %v", a1)
	}
	op := a0["operations"].([]any)[0].(map[string]any)
	if got, want := keysOf(op), "errors,estimated_usd,includes_missing,new_posts,ok_responses,operation,posts_billed,posts_returned,rate_limit_wait_seconds,rate_limit_waits,rate_limited,requests,users_billed,walk_outcomes,walks"; got != want {
		t.Errorf("operation keys %s, want %s", got, want)
	}
	if op["operation"] != "list_bookmarks" || op["walk_outcomes"] != "reached_end" {
		t.Errorf("operation %v", op)
	}
	totals := sum["totals"].(map[string]any)
	if got, want := keysOf(totals), "already_archived,bookmarks_written,estimated_usd,includes_missing,new_folder_entries,new_posts,posts_billed,requests,users_billed"; got != want {
		t.Errorf("totals keys %s, want %s", got, want)
	}
	files := sum["files"].([]any)
	if len(files) != 10 { // a first export writes a file of every table, rows or not
		t.Errorf("files %v", files)
	}
	for _, f := range files {
		f := f.(map[string]any)
		if _, err := os.Stat(f["path"].(string)); err != nil || keysOf(f) != "path,rows,table" {
			t.Errorf("file %v: %v", f, err)
		}
	}

	// --quiet prints nothing but the errors.
	code, stdout, stderr = runCLI(t, "export", "--spec", spec, "--out", out, "--quiet")
	if code != ExitSomeAccountsFailed || stdout != "" || strings.Contains(stderr, "est. USD") || strings.Contains(stderr, " ERR ") || !strings.Contains(stderr, "accounts[1] (user 1002)") {
		t.Errorf("--quiet: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// A failed table is not a failed account: folders down (every request
// answers 5xx past the retries), bookmarks fine. The bookmarks are written,
// the exit code is 3, and the summary and --json name the table that failed;
// 4 only when nothing of any account was done.
func TestExport_AFailedTableIsNotAFailedAccount(t *testing.T) {
	sim := startSimWith(t, xsim.Options{Faults: xsim.Faults{ServerErrorRate: 1, Operations: []string{xsim.OpListFolders}}})
	sim.SeedBookmarks("1001", 12)
	spec := specFile(t, t.TempDir(), sim.URL(), "retry_budget: 0s", "accounts:", fmt.Sprintf("  - {user_id: \"1001\", access_token: %q}", sim.IssueToken("1001")))
	code, stdout, stderr := runCLI(t, "export", "--spec", spec, "--out", t.TempDir(), "--json")
	if code != ExitSomeAccountsFailed {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitSomeAccountsFailed, stderr)
	}
	mustContain(t, stderr, "FAILED accounts[0] (user 1001): x_bookmark_folders: listing bookmark folders: x api: list_folders: 5",
		"x_bookmarks rows written: 12\n", "Error: 1 account failed (accounts[0] (x_bookmark_folders): see FAILED above)")
	var sum export.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if a := sum.Accounts[0]; a.OK || !slices.Equal(a.FailedTables, []string{"x_bookmark_folders"}) || a.BookmarksWritten != 12 {
		t.Errorf("account %+v", a)
	}

	// Folders and bookmarks down: nothing done, 4.
	sim.SetFaults(xsim.Faults{ServerErrorRate: 1, Operations: []string{xsim.OpListFolders, xsim.OpListBookmarks}})
	code, stdout, stderr = runCLI(t, "export", "--spec", spec, "--out", t.TempDir(), "--json")
	if code != ExitAllAccountsFailed {
		t.Fatalf("everything down: exit %d, want %d:\n%s", code, ExitAllAccountsFailed, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	if a := sum.Accounts[0]; !slices.Equal(a.FailedTables, []string{"x_bookmark_folders", "x_bookmarks"}) {
		t.Errorf("everything down: failed tables %v", a.FailedTables)
	}
}

func TestExport_UsageErrors(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--out", "x"}, "--spec FILE is required"},
		{[]string{"export", "--spec", "x.yml"}, "--out DIR is required"},
		{[]string{"export", "--sandbox", "--spec", "x.yml", "--out", "d"}, "drop --spec"},
		{[]string{"export", "--spec", "/nonexistent/spec.yml", "--out", t.TempDir()}, "reading the spec file"},
		{[]string{"export", "--sandbox", "--out", t.TempDir(), "--compression", "brotli"}, `--compression: unknown compression "brotli" (one of: gzip, lz4_raw, none, snappy, zstd)`},
	} {
		code, _, stderr := runCLI(t, c.args...)
		if code != ExitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", c.args, code, stderr, c.want)
		}
	}
	code, stdout, _ := runCLI(t, "export", "--help")
	for _, flag := range []string{"--spec", "--out", "--compression", "--json", "--quiet", "--sandbox", "docs/export.md", "Exit codes:"} {
		if !strings.Contains(stdout, flag) {
			t.Errorf("--help lacks %s:\n%s", flag, stdout)
		}
	}
	if code != 0 {
		t.Errorf("--help exit %d", code)
	}
}

// TestExport_SandboxDemo runs `export --sandbox` end to end: two runs, the
// second billed for little more than the new bookmarks.
func TestExport_SandboxDemo(t *testing.T) {
	out := filepath.Join(t.TempDir(), "demo")
	code, stdout, stderr := runCLI(t, "export", "--sandbox", "--out", out, "--json")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	var demo struct {
		Run1, Run2 export.Summary
		Changes    []string
		Comparison sandboxComparison
	}
	if err := json.Unmarshal([]byte(stdout), &demo); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	c := demo.Comparison
	if c.NewBookmarks != 14 || demo.Run2.Totals.BookmarksWritten != 14 || demo.Run1.Totals.BookmarksWritten != 3025 {
		t.Errorf("demo: %+v; run 1 wrote %d, run 2 wrote %d", c, demo.Run1.Totals.BookmarksWritten, demo.Run2.Totals.BookmarksWritten)
	}
	// Each changed list costs its new posts plus a few confirming reads.
	if c.BookmarkReads < c.NewBookmarks || c.BookmarkReads > c.NewBookmarks+8 || c.BilledPosts > 60 || c.FullReadPosts < 3000 {
		t.Errorf("run 2 read %d bookmarked posts for %d new bookmarks, billed %d in all (full read %d)", c.BookmarkReads, c.NewBookmarks, c.BilledPosts, c.FullReadPosts)
	}
	for _, want := range []string{"Run 2 read", "reading everything again would bill", "duckdb", "alice bookmarked an old post again"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	files, _ := filepath.Glob(filepath.Join(out, "x_bookmarks", "*.parquet"))
	if len(files) != 2 {
		t.Errorf("x_bookmarks files: %v", files)
	}
	// The directory is taken: a second demo there is refused.
	if code, _, stderr := runCLI(t, "export", "--sandbox", "--out", out); code != ExitUsage || !strings.Contains(stderr, "already holds an export") {
		t.Errorf("second demo in the same directory: exit %d, %s", code, stderr)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestSandbox_PrintsASpecExportAccepts starts `cq-source-x sandbox`, takes
// the spec it prints, exports with it, and stops it.
func TestSandbox_PrintsASpecExportAccepts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- Run(ctx, []string{"sandbox"}, strings.NewReader(""), &stdout, &stderr) }()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(stderr.String(), "Ctrl-C") {
		if time.Now().After(deadline) {
			t.Fatalf("no spec printed; stdout %q stderr %q", stdout.String(), stderr.String())
		}
		select {
		case code := <-done:
			t.Fatalf("sandbox exited %d: %s", code, stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	specPath := filepath.Join(t.TempDir(), "sandbox.yml")
	if err := os.WriteFile(specPath, []byte(stdout.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := cqspec.Read(specPath)
	if err != nil {
		t.Fatalf("export rejects the sandbox spec: %v\n%s", err, stdout.String())
	}
	if src.Registry != "local" || !filepath.IsAbs(src.Path) || len(src.Plugin.Accounts) != 3 {
		t.Errorf("sandbox spec: %+v", src)
	}
	if !strings.Contains(stdout.String(), "kind: destination") {
		t.Errorf("the spec has no destination document, which the CloudQuery CLI needs:\n%s", stdout.String())
	}
	code, _, errOut := runCLI(t, "export", "--spec", specPath, "--out", t.TempDir(), "--quiet")
	if code != 0 {
		t.Fatalf("export with the sandbox spec: exit %d: %s", code, errOut)
	}
	cancel()
	select {
	case code := <-done:
		if code != 0 {
			t.Errorf("sandbox exit %d: %s", code, stderr.String())
		}
	case <-time.After(5 * time.Second):
		t.Fatal("sandbox did not stop on cancel")
	}
}
