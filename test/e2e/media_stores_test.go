package e2e

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/export"
	"github.com/cq-source-x/cq-source-x/test/synctest"
)

// storeFiles reads the media files of a store's directory by key, without
// its spool (.tmp) and its index of URLs (.urls).
func storeFiles(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.IsDir() && (d.Name() == ".tmp" || d.Name() == ".urls"):
			return filepath.SkipDir
		case d.IsDir():
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		out[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A CloudQuery sync with a file:// store and the exporter, with the same
// spec, store the same files under the same keys, and their rows of
// x_media_files name them alike.
func TestACloudQuerySyncAndTheExporterStoreTheSameFiles(t *testing.T) {
	e := newDeliveryEnv(t, 60)
	syncStore := t.TempDir()
	e.spec["media_files"] = map[string]any{"store": "file://" + filepath.ToSlash(syncStore), "videos": true}
	e.sync(nil, nil)

	pluginSpec, err := json.Marshal(e.spec)
	if err != nil {
		t.Fatal(err)
	}
	text := "kind: source\nspec:\n  name: x\n  path: ./cq-source-x\n  registry: local\n  version: v0.0.0\n  tables: [\"*\"]\n  destinations: [\"file\"]\n  spec: " + string(pluginSpec) + "\n"
	src, err := cqspec.Parse([]byte(text), "spec.yml", os.LookupEnv, e.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	if _, err := export.Run(context.Background(), export.Options{Spec: src, Out: out, Clock: e.clk}); err != nil {
		t.Fatal(err)
	}

	synced, exported := storeFiles(t, syncStore), storeFiles(t, archive.MediaPath(out))
	if len(synced) < 10 {
		t.Fatalf("the CloudQuery sync stored %d files", len(synced))
	}
	for key, data := range synced {
		if got, ok := exported[key]; !ok || string(got) != string(data) {
			t.Fatalf("the CloudQuery sync stored %s (%d bytes); the exporter %d bytes of it (%v)", key, len(data), len(got), ok)
		}
	}
	if len(exported) != len(synced) {
		t.Fatalf("the exporter stored %d files, the CloudQuery sync %d", len(exported), len(synced))
	}
	var syncKeys, exportKeys []string
	for _, row := range e.dest.rows["x_media_files"] {
		syncKeys = append(syncKeys, row["post_id"]+" "+row["media_key"]+" "+row["file_key"])
	}
	for _, row := range exportedRows(t, out, "x_media_files") {
		exportKeys = append(exportKeys, row["post_id"]+" "+row["media_key"]+" "+row["file_key"])
	}
	slices.Sort(syncKeys)
	slices.Sort(exportKeys)
	if !slices.Equal(syncKeys, exportKeys) {
		t.Fatalf("x_media_files: the CloudQuery sync's rows name %d files, the exporter's %d, not the same", len(syncKeys), len(exportKeys))
	}
}

// exportedRows reads the rows of an exported table.
func exportedRows(t *testing.T, out, table string) []map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(out, table, "*.parquet"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no file of %s in %s (%v)", table, out, err)
	}
	var all []map[string]string
	for _, p := range paths {
		_, recs, _ := synctest.ReadParquet(t, p)
		for _, rec := range recs {
			all = append(all, rows(rec)...)
			rec.Release()
		}
	}
	return all
}
