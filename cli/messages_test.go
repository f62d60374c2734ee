package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/auth"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// specFile writes a spec whose plugin spec is base_url, max_attempts 1,
// then the given YAML lines (indented as the plugin spec's keys), into dir.
func specFile(t *testing.T, dir, baseURL string, plugin ...string) string {
	t.Helper()
	text := fmt.Sprintf("kind: source\nspec:\n  name: x\n  path: ./cq-source-x\n  registry: local\n  tables: [\"*\"]\n  destinations: [\"file\"]\n"+
		"  spec:\n    base_url: %s\n    max_attempts: 1\n    %s\n", baseURL, strings.Join(plugin, "\n    "))
	path := filepath.Join(dir, "spec.yml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func startSim(t *testing.T) *xsim.Server {
	t.Helper()
	return startSimWith(t, xsim.Options{})
}

// startSimWith starts a simulator with the options on the wall clock.
func startSimWith(t *testing.T, o xsim.Options) *xsim.Server {
	t.Helper()
	sim := xsim.New(o)
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	return sim
}

// With planner.max_billed_posts below the size of the list, the first export
// archives the newest posts and stops; the next ones do not bill those posts
// again only to stop at the same place: they stop before billing, saying
// which account and table, the cap, what the last run reached and what to
// do. The folders are done meanwhile, so the exit code is 3. With the cap
// raised once the first sync completes.
func TestExport_CappedFirstSyncIsNotBilledAgain(t *testing.T) {
	sim := startSim(t)
	sim.SeedBookmarks("1001", 300)
	token := sim.IssueToken("1001")
	dir, out := t.TempDir(), t.TempDir()
	capped := specFile(t, dir, sim.URL(), "planner: {max_billed_posts: 100}", "accounts:", fmt.Sprintf("  - {user_id: \"1001\", access_token: %q}", token))
	billed := func() int { return sim.Usage("1001")[xsim.OpListBookmarks].PostsReturned }

	code, _, stderr := runCLI(t, "export", "--spec", capped, "--out", out)
	if code != ExitSomeAccountsFailed || billed() != 100 {
		t.Fatalf("first run: exit %d, billed %d:\n%s", code, billed(), stderr)
	}
	mustContain(t, stderr, "FAILED accounts[0] (user 1001): x_bookmarks: bookmarks walk stopped at the billed-post cap (planner.max_billed_posts: 100) after 100 billed posts, before reaching the end of the list",
		"raise planner.max_billed_posts once", "x_bookmarks rows written: 100\n")

	code, _, stderr = runCLI(t, "export", "--spec", capped, "--out", out)
	if code != ExitSomeAccountsFailed || billed() != 100 {
		t.Fatalf("second run: exit %d, billed %d more:\n%s", code, billed()-100, stderr)
	}
	mustContain(t, stderr, "FAILED accounts[0] (user 1001): x_bookmarks: bookmarks walk not started, nothing billed: the last sync",
		"stopped at the billed-post cap (planner.max_billed_posts: 100) after 100 billed posts", "x_bookmarks rows written: 0\n")
	if strings.Contains(stderr, "re-bookmarked") || strings.Contains(stderr, "already in the archive") {
		t.Errorf("the second run reports posts read again:\n%s", stderr)
	}

	raised := specFile(t, dir, sim.URL(), "planner: {max_billed_posts: 0}", "accounts:", fmt.Sprintf("  - {user_id: \"1001\", access_token: %q}", token))
	if code, _, stderr := runCLI(t, "export", "--spec", raised, "--out", out); code != 0 {
		t.Fatalf("run with the cap raised: exit %d:\n%s", code, stderr)
	}
	st, err := archive.ReadState(out)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(st.Archived["1001"]); n != 300 {
		t.Fatalf("archive holds %d posts, want 300", n)
	}
}

// A relative token_file is relative to the spec file, not to the directory
// the export runs in (cron runs it elsewhere).
func TestExport_RelativeTokenFileIsRelativeToTheSpecFile(t *testing.T) {
	sim := startSim(t)
	sim.SeedBookmarks("1001", 12)
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "tokens"), 0o700); err != nil {
		t.Fatal(err)
	}
	tok := &auth.StoredToken{AccessToken: sim.IssueToken("1001"), TokenType: "bearer", ClientID: "app", UserID: "1001",
		Expiry: time.Now().Add(48 * time.Hour), UpdatedAt: time.Now()}
	if err := (auth.TokenFile{Path: filepath.Join(dir, "tokens", "alice.json")}).Save(tok); err != nil {
		t.Fatal(err)
	}
	spec := specFile(t, dir, sim.URL(), "accounts:", "  - token_file: tokens/alice.json")
	t.Chdir(t.TempDir())
	code, _, stderr := runCLI(t, "export", "--spec", spec, "--out", "out", "--quiet")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	st, err := archive.ReadState("out")
	if err != nil || len(st.Archived["1001"]) != 12 {
		t.Fatalf("archive %v, %v", st, err)
	}
}

