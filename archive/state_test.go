package archive

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/ids"
)

// The state file is written key by key (Keys and Written are most of it,
// and are never encoded whole in memory); the bytes must be exactly
// json.Marshal's, so a state reads back as it always did.
func TestStateEncodingIsJSONMarshal(t *testing.T) {
	written := &ids.Set{}
	for i := range 1000 {
		written.Add(strconv.Itoa(1_700_000_000_000_000_000 + i*7919))
	}
	written.Add("not-a-number")
	run := &Run{ID: "0a1b2c3d", Time: time.Date(2026, 11, 22, 5, 0, 0, 123, time.UTC),
		Files: []File{{Table: "x_bookmarks", Name: "a.parquet", Rows: 1001}}}
	for name, s := range map[string]*State{
		"empty": newState(),
		"pending, no last run": {Format: stateFormat, Pending: run,
			Keys:    map[string]string{"x_bookmarks/1001": `{"version":1,"held":"<&>\"quoted\" é"}`, "x_bookmarks/1002": ""},
			Written: map[string]*ids.Set{"1001": written}},
		"published": {Format: stateFormat, LastRun: run, Keys: map[string]string{"k": "v"}, Written: map[string]*ids.Set{"1001": written, "1002": {}, "<&>": written}},
		"both":      {Format: stateFormat, Pending: run, LastRun: run, Keys: map[string]string{}, Written: map[string]*ids.Set{}},
		"nil maps":  {Format: stateFormat},
		"stray content rows": {Format: stateFormat, LastRun: run, Keys: map[string]string{}, Written: map[string]*ids.Set{"1001": written},
			Stray: map[string]map[string]*ids.Set{"x_bookmark_media": {"1001": written, "1002": {}}, "x_bookmark_authors": {"<&>": written}}},
	} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := s.writeTo(&buf); err != nil {
			t.Fatal(err)
		}
		got := buf.Bytes()
		if !bytes.Equal(got, want) {
			t.Errorf("%s:\nencode       %s\njson.Marshal %s", name, got, want)
		}
		// The second save of a run, with another run record.
		s.Pending, s.LastRun = nil, run
		want, _ = json.Marshal(s)
		buf.Reset()
		if s.writeTo(&buf); !bytes.Equal(buf.Bytes(), want) {
			t.Errorf("%s, marked published: encode differs from json.Marshal", name)
		}
	}
}

// A state whose written-id set of a user is null is damaged, and says so
// (it used to load, then panic when the set was used).
func TestStateRefusesANullWrittenSet(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, stateDir), 0o755); err != nil {
		t.Fatal(err)
	}
	state := `{"format":` + strconv.Itoa(stateFormat) + `,"keys":{},"written":{"1001":null}}`
	if err := os.WriteFile(filepath.Join(dir, stateDir, stateFile), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := loadState(dir)
	if err == nil || !strings.Contains(err.Error(), "is damaged: the written-id set of user 1001 is null") {
		t.Fatalf("got %v, want the null set named", err)
	}
}

// The state is read back key by key as it was written: every key, set and
// run record, whatever their order in the file; fields it does not know
// are skipped, and anything after the object is damage.
func TestStateReadsBackWhatItWrote(t *testing.T) {
	written := &ids.Set{}
	for i := range 5000 {
		written.Add(strconv.Itoa(1_700_000_000_000_000_000 + i*7919))
	}
	written.Add("not-a-number")
	at := time.Date(2026, 11, 22, 5, 0, 0, 123e6, time.UTC)
	run := &Run{ID: "0a1b2c3d", Time: at,
		Files: []File{{Table: "x_bookmarks", Name: at.Format(fileTimeLayout) + "-0a1b2c3d.parquet", Rows: 5001}}}
	s := &State{Format: stateFormat, Pending: run, LastRun: run,
		Keys:    map[string]string{"another/1001": `{"held":"<&>\"q\""}`, "k": ""},
		Written: map[string]*ids.Set{"1001": written, "1002": {}},
		Stray:   map[string]map[string]*ids.Set{"x_bookmark_media": {"1002": written}}}
	var buf bytes.Buffer
	if err := s.writeTo(&buf); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	save := func(content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, stateDir), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, stateDir, stateFile), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	save(buf.String())
	back, err := loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := json.Marshal(back)
	if want, _ := json.Marshal(s); !bytes.Equal(again, want) {
		t.Fatalf("read back:\n%s\nwant\n%s", again, want)
	}
	save(`{"future":{"a":[1,{"b":null}]},"keys":{},"written":{},"format":` + strconv.Itoa(stateFormat) + `}`)
	if back, err := loadState(dir); err != nil || len(back.Keys) != 0 || len(back.Written) != 0 {
		t.Fatalf("an unknown field: %v", err)
	}
	save(`{"keys":{},"written":{},"stray":{"../x_bookmarks":{}},"format":` + strconv.Itoa(stateFormat) + `}`)
	if _, err := loadState(dir); err == nil || !strings.Contains(err.Error(), "not a table's name") {
		t.Fatalf("stray rows of ../x_bookmarks: %v", err)
	}
	save(`{"keys":null,"written":{},"format":` + strconv.Itoa(stateFormat) + `}`)
	if _, err := loadState(dir); err == nil || !strings.Contains(err.Error(), "is damaged") {
		t.Fatalf("null keys: %v", err)
	}
	save(buf.String() + `{}`)
	if _, err := loadState(dir); err == nil || !strings.Contains(err.Error(), "is damaged") {
		t.Fatalf("data after the object: %v", err)
	}
	save(buf.String()[:buf.Len()/2])
	if _, err := loadState(dir); err == nil || !strings.Contains(err.Error(), "is damaged") {
		t.Fatalf("cut in half: %v", err)
	}
}

// The archived post ids an earlier version kept among the keys are left
// out when a state is read: the written ids are that record (export's run is the sync's plugin.Destination).
func TestAStateLeavesOutTheArchivedIDsEarlierVersionsKept(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, stateDir), 0o755); err != nil {
		t.Fatal(err)
	}
	state := `{"format":` + strconv.Itoa(stateFormat) + `,"keys":{"x_post_compliance/archived/1001":"AAAA","x_bookmark_folders/1001":"[]"},"written":{}}`
	if err := os.WriteFile(filepath.Join(dir, stateDir, stateFile), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := loadState(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, kept := s.Keys["x_post_compliance/archived/1001"]; kept || s.Keys["x_bookmark_folders/1001"] != "[]" {
		t.Errorf("keys %v", s.Keys)
	}
}
