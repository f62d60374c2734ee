package export_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/cli"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/test/synctest"
)

// tableFamilies are the tables whose keys a recovery could write twice,
// by how their rows are written: a bookmark once, its content with it,
// folders as a snapshot per run, and the histories of runs, changes and
// compliance findings.
var tableFamilies = map[string][]string{
	"bookmarks": {"x_bookmarks"},
	"content":   {"x_bookmark_authors", "x_bookmark_media", "x_bookmark_referenced_posts"},
	"snapshots": {"x_bookmark_folders", "x_bookmark_folder_posts"},
	"histories": {"x_api_usage", "x_bookmark_changes", "x_post_compliance"},
}

// recoveries are the ways docs/export.md ("When something goes wrong") has
// a user recover an archive: each damages a with three runs in it, the
// second of which wrote the bookmarks in second, then repairs.
var recoveries = map[string]func(t *testing.T, a *exportDir, second []string){
	"an x_bookmarks file removed by hand": func(t *testing.T, a *exportDir, second []string) {
		files := parquetFiles(t, a.dir, "x_bookmarks")
		if err := os.Remove(files[1]); err != nil {
			t.Fatal(err)
		}
		if rep := a.repair(); rep.Stray["x_bookmark_authors"] != len(second) {
			t.Errorf("repair found the authors of %d posts with no bookmark row, want the %d of the file removed", rep.Stray["x_bookmark_authors"], len(second))
		}
	},
	"a damaged x_bookmarks file": func(t *testing.T, a *exportDir, _ []string) {
		files := parquetFiles(t, a.dir, "x_bookmarks")
		if err := os.Truncate(files[1], 100); err != nil {
			t.Fatal(err)
		}
		a.repair()
	},
	"the state deleted": func(t *testing.T, a *exportDir, _ []string) {
		if err := os.Remove(a.statePath()); err != nil {
			t.Fatal(err)
		}
		a.repair()
	},
	"the state damaged": func(t *testing.T, a *exportDir, _ []string) {
		state := a.readState()
		a.writeState(state[:len(state)/2])
		a.repair()
	},
	"a committed run's staged x_bookmarks file removed": func(t *testing.T, a *exportDir, _ []string) {
		a.sim.SeedBookmarks("1001", 7)
		step, crashed := crashAt("committed")
		func() {
			defer crashed(t)
			a.run(step)
		}()
		staged, _ := filepath.Glob(filepath.Join(a.dir, ".staging", "*", "x_bookmarks.parquet"))
		if len(staged) != 1 {
			t.Fatalf("staged x_bookmarks files: %v", staged)
		}
		if err := os.Remove(staged[0]); err != nil {
			t.Fatal(err)
		}
		a.repair()
	},
}

// After every documented recovery, and after the export, the compaction
// and the `bookmarks add` that follow it, no key of any table is in the
// archive twice: the posts whose x_bookmarks rows were lost are read again
// and their bookmark rows written, and their content rows, which the
// content tables still hold, are not written again.
func TestNoKeyIsWrittenTwiceAfterARecovery(t *testing.T) {
	for name, recover := range recoveries {
		t.Run(name, func(t *testing.T) {
			a, second := archiveWithContent(t)
			// Some of the posts of the second run leave the list: no export
			// reads them again, and `bookmarks add` saves them back.
			for _, id := range second[:3] {
				a.sim.Unbookmark("1001", id)
			}
			recover(t, a, second)
			a.mustRun()
			checkNoKeyTwice(t, a, "after the export")

			if _, err := archive.Compact(a.dir, archive.CompactOptions{CurrentMonth: true}); err != nil {
				t.Fatal(err)
			}
			checkNoKeyTwice(t, a, "after compact")

			ids := filepath.Join(t.TempDir(), "ids.txt")
			os.WriteFile(ids, []byte(strings.Join(second[:3], "\n")), 0o644)
			var out bytes.Buffer
			if code := cli.Run(context.Background(), []string{"bookmarks", "add", "--spec", a.specFile, "--out", a.dir, "--ids", ids, "--user", "1001", "--yes"},
				strings.NewReader(""), &out, &out); code != 0 {
				t.Fatalf("bookmarks add: exit %d\n%s", code, out.String())
			}
			a.mustRun()
			checkNoKeyTwice(t, a, "after bookmarks add and an export")
			checkArchive(t, a.dir, a.sim, a.users)
			if bytes.Contains(a.readState(), []byte(`"stray"`)) {
				t.Error("the state still records stray content rows of posts whose bookmark is written again")
			}
		})
	}
}

// archiveWithContent is an archive of every content kind and a folder,
// after three runs, and the posts the second run found.
func archiveWithContent(t *testing.T) (*exportDir, []string) {
	a := newExportDir(t, demoUser{id: "1001", bookmarks: 150, folders: 1}, demoUser{id: "1002", bookmarks: 20})
	text := specYAML(a.sim.URL(), a.users, a.tokens, `["*"]`) + allContentYAML
	src, err := cqspec.Parse([]byte(text), "spec.yml", os.LookupEnv, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	a.src, a.specFile = src, filepath.Join(t.TempDir(), "x.yml")
	if err := os.WriteFile(a.specFile, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	a.mustRun()
	second := a.sim.SeedBookmarks("1001", 12)
	a.mustRun()
	a.sim.SeedBookmarks("1001", 4)
	a.mustRun()
	if len(parquetFiles(t, a.dir, "x_bookmarks")) != 3 || len(parquetFiles(t, a.dir, "x_bookmark_authors")) < 3 {
		t.Fatalf("three runs wrote %v", everyFile(t, a.dir))
	}
	return a, second
}

// checkNoKeyTwice checks every family of tables of a's archive.
func checkNoKeyTwice(t *testing.T, a *exportDir, when string) {
	t.Helper()
	dups, err := synctest.DuplicateKeys(a.dir)
	if err != nil {
		t.Fatal(err)
	}
	for family, tables := range tableFamilies {
		t.Run(family+" "+when, func(t *testing.T) {
			for _, table := range tables {
				if n := len(dups[table]); n > 0 {
					t.Errorf("%s: %d keys written twice, e.g. %v", table, n, firstKey(dups[table]))
				}
			}
		})
	}
}

func firstKey(m map[string]int) string {
	for k := range m {
		return strings.ReplaceAll(k, "\t", ", ")
	}
	return ""
}
