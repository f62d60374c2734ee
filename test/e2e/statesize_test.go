package e2e

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/cq-source-x/cq-source-x/resources"
)

// BenchmarkStateBytesPerAccount reports what an account keeps in the state
// backend in a CloudQuery sync, with the rows it sends again (resend.syncs
// at its default): after a first sync of 800 bookmarks (the most X serves),
// and once daily syncs of 10 new bookmarks each have run long enough that
// the first sync's rows have left the outbox. The simulator's posts carry
// the default fields. With resend.syncs 1, nothing is sent again: the state
// without an outbox. rows-as-json-bytes is the leaner record the outbox
// could keep instead of X's pages: the first sync's rows of x_bookmarks and
// its content tables, without the _cq_ columns, as JSON lines compressed
// as the outbox compresses.
//
//	go test ./test/e2e -run '^$' -bench StateBytesPerAccount
func BenchmarkStateBytesPerAccount(b *testing.B) {
	for _, syncs := range []int{3, 1} {
		b.Run("resend.syncs="+strconv.Itoa(syncs), func(b *testing.B) {
			for range b.N {
				h := newHarness(b, 800)
				h.spec["resend"] = map[string]any{"syncs": syncs}
				r := h.sync()
				first := stateBytes(h)
				for range 5 {
					h.bookmarkNew(10)
					h.sync()
				}
				b.ReportMetric(float64(first), "bytes-after-first-sync")
				b.ReportMetric(float64(stateBytes(h)), "bytes-daily-10-new")
				b.ReportMetric(float64(rowsAsJSONBytes(b, r)), "rows-as-json-bytes")
			}
		})
	}
}

// rowsAsJSONBytes is the size of the rows of x_bookmarks and its content
// tables r sent, without the _cq_ columns, as zstd'd JSON lines.
func rowsAsJSONBytes(b *testing.B, r syncResult) int {
	var lines []byte
	for _, table := range slices.Sorted(maps.Keys(r.tables)) {
		if table != resources.BookmarksTable && !resources.IsBookmarkContent(table) {
			continue
		}
		for _, row := range r.tables[table] {
			maps.DeleteFunc(row, func(k, _ string) bool { return strings.HasPrefix(k, "_cq_") })
			line, err := json.Marshal(row)
			if err != nil {
				b.Fatal(err)
			}
			lines = append(append(lines, line...), '\n')
		}
	}
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression))
	if err != nil {
		b.Fatal(err)
	}
	return len(enc.EncodeAll(lines, nil))
}

// stateBytes is the size of every key and value of the state.
func stateBytes(h *harness) int {
	n := 0
	for k, v := range h.store.Committed() {
		n += len(k) + len(v)
	}
	return n
}
