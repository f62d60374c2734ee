// Package outbox keeps the rows a sync sent to a destination that may not
// hold them yet, in the state value that says they were read, so that later
// syncs send them again (docs/delivery.md#how-it-holds says why and how long).
package outbox

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Policy says how long an entry stays: until Syncs syncs that sent it have
// run to their end. The zero Policy keeps nothing (a destination that
// commits rows with the state, such as the exporter, needs no outbox).
type Policy struct {
	Syncs int
}

// On reports whether p sends rows again.
func (p Policy) On() bool { return p.Syncs > 1 }

// Entry is what one sync sent of one list: rows as JSON lines, compressed.
// Entries are zstd'd (with its checksum); entries written before were
// gzip'd, and are read as such.
type Entry struct {
	// SentAt is when the sync that first sent the rows started.
	SentAt time.Time `json:"sent_at"`
	// Sends counts the syncs that sent the rows and ran to their end, but
	// for the last that sent them, LastSync, which is counted once known
	// to have ended.
	Sends    int    `json:"sends"`
	LastSync string `json:"last_sync"`
	// Rows is a zstd (or gzip) stream of JSON values, one per line.
	Rows []byte `json:"rows"`
}

// zstd's coders are safe for concurrent use, and keep what they allocate
// for the next stream.
var (
	encoder, _ = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	decoder, _ = zstd.NewReader(nil)
)

// Each calls f with each JSON line of the entry, in the order added.
func (e *Entry) Each(f func(line []byte) error) error {
	var lines io.Reader
	var err error
	if bytes.HasPrefix(e.Rows, []byte{0x28, 0xb5, 0x2f, 0xfd}) { // zstd's magic number
		var plain []byte
		plain, err = decoder.DecodeAll(e.Rows, nil)
		lines = bytes.NewReader(plain)
	} else {
		lines, err = gzip.NewReader(bytes.NewReader(e.Rows))
	}
	for r := bufio.NewReader(lines); err == nil; {
		var line []byte
		if line, err = r.ReadBytes('\n'); len(line) > 1 {
			if ferr := f(line[:len(line)-1]); ferr != nil {
				return ferr
			}
		}
	}
	if errors.Is(err, io.EOF) {
		return nil
	}
	return fmt.Errorf("outbox entry of %s: %w", e.SentAt.Format(time.RFC3339), err)
}

// Box is one list's outbox, oldest entry first.
type Box struct {
	Entries []Entry
}

const version = 1

type boxJSON struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
}

// Marshal encodes b for the state; "" for an empty box.
func (b *Box) Marshal() (string, error) {
	if b == nil || len(b.Entries) == 0 {
		return "", nil
	}
	out, err := json.Marshal(boxJSON{Version: version, Entries: b.Entries})
	return string(out), err
}

// Unmarshal decodes what Marshal wrote ("" is an empty box). what names the
// value in errors.
func Unmarshal(text, what string) (*Box, error) {
	if text == "" {
		return &Box{}, nil
	}
	var j boxJSON
	if err := json.Unmarshal([]byte(text), &j); err != nil {
		return nil, fmt.Errorf("%s: outbox is not valid JSON: %w", what, err)
	}
	if j.Version != version {
		return nil, fmt.Errorf("%s: outbox has version %d; this build reads version %d", what, j.Version, version)
	}
	for i := range j.Entries {
		if err := j.Entries[i].Each(func([]byte) error { return nil }); err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
	}
	return &Box{Entries: j.Entries}, nil
}

// With returns b with sent, the entry of what its last sync sent of its
// own (nil: nothing), last.
func (b *Box) With(sent *Entry) *Box {
	if sent == nil {
		return b
	}
	return &Box{Entries: append(slices.Clip(b.Entries), *sent)}
}

// Batch builds an entry from JSON values. The zero Batch is ready to use.
type Batch struct {
	lines bytes.Buffer
}

// Add appends v, encoded as JSON, as one line.
func (w *Batch) Add(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return w.addLine(line)
}

// addLine appends one line of JSON.
func (w *Batch) addLine(line []byte) error {
	w.lines.Write(line)
	return w.lines.WriteByte('\n')
}

