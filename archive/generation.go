package archive

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/dirsync"
)

// A new set of a table's files is a generation, in
// DIR/.tables/<table>/<generation>/, which DIR/<table> links to
// (docs/design/exporter.md).
const (
	tablesDir   = ".tables"
	retiredName = "retired" // no generation's name: theirs are a time and a run id
)

// swapPath is where the link to a new generation is made before it
// replaces DIR/<table>, and where the plain directory it replaced lands.
func swapPath(out, table string) string {
	return filepath.Join(out, "."+table+".swap")
}

// currentGeneration is the generation DIR/<table> links to; "" when it is
// a plain directory, or missing.
func currentGeneration(out, table string) (string, error) {
	path := filepath.Join(out, table)
	fi, err := os.Lstat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return "", nil
	case err != nil:
		return "", err
	case fi.Mode()&fs.ModeSymlink == 0:
		return "", nil
	}
	target, err := os.Readlink(path)
	if err != nil {
		return "", err
	}
	gen, ok := strings.CutPrefix(filepath.ToSlash(target), tablesDir+"/"+table+"/")
	if !ok || gen == "" || strings.Contains(gen, "/") {
		return "", fmt.Errorf("%s links to %s, which is not a generation of the table (%s): was it changed by hand?", path, target, filepath.Join(tablesDir, table, "<generation>"))
	}
	return gen, nil
}

// replaceFiles makes DIR/<table> a new generation of it, named for now:
// the files of keep (names in DIR/<table>) hard linked, and those write
// writes in its directory. It returns the generation, and the set of files
// it replaced, for the caller to retire or remove.
func replaceFiles(out, table string, now time.Time, keep []string, write func(dir string) error, step func(string), what string) (gen, old string, err error) {
	gen = now.Format(fileTimeLayout) + "-" + newRunID()
	dir := filepath.Join(out, tablesDir, table, gen)
	if err := dirsync.Mkdir(filepath.Dir(dir), gen); err != nil {
		return "", "", err
	}
	if err := write(dir); err != nil {
		return "", "", err
	}
	for _, name := range keep {
		if err := os.Link(filepath.Join(out, table, name), filepath.Join(dir, name)); err != nil {
			return "", "", err
		}
	}
	if err := dirsync.Sync(dir); err != nil {
		return "", "", err
	}
	step(what + " staged " + table)
	if old, err = switchGeneration(out, table, gen); err != nil {
		return "", "", err
	}
	step(what + " committed " + table)
	return gen, old, nil
}

// switchGeneration makes DIR/<table> the generation gen, atomically, and
// returns what to retire once that is durable: the previous generation, or
// the plain directory it replaced.
func switchGeneration(out, table, gen string) (old string, err error) {
	path, link := filepath.Join(out, table), swapPath(out, table)
	prev, err := currentGeneration(out, table)
	if err != nil {
		return "", err
	}
	if err := os.RemoveAll(link); err != nil {
		return "", err
	}
	if err := os.Symlink(filepath.Join(tablesDir, table, gen), link); err != nil {
		return "", err
	}
	if prev != "" {
		if err := os.Rename(link, path); err != nil {
			return "", err
		}
		return filepath.Join(out, tablesDir, table, prev), dirsync.Sync(out)
	}
	if err := exchange(link, path); err != nil {
		os.Remove(link)
		return "", fmt.Errorf("replacing the directory %s by a link to its new generation: %w", path, err)
	}
	return link, dirsync.Sync(out)
}

// cleanGenerations removes what compactions that did not finish left: a
// link that never replaced its table's directory, a directory a link
// replaced, and every generation no table links to.
func cleanGenerations(out string, step func(string)) error {
	cleaned := false
	tables, err := TablesIn(out)
	if err != nil {
		return err
	}
	for _, table := range tables {
		if fi, err := os.Lstat(swapPath(out, table)); err == nil {
			// A directory there is the one a switch replaced: retire it.
			// A link never replaced anything.
			if fi.IsDir() {
				err = retire(out, table, swapPath(out, table))
			} else {
				err = os.Remove(swapPath(out, table))
			}
			if err != nil {
				return err
			}
			cleaned = true
		}
		entries, err := os.ReadDir(filepath.Join(out, tablesDir, table))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		} else if err != nil {
			return err
		}
		current, err := currentGeneration(out, table)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.Name() != current && e.Name() != retiredName {
				if err := removeDurably(filepath.Join(out, tablesDir, table, e.Name())); err != nil {
					return err
				}
				cleaned = true
			}
		}
	}
	if !cleaned {
		return nil
	}
	if err := dirsync.Sync(out); err != nil {
		return err
	}
	step("removed what a compaction left")
	return nil
}

// retire makes old, the set of files DIR/<table> linked to before a switch,
// the table's retired set, in place of the one retired before it: a
// compaction ago, long enough for any listing of it to have ended.
func retire(out, table, old string) error {
	parent := filepath.Join(out, tablesDir, table)
	retired := filepath.Join(parent, retiredName)
	if err := os.RemoveAll(retired); err != nil {
		return err
	}
	if err := os.Rename(old, retired); err != nil {
		return err
	}
	if err := dirsync.Sync(parent); err != nil {
		return err
	}
	return dirsync.Sync(filepath.Dir(old))
}
