package outbox

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 1, 6, 0, 0, 0, time.UTC)

func entry(t *testing.T, syncID string, rows ...string) *Entry {
	t.Helper()
	var b Batch
	for _, r := range rows {
		if err := b.Add(r); err != nil {
			t.Fatal(err)
		}
	}
	return b.Entry(syncID, t0)
}

func rowsOf(t *testing.T, b *Box) []string {
	t.Helper()
	var out []string
	for _, e := range b.Entries {
		err := e.Each(func(line []byte) error {
			var s string
			if err := json.Unmarshal(line, &s); err != nil {
				return err
			}
			out = append(out, s)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// syncs runs the syncs of ids, which ended when ended says so, over box:
// each sends it again and saves it.
func syncs(box *Box, p Policy, ended map[string]bool, ids ...string) *Box {
	for _, id := range ids {
		box = box.Resend(id, func(s string) bool { return ended[s] }, p)
	}
	return box
}

func TestARowIsSentAgainUntilSyncsThatRanToTheirEndSentIt(t *testing.T) {
	p := Policy{Syncs: 3}
	box := (&Box{}).With(entry(t, "s1", "a", "b"))
	ended := map[string]bool{"s1": true, "s2": true, "s3": true}
	if got := rowsOf(t, syncs(box, p, ended, "s2")); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("the sync after the first sends %v again, want a and b", got)
	}
	if got := syncs(box, p, ended, "s2", "s3"); len(got.Entries) != 1 {
		t.Fatalf("two ended syncs have sent the rows: %d entries, want them kept for a third", len(got.Entries))
	}
	if got := syncs(box, p, ended, "s2", "s3", "s4"); len(got.Entries) != 0 {
		t.Fatalf("three ended syncs have sent the rows: %d entries, want none", len(got.Entries))
	}
}

func TestAStoppedSyncDoesNotCount(t *testing.T) {
	p := Policy{Syncs: 3}
	box := (&Box{}).With(entry(t, "s1", "a"))
	// s1 ran to its end; s2 to s5 were stopped; s6 and s7 ended.
	ended := map[string]bool{"s1": true, "s6": true, "s7": true}
	box = syncs(box, p, ended, "s2", "s3", "s4", "s5", "s6", "s7")
	if got := rowsOf(t, box); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("after four stopped syncs and two ended ones the outbox holds %v, want a: only three ended syncs count", got)
	}
	if got := syncs(box, p, ended, "s8"); len(got.Entries) != 0 {
		t.Fatalf("%d entries after the third ended sync, want none", len(got.Entries))
	}
}

func TestTheZeroPolicyKeepsNothing(t *testing.T) {
	box := (&Box{}).With(entry(t, "s1", "a"))
	if (Policy{}).On() || (Policy{Syncs: 1}).On() {
		t.Fatal("a policy of one sync or none sends rows again")
	}
	if got := box.Resend("s2", func(string) bool { return false }, Policy{}); len(got.Entries) != 0 {
		t.Fatalf("the zero policy kept %d entries", len(got.Entries))
	}
}

func TestRowsAreSentAgainOldestFirst(t *testing.T) {
	p := Policy{Syncs: 3}
	box := (&Box{}).With(entry(t, "s1", "a", "b"))
	box = box.Resend("s2", func(string) bool { return true }, p).With(entry(t, "s2", "c"))
	if got := rowsOf(t, saved(t, box)); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("rows %v, want a, b, c", got)
	}
}

// saved is box as the state gives it back.
func saved(t *testing.T, box *Box) *Box {
	t.Helper()
	text, err := box.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := Unmarshal(text, "state")
	if err != nil {
		t.Fatal(err)
	}
	return back
}

func TestADamagedOutboxIsRefusedNamingTheValue(t *testing.T) {
	text, err := (&Box{}).With(entry(t, "s1", "a")).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var j boxJSON
	if err := json.Unmarshal([]byte(text), &j); err != nil {
		t.Fatal(err)
	}
	j.Entries[0].Rows[len(j.Entries[0].Rows)-3] ^= 0xff // zstd's checksum
	damaged, _ := json.Marshal(j)
	if _, err := Unmarshal(string(damaged), `state "x_bookmarks/1"`); err == nil || !strings.Contains(err.Error(), `state "x_bookmarks/1"`) {
		t.Fatalf("a damaged outbox gives %v, want an error naming the value", err)
	}
	if box, err := Unmarshal("", "state"); err != nil || len(box.Entries) != 0 {
		t.Fatalf("the empty value is %v, %v: want an empty outbox", box, err)
	}
}

// Rewrite changes or drops lines, drops an entry left empty, and keeps
// what the entries counted.
func TestRewriteDropsLinesAndEmptyEntries(t *testing.T) {
	var one, two Batch
	for _, v := range []string{"a", "b"} {
		if err := one.Add(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := two.Add("b"); err != nil {
		t.Fatal(err)
	}
	e1 := one.Entry("s1", time.Unix(1, 0))
	e2 := two.Entry("s2", time.Unix(2, 0))
	e1.Sends = 1
	box, err := (&Box{Entries: []Entry{*e1, *e2}}).Rewrite(func(line []byte) ([]byte, error) {
		if string(line) == `"b"` {
			return nil, nil
		}
		return []byte(`"A"`), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(box.Entries) != 1 || box.Entries[0].Sends != 1 || box.Entries[0].LastSync != "s1" {
		t.Fatalf("entries %+v", box.Entries)
	}
	var lines []string
	_ = box.Entries[0].Each(func(line []byte) error { lines = append(lines, string(line)); return nil })
	if len(lines) != 1 || lines[0] != `"A"` {
		t.Errorf("lines %q", lines)
	}
}

// An outbox written before entries were zstd'd, gzip'd, is read as it was
// written, and kept so.
func TestAnOutboxOfGzipdEntriesIsRead(t *testing.T) {
	var rows bytes.Buffer
	zw := gzip.NewWriter(&rows)
	_, _ = zw.Write([]byte("\"a\"\n\"b\"\n"))
	_ = zw.Close()
	old := &Box{Entries: []Entry{{SentAt: t0, LastSync: "s1", Rows: rows.Bytes()}}}
	if got := rowsOf(t, saved(t, old.With(entry(t, "s2", "c")))); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Fatalf("rows %v, want a, b, c", got)
	}
}

// An outbox saved twice in a sync keeps every row it sent by then, those
// added between the saves too: a row is never dropped by a later save.
func TestAnEntryTakenAgainKeepsEveryRow(t *testing.T) {
	r := Open[int](&Box{}, Sync{ID: "s1", StartedAt: time.Unix(1, 0)}, Policy{Syncs: 3})
	var boxes []*Box
	for _, rows := range [][]int{{1, 2}, nil, {3}} {
		if err := r.Add(rows...); err != nil {
			t.Fatal(err)
		}
		box, err := r.Box()
		if err != nil {
			t.Fatal(err)
		}
		boxes = append(boxes, box)
	}
	for i, want := range []int{2, 2, 3} {
		var got []int
		err := Open[int](boxes[i], Sync{ID: "s2", Ended: func(string) bool { return false }}, Policy{Syncs: 3}).Each(func(rows []int) error { got = append(got, rows...); return nil })
		if err != nil || len(got) != want {
			t.Errorf("save %d holds %v (%v), want %d rows", i+1, got, err, want)
		}
	}
}
