package main

import (
	"os"
	"path/filepath"
	"testing"
)

// docs/tables/ must be what the table definitions generate.
func TestTableDocsAreFresh(t *testing.T) {
	dir := t.TempDir()
	if err := generate(dir); err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	committed := filepath.Join("..", "..", "docs", "tables")
	have, err := os.ReadDir(committed)
	if err != nil {
		t.Fatalf("docs/tables is missing: run `go run ./tools/docgen`: %v", err)
	}
	if len(have) != len(want) {
		t.Fatalf("docs/tables has %d files, the tables generate %d: run `go run ./tools/docgen`", len(have), len(want))
	}
	for _, e := range want {
		generated, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		current, err := os.ReadFile(filepath.Join(committed, e.Name()))
		if err != nil || string(current) != string(generated) {
			t.Errorf("docs/tables/%s is stale: run `go run ./tools/docgen`", e.Name())
		}
	}
}
