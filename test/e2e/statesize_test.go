package e2e

import (
	"strconv"
	"testing"
)

// BenchmarkStateBytesPerAccount reports what an account keeps in the state
// backend in a CloudQuery sync, with the rows it sends again (resend.syncs
// at its default): after a first sync of 800 bookmarks (the most X serves),
// and once daily syncs of 10 new bookmarks each have run long enough that
// the first sync's rows have left the outbox. The simulator's posts carry
// the default fields. With resend.syncs 1, nothing is sent again: the state
// without an outbox.
//
//	go test ./test/e2e -run '^$' -bench StateBytesPerAccount
func BenchmarkStateBytesPerAccount(b *testing.B) {
	for _, syncs := range []int{3, 1} {
		b.Run("resend.syncs="+strconv.Itoa(syncs), func(b *testing.B) {
			for range b.N {
				h := newHarness(b, 800)
				h.spec["resend"] = map[string]any{"syncs": syncs}
				h.sync()
				first := stateBytes(h)
				for range 5 {
					h.bookmarkNew(10)
					h.sync()
				}
				b.ReportMetric(float64(first), "bytes-after-first-sync")
				b.ReportMetric(float64(stateBytes(h)), "bytes-daily-10-new")
			}
		})
	}
}

// stateBytes is the size of every key and value of the state.
func stateBytes(h *harness) int {
	n := 0
	for k, v := range h.store.Committed() {
		n += len(k) + len(v)
	}
	return n
}
