package archive

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/cq-source-x/cq-source-x/archive/pqfile"
	"github.com/cq-source-x/cq-source-x/internal/dirsync"
)

// damagedDir holds the files repair moved aside: DIR/.damaged/<table>/.
const damagedDir = ".damaged"

// DamagedFile is a file of an archive that cannot be read (cut short, or
// overwritten): readers of its table fail on it until `cq-source-x repair`
// moves it aside.
type DamagedFile struct {
	Table   string `json:"table"`
	Path    string `json:"path"`
	Problem string `json:"problem"`
}

// Describe says what is wrong with the file, and the command that repairs
// the archive in out.
func (d DamagedFile) Describe(out string) string {
	return fmt.Sprintf("%s: %s; readers of %s/*.parquet fail on it. Run `%s`: it moves the file to %s, "+
		"and the next export fetches again the bookmarks it held that are still in the lists",
		d.Path, d.Problem, filepath.Join(out, d.Table), RepairCommand(out), filepath.Join(out, damagedDir, d.Table))
}

func DamagedFiles(dir string) ([]DamagedFile, error) {
	out, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	damaged, _, err := damagedFiles(out, false)
	return damaged, err
}

// damagedFiles checks the footer of every published file of out, and with
// readData every page, and returns the damaged ones and how many files it
// checked.
func damagedFiles(out string, readData bool) ([]DamagedFile, int, error) {
	paths, err := publishedFiles(out)
	if err != nil {
		return nil, 0, err
	}
	var damaged []DamagedFile
	for _, path := range paths {
		table := filepath.Base(filepath.Dir(path))
		if _, _, err := pqfile.ReadSchema(path); err != nil {
			damaged = append(damaged, damagedFile(table, path, "the footer", err))
		} else if readData {
			err := pqfile.ReadRecords(context.Background(), path, nil, func(arrow.RecordBatch) error { return nil })
			if err != nil {
				damaged = append(damaged, damagedFile(table, path, "a page", err))
			}
		}
	}
	return damaged, len(paths), nil
}

func damagedFile(table, path, part string, err error) DamagedFile {
	var pe *fs.PathError
	problem := err.Error()
	if errors.As(err, &pe) {
		problem = pe.Err.Error()
	}
	return DamagedFile{Table: table, Path: path, Problem: part + " cannot be read (" + problem + ")"}
}

// moveAside moves a damaged file to DIR/.damaged/<table>/, where readers
// of the table do not see it; the user may inspect it, and remove it.
func moveAside(out string, d DamagedFile) error {
	if err := dirsync.Mkdir(filepath.Join(out, damagedDir), d.Table); err != nil {
		return err
	}
	to := filepath.Join(out, damagedDir, d.Table, filepath.Base(d.Path))
	if err := os.Rename(d.Path, to); err != nil {
		return err
	}
	if err := dirsync.Sync(filepath.Dir(d.Path)); err != nil {
		return err
	}
	return dirsync.Sync(filepath.Dir(to))
}
