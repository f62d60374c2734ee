package archived

import (
	"math/rand/v2"
	"strconv"
	"testing"
	"time"
)

// BenchmarkRecordBytesPerPost reports what the state keeps per archived
// post in the record (each bookmark's id, dates and author): an account
// whose first sync found 800 bookmarks, then 200 daily syncs of 10 new
// ones, by 400 authors, with and without the dates (a CloudQuery sync
// keeps them, the exporter not). Ids are X ids of posts made over the past
// years, created_at in whole seconds as X gives it.
//
//	go test ./archived -run '^$' -bench RecordBytesPerPost -benchtime 1x
func BenchmarkRecordBytesPerPost(b *testing.B) {
	for range b.N {
		for _, dated := range []bool{true, false} {
			r := rand.New(rand.NewPCG(1, 2))
			start := time.Date(2026, 1, 1, 6, 0, 0, 0, time.UTC)
			pool := make([]uint64, 400)
			for i := range pool {
				pool[i] = r.Uint64N(1 << 61)
			}
			rec := &Record{}
			var prev *time.Time
			for day := range 201 {
				n := 10
				if day == 0 {
					n = 800
				}
				seen := start.Add(time.Duration(day) * 24 * time.Hour)
				batch := make([]Post, n)
				for i := range batch {
					created := start.Add(-time.Duration(r.Int64N(int64(5 * 365 * 24 * time.Hour)))).Truncate(time.Millisecond)
					id := uint64(created.UnixMilli()-xEpochMillis)<<22 | uint64(r.Int64N(1<<22))
					c := created.Truncate(time.Second)
					batch[i] = Post{ID: strconv.FormatUint(id, 10), AuthorID: strconv.FormatUint(pool[r.IntN(len(pool))], 10),
						Dates: &Dates{CreatedAt: &c, FirstSeenAt: seen, BookmarkedAfter: prev, FoundPosition: int64(i)}}
				}
				rec.AddBookmarks(batch, dated)
				prev = &seen
			}
			value, err := rec.Marshal()
			if err != nil {
				b.Fatal(err)
			}
			metric := "bytes/post"
			if !dated {
				metric = "undated-bytes/post"
			}
			b.ReportMetric(float64(len(value))/float64(len(rec.Bookmarks())), metric)
		}
	}
}
