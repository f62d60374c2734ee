package archive

import (
	"bytes"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/ids"
	"github.com/cq-source-x/cq-source-x/walk"
)

// fuzzStates are states as runs write them, for the fuzzers' seeds.
func fuzzStates(tb testing.TB) [][]byte {
	written := &ids.Set{}
	for _, id := range []string{"1800000000000000000", "1800000000000000007", "odd-id"} {
		written.Add(id)
	}
	mem, err := (&walk.Memory{Held: walk.NewIDList("1800000000000000007", "1800000000000000000"), SyncedAt: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)}).Marshal()
	if err != nil {
		tb.Fatal(err)
	}
	run := &Run{ID: "0a1b2c3d", Time: time.Date(2026, 11, 22, 10, 15, 0, 123e6, time.UTC)}
	run.Files = []File{{Table: "x_bookmarks", Name: run.Time.Format(fileTimeLayout) + "-0a1b2c3d.parquet", Rows: 3}}
	var out [][]byte
	for _, s := range []*State{
		newState(),
		{Format: stateFormat, LastRun: run, Written: map[string]*ids.Set{"1001": written}, Keys: map[string]string{
			"x_bookmarks/1001": mem, "x_bookmark_folder_posts/1001/77": mem, "x_bookmark_folders/1001": `[{"id":"77","name":"f"}]`}},
		{Format: stateFormat, Pending: run, Written: map[string]*ids.Set{}, Keys: map[string]string{}},
	} {
		var b bytes.Buffer
		if err := s.writeTo(&b); err != nil {
			tb.Fatal(err)
		}
		out = append(out, b.Bytes())
	}
	return append(out, []byte(`null`), []byte(`{"format":1}`))
}

// FuzzDecodeState: no state file makes the loader or the repair's salvage
// panic; a state that loads names only paths inside the output directory,
// and writes back to the same state; what the salvage finds passes the
// checks the loader makes.
func FuzzDecodeState(f *testing.F) {
	for _, b := range fuzzStates(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, text []byte) {
		keys, pending, lastRun := salvage(text)
		for key := range keys {
			if !isStateKey(key) {
				t.Fatalf("salvaged the key %q", key)
			}
		}
		for _, run := range []*Run{pending, lastRun} {
			if run.check() != nil {
				t.Fatalf("salvaged a run that fails its check: %+v", run)
			}
		}
		s, err := decodeState(bytes.NewReader(text))
		if err != nil {
			return
		}
		out := filepath.Join(t.TempDir(), "out")
		for _, run := range []*Run{s.Pending, s.LastRun} {
			if run == nil {
				continue
			}
			for _, f := range run.Files {
				for _, p := range []string{run.StagedPath(out, f.Table), FinalPath(out, f), filepath.Join(out, stagingDir, run.ID)} {
					if rel, err := filepath.Rel(out, p); err != nil || strings.HasPrefix(rel, "..") || rel == "." {
						t.Fatalf("run %+v names %s, outside %s", run, p, out)
					}
				}
			}
		}
		var b bytes.Buffer
		if err := s.writeTo(&b); err != nil {
			t.Fatal(err)
		}
		back, err := decodeState(bytes.NewReader(b.Bytes()))
		if err != nil {
			t.Fatalf("a loaded state, written, does not load: %v\n%s", err, b.Bytes())
		}
		if !reflect.DeepEqual(back.Keys, s.Keys) || !reflect.DeepEqual(back.Pending, s.Pending) || !reflect.DeepEqual(back.LastRun, s.LastRun) || !sameWritten(back.Written, s.Written) {
			t.Fatalf("a loaded state reads back differently")
		}
	})
}
