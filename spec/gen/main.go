// Command gen writes spec/schema.json from the Spec type and its comments.
package main

import (
	"log"
	"os"
	"path/filepath"
	"runtime"

	"github.com/cq-source-x/cq-source-x/spec"
)

func main() {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		log.Fatal("cannot find the source directory")
	}
	dir := filepath.Join(filepath.Dir(file), "..")
	data, err := spec.GenerateSchema(dir)
	if err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "schema.json"), data, 0o644); err != nil {
		log.Fatal(err)
	}
}