// A failure is told once: in the summary, naming the account (and its user
// only when it is known), with no log line repeating it, and the final error
// points at it; with --quiet the final error tells it, once.
func TestExport_AFailureIsPrintedOnce(t *testing.T) {
	sim := startSim(t)
	sim.SeedBookmarks("1001", 12)
	spec := specFile(t, t.TempDir(), sim.URL(), "accounts:",
		fmt.Sprintf("  - {user_id: \"1001\", access_token: %q}", sim.IssueToken("1001")),
		"  - {access_token: not-a-token}")
	for _, quiet := range []bool{false, true} {
		args := []string{"export", "--spec", spec, "--out", t.TempDir()}
		if quiet {
			args = append(args, "--quiet")
		}
		code, _, stderr := runCLI(t, args...)
		if code != ExitSomeAccountsFailed {
			t.Fatalf("exit %d, want %d:\n%s", code, ExitSomeAccountsFailed, stderr)
		}
		if n := strings.Count(stderr, "the API refused accounts[1].access_token"); n != 1 {
			t.Errorf("quiet=%v: the failure is printed %d times:\n%s", quiet, n, stderr)
		}
		for _, bad := range []string{" ERR ", "(user )", "user:"} {
			if strings.Contains(stderr, bad) {
				t.Errorf("quiet=%v: stderr has %q:\n%s", quiet, bad, stderr)
			}
		}
		if !quiet {
			mustContain(t, stderr, "FAILED accounts[1]: the API refused accounts[1].access_token (401 Unauthorized)",
				"Error: 1 account failed (accounts[1]: see FAILED above)")
		} else {
			mustContain(t, stderr, "Error: 1 account failed; the files of this run were written; the failed walks did not advance:\n  accounts[1]: the API refused accounts[1].access_token")
		}
	}
}

// A raw access_token that expired says that it cannot be refreshed, and
// what to use instead.
func TestExport_AnExpiredAccessTokenSaysItCannotBeRefreshed(t *testing.T) {
	sim := startSim(t)
	sim.SeedBookmarks("1001", 12)
	token := sim.IssueTokenWithExpiry("1001", time.Millisecond)
	time.Sleep(10 * time.Millisecond)
	spec := specFile(t, t.TempDir(), sim.URL(), "accounts:", fmt.Sprintf("  - {user_id: \"1001\", access_token: %q}", token))
	code, _, stderr := runCLI(t, "export", "--spec", spec, "--out", t.TempDir())
	if code != ExitAllAccountsFailed {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitAllAccountsFailed, stderr)
	}
	mustContain(t, stderr, "FAILED accounts[0] (user 1001): the API refused accounts[0].access_token (401 Unauthorized)",
		"a raw access_token cannot be refreshed", "run `cq-source-x login` and set accounts[0].token_file instead of access_token")
	if n := strings.Count(stderr, "the API refused"); n != 1 {
		t.Errorf("told %d times (once per list walked?):\n%s", n, stderr)
	}
}

// A base_url where nothing answers says to check it, once per account, and
// the number of requests it gives is the summary's.
func TestExport_AWrongBaseURLSaysCheckBaseURL(t *testing.T) {
	spec := specFile(t, t.TempDir(), "http://127.0.0.1:1", "accounts:", "  - {user_id: \"1001\", access_token: tok}")
	code, stdout, stderr := runCLI(t, "export", "--spec", spec, "--out", t.TempDir(), "--json")
	if code != ExitAllAccountsFailed {
		t.Fatalf("exit %d, want %d:\n%s", code, ExitAllAccountsFailed, stderr)
	}
	var sum export.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`FAILED accounts\[0\] \(user 1001\): none of (\d+) requests to http://127.0.0.1:1 got an answer from the X API \(dial tcp 127.0.0.1:1: connect: connection refused\): check base_url\n`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no check-base_url line:\n%s", stderr)
	}
	if want := fmt.Sprint(sum.Accounts[0].Requests); m[1] != want {
		t.Errorf("the message counts %s requests, the summary %s", m[1], want)
	}
	if n := strings.Count(stderr, "connection refused"); n != 1 {
		t.Errorf("the refused connection is told %d times:\n%s", n, stderr)
	}
}

func mustContain(t *testing.T, got string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(got, w) {
			t.Errorf("output lacks %q:\n%s", w, got)
		}
	}
}

