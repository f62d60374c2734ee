package archive

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/internal/plural"
	"github.com/cq-source-x/cq-source-x/media"
	"github.com/cq-source-x/cq-source-x/media/store"
)

type CheckReport struct {
	Out        string    `json:"out"`
	Files      int       `json:"files"` // Parquet files
	MediaFiles int       `json:"media_files"`
	ReadData   bool      `json:"read_data"`
	Problems   []Problem `json:"problems"` // none when the archive is whole
}

// Problem is one thing Check found wrong: where (a file, a table, the
// state), what, and the command that fixes it.
type Problem struct {
	Where string `json:"where"`
	What  string `json:"what"`
	Fix   string `json:"fix"`
}

func (p Problem) String() string { return p.Where + ": " + p.What + ". Fix: " + p.Fix }

// Check is `cq-source-x check`: Repair's dry run, told as problems, each
// with the command that fixes it. It changes nothing.
func Check(dir string, tables BookmarkTables, readData bool) (*CheckReport, error) {
	rep, err := Repair(dir, RepairOptions{DryRun: true, ReadData: readData, Tables: tables})
	if err != nil {
		return nil, err
	}
	if rep.Empty {
		return nil, fmt.Errorf("%s holds no export: nothing to check", rep.Out)
	}
	return &CheckReport{Out: rep.Out, Files: rep.Checked, MediaFiles: rep.Media.Files, ReadData: readData, Problems: rep.problems()}, nil
}

// WriteText prints a problem a line, then what was checked.
func (c *CheckReport) WriteText(w io.Writer) {
	for _, p := range c.Problems {
		fmt.Fprintln(w, p)
	}
	what, media := "footers", "sizes"
	if c.ReadData {
		what, media = "every page", "hashes"
	}
	fmt.Fprintf(w, "checked %s (%s), %s (%s) and the state of %s: ", plural.Count(c.Files, "Parquet file", "Parquet files"), what,
		plural.Count(c.MediaFiles, "media file", "media files"), media, c.Out)
	if len(c.Problems) == 0 {
		fmt.Fprintln(w, "no problem")
		return
	}
	fmt.Fprintln(w, plural.Count(len(c.Problems), "problem", "problems"))
}

// repairCommand is the command that repairs what the report found, with
// --read-data when only reading the data finds it.
func (rep *RepairReport) repairCommand() string {
	if rep.ReadData {
		return RepairCommand(rep.Out) + " --read-data"
	}
	return RepairCommand(rep.Out)
}

func (rep *RepairReport) problems() []Problem {
	var ps []Problem
	repair, export := "`"+rep.repairCommand()+"`", "the next `cq-source-x export --spec FILE --out "+ShellQuote(rep.Out)+"`"
	add := func(where, fix, format string, a ...any) {
		ps = append(ps, Problem{Where: where, What: fmt.Sprintf(format, a...), Fix: fix})
	}
	state := filepath.Join(rep.Out, stateDir, stateFile)
	if rep.StateProblem != "" {
		add(state, repair, "%s", rep.StateProblem)
	}
	for _, d := range rep.Damaged {
		add(d.Path, repair+" (it moves the file aside; the next export fetches again what it held that X still serves)", "%s", d.Problem)
	}
	for _, f := range rep.LostFiles {
		add(f, repair, "a file of the committed run %s, neither staged nor published", rep.Publish)
	}
	for _, uid := range slices.Sorted(maps.Keys(rep.Unfiled)) {
		add(state, repair+" (the next export fetches again those still bookmarked)", "it says %s of user %s archived, which no x_bookmarks file holds", plural.Count(rep.Unfiled[uid], "post", "posts"), uid)
	}
	for _, uid := range slices.Sorted(maps.Keys(rep.Unknown)) {
		add(state, repair, "x_bookmarks files hold %s of user %s it does not say archived: an export would write them again", plural.Count(rep.Unknown[uid], "post", "posts"), uid)
	}
	if rep.StrayUnknown {
		add(state, repair, "it does not know which posts the content tables hold without their bookmark: an export would write their rows again")
	}
	for _, d := range rep.Dropped {
		add(state+", key "+d.Key, repair+" (the next export reads that list in full once)", "%s", d.Reason)
	}
	ps = append(ps, rep.Media.problems(rep.Out, repair, export)...)
	for _, l := range rep.Leftovers {
		add(rep.Out, repair+", or "+export, "%s", l)
	}
	return ps
}

// mediaFilesTable is resources.MediaFilesTable, which archive does not import.
const mediaFilesTable = "x_media_files"

