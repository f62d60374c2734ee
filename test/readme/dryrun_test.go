package readme

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/cli"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
)

// dryRunBlock matches a fenced block of docs/export.md that runs the dry
// run, and what it prints.
var dryRunBlock = regexp.MustCompile("(?ms)^```\n\\$ cq-source-x export --spec x.yml --out ./x-archive --dry-run\n(.*?)^```")

// syncTime is the time of a sync in what the dry run prints.
var syncTime = regexp.MustCompile(`sync of \d{4}-\d\d-\d\d \d\d:\d\d \w+`)

// docs/export.md's examples of `export --dry-run` are what it prints: for
// the spec the page shows, of an account of 3,000 bookmarks and a folder,
// before its first export and after it (the time of that export aside).
func TestTheDryRunExamplesAreWhatItPrints(t *testing.T) {
	doc, err := os.ReadFile("../../docs/export.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(doc[strings.Index(string(doc), "## What a run costs, before it runs"):])
	spec := yamlBlock.FindStringSubmatch(section)
	examples := dryRunBlock.FindAllStringSubmatch(section, -1)
	if spec == nil || len(examples) != 2 {
		t.Fatalf("docs/export.md shows %d dry runs (want 2) and a spec: %v", len(examples), spec != nil)
	}
	sim := xsim.New(xsim.Options{})
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Close)
	posts := sim.SeedBookmarks("1001", 3000)
	sim.CreateFolder("1001", "77", "reading")
	for _, id := range posts[:40] {
		sim.AddToFolder("1001", "77", id)
	}
	t.Setenv("X_ACCESS_TOKEN", sim.IssueToken("1001"))
	cwd := t.TempDir()
	t.Chdir(cwd)
	text := strings.Replace(spec[2], "\n  spec:\n", "\n  spec:\n    base_url: "+sim.URL()+"\n", 1)
	if err := os.WriteFile(filepath.Join(cwd, "x.yml"), []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	dryRun := func() string {
		t.Helper()
		var stdout, stderr strings.Builder
		if code := cli.Run(context.Background(), []string{"export", "--spec", "x.yml", "--out", "./x-archive", "--dry-run"}, strings.NewReader(""), &stdout, &stderr); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr.String())
		}
		return stdout.String()
	}
	if got := dryRun(); got != examples[0][1] {
		t.Errorf("before the first export, the dry run prints\n%s\ndocs/export.md shows\n%s", got, examples[0][1])
	}
	var output strings.Builder
	if code := cli.Run(context.Background(), []string{"export", "--spec", "x.yml", "--out", "./x-archive", "--quiet"}, strings.NewReader(""), &output, &output); code != 0 {
		t.Fatalf("export: exit %d\n%s", code, output.String())
	}
	got, want := dryRun(), examples[1][1]
	if syncTime.ReplaceAllString(got, "sync of T") != syncTime.ReplaceAllString(want, "sync of T") {
		t.Errorf("after it, the dry run prints\n%s\ndocs/export.md shows\n%s", got, want)
	}
}
