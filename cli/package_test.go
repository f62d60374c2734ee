package cli

import (
	"archive/zip"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/plugin"
	xplugin "github.com/cq-source-x/cq-source-x/plugin"
	"github.com/spf13/cobra"
)

// packageCommandFor is a's package command, with its message set and its
// output in dist.
func packageCommandFor(t *testing.T, a *app, dist string) *cobra.Command {
	t.Helper()
	cmd, _, err := a.rootCommand().Find([]string{"package"})
	if err != nil {
		t.Fatal(err)
	}
	cmd.SetContext(context.Background())
	for k, v := range map[string]string{"message": "Test release", "dist-dir": dist} {
		if err := cmd.Flags().Set(k, v); err != nil {
			t.Fatal(err)
		}
	}
	return cmd
}

// The binaries package builds say their commit (when the plugin's source
// is a git checkout) and their build date, which the SDK's build does not
// give them; the stamp file is gone afterwards.
func TestPackagedBinariesSayTheirCommitAndBuildDate(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the plugin")
	}
	host, err := buildTargets([]string{runtime.GOOS + "_" + runtime.GOARCH})
	if err != nil {
		t.Skip(err)
	}
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	dist := t.TempDir()
	head, gitErr := exec.Command("git", "-C", "..", "rev-parse", "HEAD").Output()
	start := time.Now().UTC().Truncate(time.Second)
	if err := a.pack(packageCommandFor(t, a, dist), "v1.2.3", "..", host); err != nil {
		t.Fatal(err)
	}
	end := time.Now()
	if _, err := os.Stat(filepath.Join("..", releaseStampFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the stamp file is left: %v", err)
	}
	out, err := exec.Command(unzipBinary(t, dist), "version", "--json").Output()
	if err != nil {
		t.Fatal(err)
	}
	var b xplugin.Build
	if err := json.Unmarshal(out, &b); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if b.Version != "v1.2.3" {
		t.Errorf("version %q", b.Version)
	}
	if date, err := time.Parse(time.RFC3339, b.Date); err != nil || date.Before(start) || date.After(end) {
		t.Errorf("build date %q, want the time package ran, between %s and %s (%v)", b.Date, start.Format(time.RFC3339), end.UTC().Format(time.RFC3339), err)
	}
	if gitErr != nil {
		t.Logf("the commit is not checked: this source is not a git checkout (%v)", gitErr)
		return
	}
	if b.Commit != strings.TrimSpace(string(head)) {
		t.Errorf("commit %q, want the checkout's %s", b.Commit, head)
	}
}

// The stamp file is removed when the build fails too.
func TestPackageRemovesTheStampWhenTheBuildFails(t *testing.T) {
	a := &app{stdin: strings.NewReader(""), stdout: io.Discard, stderr: io.Discard}
	broken := []plugin.BuildTarget{{OS: "linux", Arch: "amd64", Env: []string{"GOOS=no-such-os"}}}
	if err := a.pack(packageCommandFor(t, a, t.TempDir()), "v1.2.3", "..", broken); err == nil {
		t.Fatal("the build for GOOS=no-such-os did not fail")
	}
	if _, err := os.Stat(filepath.Join("..", releaseStampFile)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the stamp file is left: %v", err)
	}
}

// package builds with the environment's GOFLAGS, its tags merged with the
// target's and the stamp's (the SDK alone replaces GOFLAGS with the
// target's tags).
func TestPackageBuildsWithTheEnvironmentsGOFLAGS(t *testing.T) {
	for goflags, want := range map[string]string{
		"":                               "-tags=grpcnotrace,cqx_release_stamp",
		"-mod=mod":                       "-mod=mod -tags=grpcnotrace,cqx_release_stamp",
		"-tags=netgo,osusergo -x":        "-x -tags=netgo,osusergo,grpcnotrace,cqx_release_stamp",
		"--tags=grpcnotrace -a":          "-a -tags=grpcnotrace,cqx_release_stamp",
		"-tags= -trimpath":               "-trimpath -tags=grpcnotrace,cqx_release_stamp",
		`'-ldflags=-s -w' "-tags=netgo"`: `'-ldflags=-s -w' -tags=netgo,grpcnotrace,cqx_release_stamp`,
	} {
		got := stampedTargets(plugin.DefaultBuildTargets[:1], goflags)[0].Env
		if len(got) != 1 || got[0] != "GOFLAGS="+want {
			t.Errorf("GOFLAGS=%q: the target's Env is %q, want GOFLAGS=%q", goflags, got, want)
		}
	}
}

// unzipBinary extracts the binary of dist's one zip and returns its path.
func unzipBinary(t *testing.T, dist string) string {
	t.Helper()
	zips, _ := filepath.Glob(filepath.Join(dist, "*.zip"))
	if len(zips) != 1 {
		t.Fatalf("dist holds %d zips, want 1", len(zips))
	}
	zr, err := zip.OpenReader(zips[0])
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	if len(zr.File) != 1 {
		t.Fatalf("%s holds %d files, want the binary", zips[0], len(zr.File))
	}
	r, err := zr.File[0].Open()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	bin := filepath.Join(t.TempDir(), filepath.Base(zr.File[0].Name))
	f, err := os.OpenFile(bin, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := io.Copy(f, r); err != nil {
		t.Fatal(err)
	}
	return bin
}