// MediaFindings is what the media files (DIR/media), their rows
// (x_media_files: the newest row of a file is its status) and the state's
// records of them say of each other.
type MediaFindings struct {
	Files int // in DIR/media
	// Lost are the stored files the newest rows name that DIR/media lacks,
	// or holds with other content.
	Lost []LostMedia
	// RowsLost counts the files whose last row, as the records keep it, no
	// file of x_media_files holds.
	RowsLost int
	// Unrecorded are files of DIR/media no row names that a file the next
	// export tries was stored as (a run stopped before it recorded them,
	// or a repair marked their rows lost): that export records them.
	// Unused are those no record uses either.
	Unrecorded, Unused []string
	Spools             []string // DIR/media/.tmp
}

type LostMedia struct {
	Key, Problem string
	Damaged      bool // there with other content: a repair moves it aside
	// Records of the state use it, of which Marked are marked to fetch it
	// again.
	Records, Marked int
}

// mediaID is a file of x_media_files.
type mediaID struct{ user, post, mediaKey, url string }

// mediaRow is what a row says of its file, as a record keeps it, and the
// file's size (-1: none).
type mediaRow struct {
	archived.File
	size int64
}

// inspectMedia fills rep.Media from the files of snap and DIR/media and
// the records in next's keys, and marks in them what the next export must
// do again; it reports whether it marked anything.
func (rep *RepairReport) inspectMedia(snap *Snapshot, out string, next *State, o RepairOptions) (bool, error) {
	f, root := &rep.Media, MediaPath(out)
	rows, named := rep.readMediaRows(snap)
	files, err := mediaFiles(root)
	if err != nil {
		return false, err
	}
	f.Files = len(files)
	if f.Spools, err = store.Spools(root); err != nil {
		return false, err
	}
	type record struct {
		key, uid string
		rec      *archived.Record
	}
	var all []record
	sizes := map[string]int64{} // of the stored files, as their newest row says (-1: none)
	for _, r := range rows {
		if r.Status == media.Stored {
			sizes[r.FileKey] = r.size
		}
	}
	for _, key := range slices.Sorted(maps.Keys(next.Keys)) {
		k, _ := account.ParseKey(key)
		if k.Kind != account.ArchivedRecord {
			continue
		}
		rec, err := archived.Unmarshal(next.Keys[key], "the state key "+key)
		if err != nil {
			return false, err
		}
		all = append(all, record{key, k.User, rec})
		for _, u := range rec.Files {
			if _, ok := sizes[u.FileKey]; u.Status == media.Stored && !ok {
				sizes[u.FileKey] = -1
			}
		}
	}
	lost, err := lostFiles(root, sizes, files, o.ReadData)
	if err != nil {
		return false, err
	}
	recorded := map[string]bool{} // the files stored records name
	var due []string              // the URLs of the others: the next export tries them
	marked := false
	for _, a := range all {
		// A record rebuilt, or older than the files, learns the files their
		// rows name, so that the next export writes none of those rows again.
		restored := a.rec.AddFiles(filesOfRows(rows, a.uid)) > 0
		rowLost := func(u *archived.File) bool {
			r, ok := rows[mediaID{a.uid, u.PostID, u.MediaKey, u.URL}]
			return u.Status != "" && (!ok || r.Status != u.Status || u.Status == media.Stored && r.FileKey != u.FileKey)
		}
		fileLost := func(u *archived.File) bool { return u.Status == media.Stored && lost[u.FileKey] != nil && !u.Refetch }
		for i := range a.rec.Files {
			u := &a.rec.Files[i]
			if l := lost[u.FileKey]; u.Status == media.Stored && l != nil {
				l.Records++
				if u.Refetch {
					l.Marked++
				}
			}
			if rowLost(u) {
				f.RowsLost++
			}
			if u.Status == media.Stored {
				recorded[u.FileKey] = true
			} else if u.Status == "" || !u.Status.Final() {
				due = append(due, u.URL)
			}
		}
		if a.rec.MarkLost(rowLost, fileLost) || restored {
			if next.Keys[a.key], err = a.rec.Marshal(); err != nil {
				return false, err
			}
			marked = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(lost)) {
		f.Lost = append(f.Lost, *lost[k])
	}
	return marked, f.sortUnnamed(root, files, named, recorded, due)
}

// filesOfRows are the files the newest rows of the account uid say, in
// the order of their keys.
func filesOfRows(rows map[mediaID]mediaRow, uid string) []archived.File {
	var out []archived.File
	for _, id := range slices.SortedFunc(maps.Keys(rows), func(a, b mediaID) int { return cmp.Compare(a.post+a.mediaKey+a.url, b.post+b.mediaKey+b.url) }) {
		if id.user == uid {
			out = append(out, rows[id].File)
		}
	}
	return out
}

// sortUnnamed sorts the files no row names, and no stored record does
// (their rows are lost, counted already), into Unrecorded and Unused: the
// store says which file the URLs of due were stored as.
func (f *MediaFindings) sortUnnamed(root string, files map[string]int64, named, recorded map[string]bool, due []string) error {
	var used map[string]bool
	for _, k := range slices.Sorted(maps.Keys(files)) {
		if named[k] || recorded[k] {
			continue
		}
		if used == nil {
			used = map[string]bool{}
			st := store.ReadDir(root)
			for _, u := range due {
				file, err := st.Lookup(context.Background(), u)
				if err != nil {
					return err
				}
				if file != nil {
					used[file.Key] = true
				}
			}
		}
		if used[k] {
			f.Unrecorded = append(f.Unrecorded, k)
		} else {
			f.Unused = append(f.Unused, k)
		}
	}
	return nil
}

// lostFiles are the stored files (sizes: their sizes, -1 unknown) that
// DIR/media (files: its files' sizes) lacks or holds with other content,
// by key; with readData, each file's content is checked against its key.
func lostFiles(root string, sizes, files map[string]int64, readData bool) (map[string]*LostMedia, error) {
	lost := map[string]*LostMedia{}
	for k, want := range sizes {
		size, ok := files[k]
		switch {
		case !store.IsKey(k): // not a file of the store: nothing of DIR/media is touched for it
		case !ok:
			lost[k] = &LostMedia{Key: k, Problem: "missing, which the archive says stored"}
		case want >= 0 && size != want:
			lost[k] = &LostMedia{Key: k, Damaged: true, Problem: fmt.Sprintf("%d bytes, where x_media_files says %d", size, want)}
		case readData:
			sum, err := hashFile(filepath.Join(root, filepath.FromSlash(k)))
			if err != nil {
				return nil, err
			}
			if !strings.HasPrefix(path.Base(k), sum) {
				lost[k] = &LostMedia{Key: k, Damaged: true, Problem: "its content's SHA-256 is " + sum + ", not the one it is named by"}
			}
		}
	}
	return lost, nil
}

// hashFile is the hex SHA-256 of the file's content.
func hashFile(path string) (string, error) {
	file, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer file.Close()
	h := sha256.New()
	if _, err := io.Copy(h, file); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// readMediaRows reads the newest row of each file of x_media_files, and
// the keys of the files any row names.
func (rep *RepairReport) readMediaRows(snap *Snapshot) (map[mediaID]mediaRow, map[string]bool) {
	rows, named := map[mediaID]mediaRow{}, map[string]bool{}
	columns := []string{"user_id", "post_id", "media_key", "url", "status", "file_key", "size", "checked_at"}
	rep.readWhole(snap, mediaFilesTable, columns, []string{"media_post_id", "media_type", "file"}, func(c *Cols, i int) {
		id := mediaID{c.Str("user_id", i), c.Str("post_id", i), c.Str("media_key", i), c.Str("url", i)}
		r := mediaRow{size: -1, File: archived.File{PostID: id.post, MediaKey: id.mediaKey, URL: id.url, Status: media.Status(c.Str("status", i)),
			FileKey: c.Str("file_key", i), SeenAt: c.Time("checked_at", i), MediaPostID: c.Str("media_post_id", i), MediaType: c.Str("media_type", i), File: c.Str("file", i)}}
		if size, ok := c.Int("size", i); ok {
			r.size = size
			if r.Status == media.TooLarge {
				r.Limit = size - 1 // refused under any max_file_size below its size
			}
		}
		if old, ok := rows[id]; !ok || !r.SeenAt.Before(old.SeenAt) {
			rows[id] = r
		}
		if r.FileKey != "" {
			named[r.FileKey] = true
		}
	})
	return rows, named
}

// mediaFiles lists the files of the store in root, by key, with their
// sizes: those named as the store names its files, out of its hidden
// directories.
func mediaFiles(root string) (map[string]int64, error) {
	files := map[string]int64{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist) && p == root:
			return filepath.SkipAll
		case err != nil:
			return err
		case d.IsDir() && p != root && strings.HasPrefix(d.Name(), "."):
			return filepath.SkipDir
		case !d.Type().IsRegular():
			return nil
		}
		rel, _ := filepath.Rel(root, p)
		if key := filepath.ToSlash(rel); store.IsKey(key) {
			info, err := d.Info()
			if err != nil {
				return err
			}
			files[key] = info.Size()
		}
		return nil
	})
	return files, err
}

