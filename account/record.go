package account

import (
	"context"
	"strconv"

	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/archived"
	"github.com/cq-source-x/cq-source-x/ids"
)

// Record is the account's record of what it archived (package archived),
// read from the state once per sync (or made, migrateRecord) and shared by
// its resolvers, which change it with EditRecord.
func (s *Session) Record(ctx context.Context) (*archived.Record, error) {
	s.recordMu.Lock()
	defer s.recordMu.Unlock()
	return s.loadRecord(ctx)
}

// EditRecord changes the account's record with edit, which the record's
// other users do not see half done.
func (s *Session) EditRecord(ctx context.Context, edit func(*archived.Record) error) error {
	s.recordMu.Lock()
	defer s.recordMu.Unlock()
	rec, err := s.loadRecord(ctx)
	if err != nil {
		return err
	}
	return edit(rec)
}

func (s *Session) loadRecord(ctx context.Context) (*archived.Record, error) {
	if s.record != nil {
		return s.record, nil
	}
	value, err := GetKey(ctx, s.State, RecordKey(s.UserID))
	if err == nil && value == "" {
		value, err = s.migrateRecord(ctx)
	}
	if err != nil {
		return nil, err
	}
	rec, err := archived.Unmarshal(value, "state "+strconv.Quote(RecordKey(s.UserID)))
	if err != nil {
		return nil, err
	}
	s.record = rec
	return rec, nil
}

// SaveRecord sets the account's record in the state (unflushed).
func (s *Session) SaveRecord(ctx context.Context) error {
	s.recordMu.Lock()
	defer s.recordMu.Unlock()
	if s.record == nil {
		return nil
	}
	value, err := s.record.Marshal()
	if err != nil {
		return err
	}
	return SetKey(ctx, s.State, RecordKey(s.UserID), value)
}

// migrateRecord makes the record of a state that kept none (MigrateRecord),
// with the posts the bookmarks walk holds, and returns its value.
func (s *Session) migrateRecord(ctx context.Context) (string, error) {
	mem, err := s.LoadMemory(ctx, BookmarksKey(s.UserID))
	if err != nil {
		return "", err
	}
	var held []uint64
	if mem != nil {
		for i := range mem.Held.Len() {
			if n, ok := ids.Parse(mem.Held.At(i)); ok {
				held = append(held, n)
			}
		}
	}
	if err := MigrateRecord(ctx, s.State, s.UserID, ids.NewSorted(held)); err != nil {
		return "", err
	}
	return GetKey(ctx, s.State, RecordKey(s.UserID))
}

// MigrateRecord makes the account's record from the values a version before
// it kept (LegacyKeys), with bookmarks, the posts archived those do not name
// (the exporter's written ids, or the walk's held list), and clears them, in
// the state, unflushed. An account with none of them gets an empty record.
// A crash before the flush leaves the old values, read again the same way.
func MigrateRecord(ctx context.Context, st state.Client, userID string, bookmarks ids.Sorted) error {
	keys := LegacyKeys(userID)
	var values [4]string
	for i, key := range keys {
		v, err := GetKey(ctx, st, key)
		if err != nil {
			return err
		}
		values[i] = v
	}
	if values[0] != "" {
		bookmarks = nil // the archived posts, which the held list only stood in for
	}
	rec, err := archived.Migrate(archived.Legacy{Archived: values[0], Referenced: values[1], Authors: values[2], MediaFiles: values[3], Bookmarks: bookmarks},
		"the state of user "+userID+" before its record")
	if err != nil {
		return err
	}
	value, err := rec.Marshal()
	if err != nil {
		return err
	}
	if err := SetKey(ctx, st, RecordKey(userID), value); err != nil {
		return err
	}
	for i, key := range keys {
		if values[i] != "" {
			if err := SetKey(ctx, st, key, ""); err != nil {
				return err
			}
		}
	}
	return nil
}
