package export_test

import (
	"os/exec"
	"strings"
	"testing"
)

// Dependencies point one way: the core packages (the API client, the walk,
// an account's session and the tables) import no output package — neither
// the exporter nor a Parquet writer — so a CloudQuery sync and the
// exporter run the same resolvers, and an output format is changed in one
// place.
func TestCorePackagesImportNoOutputPackage(t *testing.T) {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	const module = "github.com/cq-source-x/cq-source-x/"
	core := []string{"client", "walk", "account", "resources"}
	args := []string{"list", "-deps"}
	for _, p := range core {
		args = append(args, module+p)
	}
	out, err := exec.Command(goCmd, args...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, module+"export") || strings.HasPrefix(dep, "github.com/apache/arrow-go/v18/parquet") {
			t.Errorf("a core package (%s) depends on the output package %s", strings.Join(core, ", "), dep)
		}
	}
}