// damaged are the lost files with other content, to move aside.
func (f *MediaFindings) damaged(out string) []DamagedFile {
	var files []DamagedFile
	for _, l := range f.Lost {
		if l.Damaged {
			files = append(files, DamagedFile{Table: mediaDir, Path: mediaFile(out, l.Key), Problem: l.Problem})
		}
	}
	return files
}

func mediaFile(out, key string) string { return filepath.Join(MediaPath(out), filepath.FromSlash(key)) }

func (f *MediaFindings) toRemove() bool {
	return len(f.Unused) > 0 || len(f.Spools) > 0 || slices.ContainsFunc(f.Lost, func(l LostMedia) bool { return l.Damaged })
}

// removeUnused removes the files no row names and no record uses (a
// compliance action stopped before it removed them, or files put there).
func (f *MediaFindings) removeUnused(out string, step func(string)) error {
	for _, k := range f.Unused {
		if err := removeDurably(mediaFile(out, k)); err != nil {
			return err
		}
		step("repair removed media " + k)
	}
	return nil
}

// problems tells the findings; repair and export name the commands.
func (f *MediaFindings) problems(out, repair, export string) []Problem {
	var ps []Problem
	for _, l := range f.Lost {
		fix := repair + " (it marks the file to be fetched again by the next export, which records it gone if X no longer serves it)"
		switch {
		case l.Records == 0:
			fix = "none: no post of the state uses it, so no export fetches it again; its row stays"
		case l.Marked == l.Records:
			fix = export + ", which fetches it again"
		}
		ps = append(ps, Problem{Where: mediaFile(out, l.Key), What: l.Problem, Fix: fix})
	}
	if f.RowsLost > 0 {
		ps = append(ps, Problem{Where: filepath.Join(out, mediaFilesTable), Fix: repair + " (the next export then writes them, from DIR/media: nothing is fetched that is there)",
			What: fmt.Sprintf("%s no row of %s last status (a file of the table removed?)", plural.Count(f.RowsLost, "media file has", "media files have"), plural.Pick(f.RowsLost, "its", "their"))})
	}
	if n := len(f.Unrecorded); n > 0 {
		ps = append(ps, Problem{Where: MediaPath(out), Fix: export + ", which records them",
			What: fmt.Sprintf("%s no row of x_media_files names yet, such as %s", plural.Count(n, "file", "files"), mediaFile(out, f.Unrecorded[0]))})
	}
	for _, k := range f.Unused {
		ps = append(ps, Problem{Where: mediaFile(out, k), What: "no row of x_media_files names it, and no post of the state uses it", Fix: repair + ", which removes it"})
	}
	if n := len(f.Spools); n > 0 {
		ps = append(ps, Problem{Where: filepath.Dir(f.Spools[0]), What: fmt.Sprintf("%s a stopped run was fetching", plural.Count(n, "partial file", "partial files")), Fix: repair + ", or " + export + ", which removes them"})
	}
	return ps
}

