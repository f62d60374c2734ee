package bookmarks

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/internal/dirsync"
)

// A bookmark operation of one account keeps a journal in DIR/.ops, so that
// a run that is killed resumes where it stopped: see
// docs/design/exporter.md#the-journal-of-a-bookmark-operation-bookmarksjournalgo.
const opsDir = ".ops"

// Operation kinds.
const (
	OpRemove = "remove"
	OpAdd    = "add"
)

// OpPlan is what a bookmark operation of one account is to do: the posts
// to remove or add, in order, and for x_bookmark_changes the command line
// and, for additions from an archive, the archive's account.
type OpPlan struct {
	ID           string    `json:"id"`
	Kind         string    `json:"kind"`
	UserID       string    `json:"user_id"`
	Created      time.Time `json:"created"`
	Command      string    `json:"command"`
	Posts        []string  `json:"posts"`
	SourceUserID string    `json:"source_user_id,omitempty"`
}

// Journal is the journal of one account's operation.
type Journal struct {
	Plan OpPlan
	// Done are the posts X confirmed, in order; Failed those it refused
	// (by post id, with the reason).
	Done   []JournalEntry
	Failed map[string]string
	// Sent is a post sent whose answer the journal does not have: the run
	// died, or the request failed, in between.
	Sent string
	// replayed is how many of Done the log held when it was opened: the
	// answers of an earlier run.
	replayed int

	path string // of the plan; the log is beside it
	log  *os.File
	step func(string)
}

// JournalEntry is one post X confirmed.
type JournalEntry struct {
	PostID     string
	At         time.Time
	Bookmarked bool
}

func journalPath(out, kind, user string) string {
	return filepath.Join(out, opsDir, kind, user+".plan")
}

func logPath(plan string) string { return strings.TrimSuffix(plan, ".plan") + ".log" }

// CreateJournal writes the plan of a new operation; its directory must
// have none of the same kind and account.
func CreateJournal(dir string, plan OpPlan, step func(string)) (*Journal, error) {
	out, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	path := journalPath(out, plan.Kind, plan.UserID)
	if _, err := os.Stat(path); err == nil {
		return nil, fmt.Errorf("%s: an operation is pending already", path)
	}
	if plan.UserID == "" || len(plan.UserID) > 64 || strings.Trim(plan.UserID, "0123456789") != "" { // X user ids are digits
		return nil, fmt.Errorf("user id %q cannot name a journal", plan.UserID)
	}
	for _, d := range []string{opsDir, filepath.Join(opsDir, plan.Kind)} {
		if err := dirsync.Mkdir(out, d); err != nil {
			return nil, err
		}
	}
	if err := os.Remove(logPath(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	text, err := json.Marshal(plan)
	if err != nil {
		return nil, err
	}
	err = dirsync.WriteFile(filepath.Dir(path), filepath.Base(path), func(w io.Writer) error { _, err := w.Write(text); return err }, func(string) {})
	if err != nil {
		return nil, err
	}
	step("journal written")
	return OpenJournal(dir, plan.Kind, plan.UserID, step)
}

// OpenJournal opens the pending operation of kind for user; nil if none.
func OpenJournal(dir, kind, user string, step func(string)) (*Journal, error) {
	out, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	path := journalPath(out, kind, user)
	text, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	j := &Journal{path: path, step: step, Failed: map[string]string{}}
	if err := json.Unmarshal(text, &j.Plan); err != nil {
		return nil, fmt.Errorf("the journal %s is damaged (%v): remove it to start again; what it recorded as done is in x_bookmark_changes once committed", path, err)
	}
	log, err := os.OpenFile(logPath(path), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	j.log = log
	if err := j.replay(); err != nil {
		log.Close()
		return nil, fmt.Errorf("the journal %s: %w", logPath(path), err)
	}
	return j, nil
}

// replay reads the log. A last line without its newline is the write a
// crash cut: it is dropped (the file is truncated before it).
func (j *Journal) replay() error {
	text, err := io.ReadAll(j.log)
	if err != nil {
		return err
	}
	whole := bytes.LastIndexByte(text, '\n') + 1
	if whole < len(text) {
		if err := j.log.Truncate(int64(whole)); err != nil {
			return err
		}
	}
	if _, err := j.log.Seek(int64(whole), io.SeekStart); err != nil {
		return err
	}
	for line := range strings.Lines(string(text[:whole])) {
		if err := j.apply(strings.TrimSuffix(line, "\n")); err != nil {
			return err
		}
	}
	j.replayed = len(j.Done)
	return nil
}

// apply is what a line of the log says: a post sent, done or refused.
func (j *Journal) apply(line string) error {
	f := strings.SplitN(line, " ", 4)
	switch {
	case len(f) == 2 && f[0] == "send":
		j.Sent = f[1]
	case len(f) == 4 && f[0] == "done":
		at, err := time.Parse(time.RFC3339Nano, f[3])
		if err != nil {
			return fmt.Errorf("line %q: %w", line, err)
		}
		j.Done = append(j.Done, JournalEntry{PostID: f[1], Bookmarked: f[2] == "true", At: at})
		j.Sent = ""
	case len(f) >= 3 && f[0] == "fail":
		j.Failed[f[1]] = strings.Join(f[2:], " ")
		j.Sent = ""
	default:
		return fmt.Errorf("line %q is not a journal line", line)
	}
	return nil
}

// Remaining are the posts of the plan with no answer yet, in order.
func (j *Journal) Remaining() []string {
	done := map[string]bool{}
	for _, d := range j.Done {
		done[d.PostID] = true
	}
	return slices.DeleteFunc(slices.Clone(j.Plan.Posts), func(id string) bool {
		_, failed := j.Failed[id]
		return done[id] || failed
	})
}

// Sending records, durably, that the request for post is about to be sent.
func (j *Journal) Sending(post string) error { return j.write("send "+post, "journal sending") }

// Answered records, durably, X's answer for post.
func (j *Journal) Answered(post string, bookmarked bool, at time.Time) error {
	return j.write(fmt.Sprintf("done %s %t %s", post, bookmarked, at.UTC().Format(time.RFC3339Nano)), "journal answered")
}

// Refused records that X refused the request for post (it is not retried).
func (j *Journal) Refused(post, reason string) error {
	return j.write("fail "+post+" "+strings.Join(strings.Fields(reason), " "), "")
}

// write appends line to the log, durably, applies it, and marks the step
// (if any).
func (j *Journal) write(line, step string) error {
	if _, err := j.log.WriteString(line + "\n"); err != nil {
		return err
	}
	if err := j.log.Sync(); err != nil {
		return err
	}
	if err := j.apply(line); err != nil {
		return err
	}
	if step != "" {
		j.step(step)
	}
	return nil
}

// remove deletes the journal of a finished operation.
func (j *Journal) remove() error {
	j.log.Close()
	for _, p := range []string{logPath(j.path), j.path} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return dirsync.Sync(filepath.Dir(j.path))
}
