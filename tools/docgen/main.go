// Command docgen writes the Markdown documentation of the plugin's tables
// (docs/tables/) from their definitions in package resources, with every
// column's description (package tabledoc; `cq-source-x doc` writes the same
// pages). A test fails when docs/tables/ is stale: run `go run ./tools/docgen`
// after changing a table.
package main

import (
	"flag"
	"log"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/internal/tabledoc"
	"github.com/cq-source-x/cq-source-x/resources"
)

func main() {
	out := flag.String("out", "docs/tables", "directory to write the table docs to")
	flag.Parse()
	if err := generate(*out); err != nil {
		log.Fatal(err)
	}
}

// generate writes the pages of the plugin's tables and of the tables only the
// exporter's archive has.
func generate(dir string) error {
	return tabledoc.Write(dir, append(resources.Tables(), archive.Tables()...))
}