// writeText says what Repair found of the media files, and did (with
// dryRun: would do).
func (f *MediaFindings) writeText(w io.Writer, out string, dryRun bool) {
	for _, l := range f.Lost {
		did := pick(dryRun, "to be marked", "marked") + " to be fetched again by the next export"
		if l.Records == 0 {
			did = "no post of the state uses it: it cannot be fetched again"
		}
		if l.Damaged {
			did = pick(dryRun, "to be moved", "moved") + " to " + filepath.Join(out, damagedDir, mediaDir) + "; " + did
		}
		fmt.Fprintf(w, "media: %s: %s; %s\n", mediaFile(out, l.Key), l.Problem, did)
	}
	if f.RowsLost > 0 {
		fmt.Fprintf(w, "media: %s no row of %s last status in x_media_files; %s to be tried again: the next export writes their rows, fetching only what DIR/media lacks\n",
			plural.Count(f.RowsLost, "file has", "files have"), plural.Pick(f.RowsLost, "its", "their"), pick(dryRun, "to be marked", "marked"))
	}
	if n := len(f.Unrecorded); n > 0 {
		fmt.Fprintf(w, "media: %s no row names yet, such as %s; the next export records them\n", plural.Count(n, "file", "files"), mediaFile(out, f.Unrecorded[0]))
	}
	for _, k := range f.Unused {
		fmt.Fprintf(w, "media: %s: no row names it and no post uses it; %s\n", mediaFile(out, k), pick(dryRun, "to be removed", "removed"))
	}
	if n := len(f.Spools); n > 0 {
		fmt.Fprintf(w, "media: %s: %s a stopped run was fetching; %s\n", filepath.Dir(f.Spools[0]), plural.Count(n, "partial file", "partial files"), pick(dryRun, "to be removed", "removed"))
	}
}

func pick(dryRun bool, what, done string) string {
	if dryRun {
		return what
	}
	return done
}
