package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Dependencies point one way. Its packages, from the bottom up:
//
//	leaves   ids and the internal/ utilities: nothing of the module above them
//	core     plan, outbox, billing; client, auth, walk; media/store, media; spec; archived; account; compliance; resources; plugin
//	output   cqspec, archive, archive/pqfile, export, browse
//	commands bookmarks: the bookmark commands' operations on an archive
//	program  sandbox (and its simulator, sandbox/xsim), cli, main
//
// so that a CloudQuery sync and the exporter run the same resolvers, an
// output format is changed in one place, and a utility is used anywhere.
const module = "github.com/cq-source-x/cq-source-x/"

var (
	core   = []string{"plan", "outbox", "billing", "client", "auth", "walk", "media/store", "media", "spec", "archived", "account", "compliance", "resources", "plugin"}
	output = []string{"cqspec", "archive", "archive/pqfile", "export", "browse", "bookmarks", "sandbox", "cli"}
)

// packages lists the module's packages (but the tests' and tools'), each
// with its direct imports and its whole dependencies, of the module.
func packages(t *testing.T) map[string][2][]string {
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command is not on PATH")
	}
	out, err := exec.Command(goCmd, "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string][2][]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Split(line, "|")
		name := strings.TrimPrefix(f[0], module)
		if strings.HasPrefix(name, "test/") || strings.HasPrefix(name, "tools/") {
			continue
		}
		var lists [2][]string
		for i, all := range f[1:] {
			for _, dep := range strings.Fields(all) {
				switch {
				case strings.HasPrefix(dep, module):
					lists[i] = append(lists[i], strings.TrimPrefix(dep, module))
				case i == 1 && strings.HasPrefix(dep, "github.com/apache/arrow-go/v18/parquet"):
					lists[i] = append(lists[i], dep)
				}
			}
		}
		pkgs[name] = lists
	}
	return pkgs
}

// No core package depends on an output package, nor on a Parquet writer.
func TestTheCoreDependsOnNoOutputPackage(t *testing.T) {
	pkgs := packages(t)
	for _, p := range core {
		for _, dep := range pkgs[p][1] {
			if slices.Contains(output, dep) || strings.HasPrefix(dep, "github.com/") {
				t.Errorf("%s depends on %s", p, dep)
			}
		}
	}
}

// The output packages know nothing of the bookmark commands' operations.
func TestTheOutputPackagesDependOnNoCommand(t *testing.T) {
	pkgs := packages(t)
	for _, p := range []string{"cqspec", "archive", "archive/pqfile", "export"} {
		if slices.Contains(pkgs[p][1], "bookmarks") {
			t.Errorf("%s depends on bookmarks", p)
		}
	}
}

// The internal/ utilities (and ids) import, of the module, only one
// another: any package may use them, and none leads back up.
func TestTheUtilitiesImportNothingAboveThem(t *testing.T) {
	pkgs := packages(t)
	leaf := func(p string) bool { return p == "ids" || strings.HasPrefix(p, "internal/") }
	for p, lists := range pkgs {
		if !leaf(p) {
			continue
		}
		for _, imp := range lists[0] {
			if !leaf(imp) {
				t.Errorf("the utility %s imports %s", p, imp)
			}
		}
	}
	if imports := pkgs["ids"][0]; len(imports) > 0 {
		t.Errorf("ids imports %v", imports)
	}
}

// The API client, the login and the walk know nothing of each other, nor
// X's prices of anything above them; the Parquet writer nothing of the
// module.
func TestTheClientTheLoginAndTheWalkStandApart(t *testing.T) {
	pkgs := packages(t)
	for _, p := range []string{"client", "auth", "walk"} {
		for _, other := range []string{"client", "auth", "walk"} {
			if p != other && slices.Contains(pkgs[p][1], other) {
				t.Errorf("%s depends on %s", p, other)
			}
		}
	}
	for _, imp := range pkgs["billing"][0] {
		if imp != "ids" && !strings.HasPrefix(imp, "internal/") {
			t.Errorf("billing imports %s", imp)
		}
	}
	if imports := pkgs["archive/pqfile"][0]; len(imports) > 0 {
		t.Errorf("archive/pqfile imports %v", imports)
	}
	if imports := pkgs["plan"][0]; len(imports) > 0 {
		t.Errorf("plan imports %v", imports)
	}
}

// The archive is the output directory's protocol: it knows nothing of the
// plugin's tables, resolvers or compliance checks, which its callers
// (export, the commands) give it what it needs of.
func TestTheArchiveKnowsNothingOfThePlugin(t *testing.T) {
	for _, imp := range packages(t)["archive"][0] {
		if slices.Contains([]string{"plugin", "resources", "compliance"}, imp) {
			t.Errorf("archive imports %s", imp)
		}
	}
}

// The media store knows nothing of X nor of the sync, and the fetcher only
// the API client's deadlines: both serve a CloudQuery sync and the
// exporter alike.
func TestTheMediaPackagesStandBelowTheAccounts(t *testing.T) {
	pkgs := packages(t)
	allowed := map[string][]string{"media/store": nil, "media": {"media/store", "client"}}
	for p, ok := range allowed {
		for _, imp := range pkgs[p][0] {
			if !strings.HasPrefix(imp, "internal/") && !slices.Contains(ok, imp) {
				t.Errorf("%s imports %s", p, imp)
			}
		}
	}
}
