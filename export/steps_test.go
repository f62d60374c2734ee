package export_test

import (
	"slices"
	"strings"
	"testing"
)

// A run's crash-safety steps come in the order the package documentation
// gives: every file staged (closed and fsynced) and the staging directory
// synced before the state commits the run; the state committed before any
// file is published; the published files synced before the run is marked
// published; the staging directory removed last. A table that has a file
// already gets none from a run that wrote it no row.
func TestARunsStepsComeInTheCrashSafetyOrder(t *testing.T) {
	a := newExportDir(t, demoUser{id: "1001", bookmarks: 30, folders: 1})
	steps := func() []string {
		var got []string
		if _, err := a.run(func(name string) {
			if !strings.HasPrefix(name, "write ") {
				got = append(got, name)
			}
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	each := func(verb string, tables ...string) []string {
		out := make([]string, len(tables))
		for i, table := range tables {
			out[i] = verb + " " + table
		}
		return out
	}
	run := func(tables ...string) []string {
		return slices.Concat(
			each("staged", tables...),
			[]string{"staging synced", "commit: temporary file synced", "commit: renamed", "committed"},
			each("published", tables...),
			[]string{"published files synced", "mark published: temporary file synced", "mark published: renamed", "marked published", "staging removed"})
	}
	// Tables in the order the sync announces them: the content tables that
	// are off (authors, referenced posts) before the ones it resolves.
	every := []string{"x_bookmark_authors", "x_bookmark_referenced_posts", "x_bookmarks", "x_bookmark_media",
		"x_bookmark_folders", "x_bookmark_folder_posts", "x_media_files", "x_post_compliance", "x_api_usage", "x_bookmark_changes"}
	if got, want := steps(), run(every...); !slices.Equal(got, want) {
		t.Errorf("first run's steps:\n got %q\nwant %q", got, want)
	}
	// Nothing new: only the snapshot tables and the usage get files.
	if got, want := steps(), run("x_bookmark_folders", "x_bookmark_folder_posts", "x_api_usage"); !slices.Equal(got, want) {
		t.Errorf("second run's steps:\n got %q\nwant %q", got, want)
	}
}
