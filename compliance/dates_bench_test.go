package compliance

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/cq-source-x/cq-source-x/ids"
)

// BenchmarkArchivedBytesPerPost reports what the state keeps per archived
// post (the record of the posts the checks cover, with each row's dates),
// what the ids alone took before, and what the record of their authors
// adds: an account whose first sync found 800 bookmarks, then 200 daily
// syncs of 10 new ones, by 400 authors. Ids are X ids of posts made over
// the past years, created_at in whole seconds as X gives it.
//
//	go test ./compliance -run '^$' -bench ArchivedBytesPerPost -benchtime 1x
func BenchmarkArchivedBytesPerPost(b *testing.B) {
	for range b.N {
		r := rand.New(rand.NewPCG(1, 2))
		start := time.Date(2026, 1, 1, 6, 0, 0, 0, time.UTC)
		post := func() found {
			created := start.Add(-time.Duration(r.Int64N(int64(5 * 365 * 24 * time.Hour)))).Truncate(time.Millisecond)
			id := uint64(created.UnixMilli()-xEpochMillis)<<22 | uint64(r.Int64N(1<<22))
			c := created.Truncate(time.Second)
			return found{id: id, dates: Dates{CreatedAt: &c}}
		}
		rec, authors := &archivedRecord{}, authorship{}
		pool := make([]uint64, 400)
		for i := range pool {
			pool[i] = r.Uint64N(1 << 61)
		}
		var prev *time.Time
		for day := range 201 {
			n := 10
			if day == 0 {
				n = 800
			}
			seen := start.Add(time.Duration(day) * 24 * time.Hour)
			batch := make([]found, n)
			for i := range batch {
				batch[i] = post()
				batch[i].dates.FirstSeenAt, batch[i].dates.BookmarkedAfter, batch[i].dates.FoundPosition = seen, prev, int64(i)
			}
			rec.add(batch)
			for _, p := range batch {
				author := pool[r.IntN(len(pool))]
				authors[author] = authors[author].Union(ids.Sorted{p.id})
			}
			prev = &seen
		}
		value, err := rec.marshal()
		if err != nil {
			b.Fatal(err)
		}
		idsOnly, _ := ids.Sorted(rec.ids).Marshal()
		authorsValue, err := authors.marshal()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(len(value))/float64(len(rec.ids)), "bytes/post")
		b.ReportMetric(float64(len(idsOnly))/float64(len(rec.ids)), "ids-only-bytes/post")
		b.ReportMetric(float64(len(authorsValue))/float64(len(rec.ids)), "authors-bytes/post")
	}
}
