// Command checkdist checks what `cq-source-x package` wrote, for .ci/run:
//
//	go run ./.ci/checkdist DIST VERSION
//
// package.json names the plugin, the version and each target's zip with its
// checksum; tables.json lists the plugin's tables; the spec's JSON schema and
// the hub's two pages are there; and the zip built for this machine holds a
// binary that runs and says VERSION and its build date.
package main

import (
	"archive/zip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: go run ./.ci/checkdist DIST VERSION")
		os.Exit(2)
	}
	if err := check(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "checkdist:", err)
		os.Exit(1)
	}
}

type target struct{ OS, Arch, Path, Checksum string }

func check(dist, version string) error {
	var pkg struct {
		Team, Kind, Name, Version string
		Targets                   []target `json:"supported_targets"`
	}
	if err := readJSON(filepath.Join(dist, "package.json"), &pkg); err != nil {
		return err
	}
	if pkg.Team != "cq-source-x" || pkg.Kind != "source" || pkg.Name != "x" || pkg.Version != version || len(pkg.Targets) == 0 {
		return fmt.Errorf("package.json: %+v", pkg)
	}
	var tables []struct{ Name string }
	if err := readJSON(filepath.Join(dist, "tables.json"), &tables); err != nil {
		return err
	}
	for _, want := range []string{"x_bookmarks", "x_bookmark_folders", "x_bookmark_folder_posts", "x_post_compliance", "x_api_usage"} {
		if !slices.ContainsFunc(tables, func(t struct{ Name string }) bool { return t.Name == want }) {
			return fmt.Errorf("tables.json does not list %s", want)
		}
	}
	var schema map[string]any
	if err := readJSON(filepath.Join(dist, "spec_json_schema.json"), &schema); err != nil {
		return err
	}
	docs, _ := filepath.Glob(filepath.Join(dist, "docs", "*"))
	if len(docs) != 2 || filepath.Base(docs[0]) != "configuration.md" || filepath.Base(docs[1]) != "overview.md" {
		return fmt.Errorf("docs/ holds %v, want configuration.md and overview.md", docs)
	}
	ran := false
	for _, t := range pkg.Targets {
		bin, err := checkZip(dist, t)
		if err != nil {
			return err
		}
		if t.OS == runtime.GOOS && t.Arch == runtime.GOARCH {
			out, err := exec.Command(bin, "version").CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), "cq-source-x version "+version+"\n") {
				return fmt.Errorf("%s version: %v: %s", t.Path, err, out)
			}
			if strings.Contains(string(out), "\nbuilt:   unknown") {
				return fmt.Errorf("%s version: no build date: %s", t.Path, out)
			}
			ran = true
		}
		os.Remove(bin)
	}
	if !ran {
		return fmt.Errorf("no target for %s/%s to run", runtime.GOOS, runtime.GOARCH)
	}
	fmt.Printf("%s: package.json, tables.json (%d tables), spec_json_schema.json, docs/overview.md, docs/configuration.md, %d zip(s); the %s/%s binary runs\n",
		dist, len(tables), len(pkg.Targets), runtime.GOOS, runtime.GOARCH)
	return nil
}

// checkZip checks the target's checksum and that its zip holds one binary,
// extracted to a temporary file whose path it returns.
func checkZip(dist string, t target) (string, error) {
	path := filepath.Join(dist, t.Path)
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	if t.Checksum != "sha256:"+hex.EncodeToString(sum[:]) {
		return "", fmt.Errorf("%s: checksum %s does not match package.json's %s", t.Path, hex.EncodeToString(sum[:]), t.Checksum)
	}
	zr, err := zip.OpenReader(path)
	if err != nil {
		return "", err
	}
	defer zr.Close()
	if len(zr.File) != 1 || zr.File[0].Name != strings.TrimSuffix(t.Path, ".zip") {
		return "", fmt.Errorf("%s holds %d files, want the binary %s", t.Path, len(zr.File), strings.TrimSuffix(t.Path, ".zip"))
	}
	r, err := zr.File[0].Open()
	if err != nil {
		return "", err
	}
	defer r.Close()
	f, err := os.CreateTemp("", "checkdist-*")
	if err != nil {
		return "", err
	}
	defer f.Close()
	if _, err := io.Copy(f, r); err != nil {
		return "", err
	}
	return f.Name(), f.Chmod(0o755)
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