// A relative compliance.bearer_token_file is relative to the spec file, not
// to the directory the export runs in (cron runs it elsewhere).
func TestExport_RelativeBearerTokenFileIsRelativeToTheSpecFile(t *testing.T) {
	sim := startSimWith(t, instantJobs)
	sim.SeedBookmarks("1001", 12)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "bearer.txt"), []byte(sim.IssueAppOnlyToken()+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	spec := specFile(t, dir, sim.URL(), "accounts:", fmt.Sprintf("  - {user_id: \"1001\", access_token: %q}", sim.IssueToken("1001")),
		"compliance: {bearer_token_file: ./bearer.txt}")
	t.Chdir(t.TempDir())
	code, stdout, stderr := runCLI(t, "export", "--spec", spec, "--out", "out", "--quiet", "--json")
	if code != 0 {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	var sum export.Summary
	if err := json.Unmarshal([]byte(stdout), &sum); err != nil || sum.Compliance == nil || !sum.Compliance.OK {
		t.Fatalf("summary %+v (%v)", sum.Compliance, err)
	}
	if jobs := sim.ComplianceJobsOf("tweets"); len(jobs) != 1 || jobs[0].Status != "complete" {
		t.Fatalf("jobs of posts %+v, want one complete", jobs)
	}
}

// instantJobs are compliance jobs that end as soon as their ids are
// uploaded, on the wall clock the CLI's export runs on.
var instantJobs = xsim.Options{Compliance: xsim.ComplianceOptions{Delay: time.Nanosecond}}

// A compliance check that fails is told as a failed account is: a FAILED
// line under the summary (once), its error with --quiet, ok false in
// --json, and exit 3, the rest of the run being done: its bookmarks are
// committed.
func TestExport_AFailedComplianceCheckIsToldAndTheBookmarksAreKept(t *testing.T) {
	for _, tc := range []struct {
		name, compliance, want string
		failJob                bool
	}{
		{name: "a user's token", compliance: "bearer_token: %s",
			want: "the compliance bearer token was refused"},
		{name: "a failed job", compliance: "bearer_token: %s", failJob: true,
			want: "failed (X gives no reason); its 12 posts are checked by a new job at the next sync"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sim := startSimWith(t, instantJobs)
			sim.SeedBookmarks("1001", 12)
			token := sim.IssueAppOnlyToken()
			if tc.name == "a user's token" {
				token = sim.IssueToken("1002")
			}
			if tc.failJob {
				sim.FailComplianceJobs(100) // every job, its replacement too, in both runs
			}
			compliance := "compliance: {" + strings.Replace(tc.compliance, "%s", token, 1) + "}"
			spec := specFile(t, t.TempDir(), sim.URL(), "accounts:", fmt.Sprintf("  - {user_id: \"1001\", access_token: %q}", sim.IssueToken("1001")), compliance)
			out := t.TempDir()

			code, _, stderr := runCLI(t, "export", "--spec", spec, "--out", out)
			if code != ExitSomeAccountsFailed {
				t.Fatalf("exit %d, want %d:\n%s", code, ExitSomeAccountsFailed, stderr)
			}
			mustContain(t, stderr, "\nFAILED compliance check: ", tc.want,
				"Error: the compliance check failed (see FAILED above); the files of this run were written; the compliance check is retried at the next run\n")
			if n := strings.Count(stderr, tc.want); n != 1 {
				t.Errorf("the failure is told %d times:\n%s", n, stderr)
			}
			if st, err := archive.ReadState(out); err != nil || len(st.Archived["1001"]) != 12 {
				t.Fatalf("the bookmarks were not committed: %v, %v", st, err)
			}

			code, stdout, stderr := runCLI(t, "export", "--spec", spec, "--out", out, "--quiet", "--json")
			if code != ExitSomeAccountsFailed {
				t.Fatalf("--quiet: exit %d, want %d:\n%s", code, ExitSomeAccountsFailed, stderr)
			}
			mustContain(t, stderr, "Error: the compliance check failed; the files of this run were written; the compliance check is retried at the next run:\n  compliance check: ", tc.want)
			var sum export.Summary
			if err := json.Unmarshal([]byte(stdout), &sum); err != nil {
				t.Fatal(err)
			}
			if sum.OK || sum.Compliance == nil || sum.Compliance.OK || !strings.Contains(sum.Compliance.Error, tc.want) || !sum.Accounts[0].OK {
				t.Errorf("--json: ok %v, compliance %+v, account %+v", sum.OK, sum.Compliance, sum.Accounts[0])
			}
		})
	}
}
