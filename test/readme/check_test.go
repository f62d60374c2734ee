package readme

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/cli"
	"github.com/cq-source-x/cq-source-x/sandbox"
)

// The commands of docs/export.md's "cq-source-x check" do what it says on
// the sandbox's archive, media files stored: check passes on the whole
// archive; with a file of x_media_files and a media file deleted by hand it
// exits 3 naming both; repair, then export, leave every row that says
// stored with its file, of the right hash, once, and every file with its
// row; and check passes again.
func TestTheCheckCommandsOfTheDocsMakeTheSandboxArchiveWhole(t *testing.T) {
	commands := docCommands(t, "### `cq-source-x check`")
	if len(commands) != 4 {
		t.Fatalf("docs/export.md shows %d commands under cq-source-x check, want check, check --read-data, repair and export: %q", len(commands), commands)
	}
	check, checkData, repair, export := commands[0], commands[1], commands[2], commands[3]
	sb, err := sandbox.Start(sandbox.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Close()
	t.Chdir(t.TempDir())
	if err := os.WriteFile("x.yml", []byte(sb.Spec("./cq-source-x", false)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, _ := filepath.Abs("x-archive")
	run := func(want int, args []string) string {
		t.Helper()
		var output strings.Builder
		if code := cli.Run(context.Background(), args, strings.NewReader(""), &output, &output); code != want {
			t.Fatalf("%v: exit %d, want %d\n%s", args, code, want, tail(output.String()))
		}
		return output.String()
	}
	run(0, export)
	sb.Mutate() // new bookmarks, and their media files: a second file of x_media_files
	run(0, export)
	run(0, check)
	run(0, checkData)
	whole := storedRows(t, out)

	rows, _ := filepath.Glob(filepath.Join(out, "x_media_files", "*.parquet"))
	if len(rows) != 2 {
		t.Fatalf("%d files of x_media_files", len(rows))
	}
	kept := storedRows(t, out, rows[1]) // the file removed is not named by the rows removed
	media := filepath.Join(archive.MediaPath(out), filepath.FromSlash(strings.Fields(kept[0])[0]))
	if err := os.Remove(rows[0]); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(media); err != nil {
		t.Fatal(err)
	}
	text := run(3, check)
	for _, want := range []string{media + ": missing", filepath.Join(out, "x_media_files") + ": "} {
		if !strings.Contains(text, want) {
			t.Fatalf("check does not name %s:\n%s", want, tail(text))
		}
	}
	run(0, repair)
	run(0, export)
	run(0, checkData)
	if again := storedRows(t, out); !slices.Equal(again, whole) {
		t.Fatalf("%d rows say stored after the repair and the export; the whole archive's were %d, each once", len(again), len(whole))
	}
	files := map[string]bool{}
	for _, r := range whole {
		files[strings.Fields(r)[0]] = true
	}
	root := archive.MediaPath(out)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			if d != nil && d.IsDir() && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		key, _ := filepath.Rel(root, path)
		sum := sha256.Sum256(data)
		if !strings.HasPrefix(filepath.Base(key), hex.EncodeToString(sum[:])) {
			t.Errorf("%s holds another file", path)
		}
		if !files[filepath.ToSlash(key)] {
			t.Errorf("%s has no row", path)
		}
		delete(files, filepath.ToSlash(key))
		return nil
	})
	if err != nil || len(files) > 0 {
		t.Fatalf("files rows say stored that DIR/media lacks: %v (%v)", slices.Sorted(maps.Keys(files)), err)
	}
}

// docCommands are the cq-source-x commands of the first sh block after
// heading in docs/export.md, each without its program name and comment.
func docCommands(t *testing.T, heading string) [][]string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/export.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, _ := strings.Cut(string(doc), heading)
	m := regexp.MustCompile("(?ms)^```sh\n(.*?)^```").FindStringSubmatch(section)
	if m == nil {
		t.Fatalf("docs/export.md has no commands under %s", heading)
	}
	var out [][]string
	for _, line := range strings.Split(strings.TrimSpace(m[1]), "\n") {
		line, _, _ = strings.Cut(line, "#")
		if f := strings.Fields(line); len(f) > 1 && f[0] == "cq-source-x" {
			out = append(out, f[1:])
		}
	}
	return out
}

// storedRows are the rows of x_media_files in out (or in the files given)
// that say stored, as "file key, user id, post id", sorted: a row written
// twice is there twice.
func storedRows(t *testing.T, out string, only ...string) []string {
	t.Helper()
	dir := out
	if len(only) > 0 {
		dir = t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "x_media_files"), 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range only {
			if err := os.Link(f, filepath.Join(dir, "x_media_files", filepath.Base(f))); err != nil {
				t.Fatal(err)
			}
		}
	}
	files, err := sandbox.StoredFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	var rows []string
	for key, uses := range files {
		for _, u := range uses {
			rows = append(rows, key+" "+u[0]+" "+u[1])
		}
	}
	slices.Sort(rows)
	return rows
}

// tail is the end of a command's output.
func tail(s string) string {
	if len(s) > 3000 {
		return "…" + s[len(s)-3000:]
	}
	return s
}