// Entry is the entry of sync syncID, which started at sentAt, of every line
// added so far, or nil when none was. It may be taken again as lines are
// added: the state keeps what a sync sent each time it is saved.
func (w *Batch) Entry(syncID string, sentAt time.Time) *Entry {
	if w.lines.Len() == 0 {
		return nil
	}
	return &Entry{SentAt: sentAt.UTC(), LastSync: syncID, Rows: encoder.EncodeAll(w.lines.Bytes(), nil)}
}

// Rewrite is b with each line of each entry replaced by what f makes of
// it: nil drops the line, and an entry left with none is dropped. The rows
// of a post that must not be sent again (X's compliance) leave so.
func (b *Box) Rewrite(f func(line []byte) ([]byte, error)) (*Box, error) {
	next := &Box{}
	for _, e := range b.Entries {
		var batch Batch
		err := e.Each(func(line []byte) error {
			out, err := f(line)
			if err != nil || out == nil {
				return err
			}
			return batch.addLine(out)
		})
		if err != nil {
			return nil, err
		}
		if kept := batch.Entry(e.LastSync, e.SentAt); kept != nil {
			kept.Sends = e.Sends
			next.Entries = append(next.Entries, *kept)
		}
	}
	return next, nil
}

// Sync is the sync that sends rows: its id, when it started, and which
// earlier syncs ran to their end (of those the state remembers).
type Sync struct {
	ID        string
	StartedAt time.Time
	Ended     func(id string) bool
}

// Rows is one table's outbox of one account during a sync, at the table's
// resolver: the rows of type T (each a JSON value) earlier syncs sent that
// this one sends again, and those it sends. Safe for concurrent use.
type Rows[T any] struct {
	mu   sync.Mutex
	kept *Box
	sent Batch
	sync Sync
}

// Open is the outbox box holds, as sync s keeps it, to send again: each
// entry whose last sync ran to its end counts it, entries p lets go are
// dropped, and s becomes the last sync of the others.
func Open[T any](box *Box, s Sync, p Policy) *Rows[T] {
	kept := &Box{}
	for _, e := range box.Entries {
		if e.LastSync != "" && e.LastSync != s.ID && s.Ended(e.LastSync) {
			e.Sends++
		}
		if e.Sends >= p.Syncs {
			continue
		}
		e.LastSync = s.ID
		kept.Entries = append(kept.Entries, e)
	}
	return &Rows[T]{kept: kept, sync: s}
}

// Each calls f with the rows kept, an entry at a time, oldest first, so
// that a row first sent in a later sync comes later.
func (r *Rows[T]) Each(f func([]T) error) error {
	for i := range r.kept.Entries {
		e := &r.kept.Entries[i]
		var rows []T
		err := e.Each(func(line []byte) error {
			var row T
			if err := json.Unmarshal(line, &row); err != nil {
				return err
			}
			rows = append(rows, row)
			return nil
		})
		if err == nil {
			err = f(rows)
		}
		if err != nil {
			return fmt.Errorf("sending again the rows of the sync of %s: %w", e.SentAt.Format(time.RFC3339), err)
		}
	}
	return nil
}

// Add records rows the sync sent.
func (r *Rows[T]) Add(rows ...T) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range rows {
		if err := r.sent.Add(rows[i]); err != nil {
			return err
		}
	}
	return nil
}

// Box is what the state keeps: the rows kept, then the ones the sync sent.
func (r *Rows[T]) Box() (*Box, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.kept.With(r.sent.Entry(r.sync.ID, r.sync.StartedAt)), nil
}

// Edit is box with each row of type T changed by edit, which drops it when
// it says so: the one way rows a report of X's took out of the archive
// leave the outboxes too.
func Edit[T any](box *Box, edit func(*T) (keep bool, err error)) (*Box, error) {
	return box.Rewrite(func(line []byte) ([]byte, error) {
		var row T
		if err := json.Unmarshal(line, &row); err != nil {
			return nil, err
		}
		keep, err := edit(&row)
		if err != nil || !keep {
			return nil, err
		}
		return json.Marshal(row)
	})
}
