package resources

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/cloudquery/plugin-sdk/v4/message"
	"github.com/cloudquery/plugin-sdk/v4/scheduler"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/sandbox/xsim"
	"github.com/cq-source-x/cq-source-x/spec"
)

// BenchmarkBookmarkRecords measures the hot path from decoded posts to the
// SDK's Arrow records: the x_bookmarks column resolvers, the scheduler's
// resources and its batching, with no HTTP. A page of 100 real-shaped posts
// (from the simulator, default fields) is emitted 100 times per operation.
func BenchmarkBookmarkRecords(b *testing.B) {
	page := benchPage(b)
	const pages = 100
	seen := time.Now()
	table := Bookmarks()
	schema.AddCqIDs(table)
	table.Multiplex = nil
	table.Resolver = func(_ context.Context, _ schema.ClientMeta, _ *schema.Resource, res chan<- any) error {
		for range pages {
			rows := make([]*bookmark, len(page.Data))
			for i := range page.Data {
				rows[i] = &bookmark{userID: "1", post: &page.Data[i], firstSeenAt: seen}
			}
			res <- rows
		}
		return nil
	}
	for i := range table.Columns {
		if table.Columns[i].Resolver == nil {
			table.Columns[i].Resolver = resolvedByScheduler
		}
	}
	sched := scheduler.NewScheduler()
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		msgs := make(chan message.SyncMessage, 64)
		rows := 0
		done := make(chan struct{})
		go func() {
			for m := range msgs {
				if ins, ok := m.(*message.SyncInsert); ok {
					rows += int(ins.Record.NumRows())
				}
			}
			close(done)
		}()
		if err := sched.Sync(context.Background(), &account.Set{}, schema.Tables{table}, msgs); err != nil {
			b.Fatal(err)
		}
		close(msgs)
		<-done
		if rows != pages*100 {
			b.Fatalf("%d rows", rows)
		}
	}
	b.ReportMetric(float64(b.N*pages*100)/b.Elapsed().Seconds(), "rows/s")
}

// benchPage is a page of 100 real-shaped posts from the simulator, with the
// default fields.
func benchPage(b *testing.B) *client.PostPage {
	sim := xsim.New(xsim.Options{DisableRateLimits: true})
	if err := sim.Start(); err != nil {
		b.Fatal(err)
	}
	defer sim.Close()
	sim.SeedBookmarks("1", 100)
	api, err := client.New(client.StaticTokenWithTransport(sim.IssueToken("1"), http.DefaultTransport), client.WithBaseURL(sim.URL()))
	if err != nil {
		b.Fatal(err)
	}
	s := spec.Spec{}
	s.SetDefaults()
	page, _, err := api.ListBookmarks(context.Background(), "1", client.ListOptions{
		PageOptions: client.PageOptions{MaxResults: 100},
		Fields:      client.Fields{TweetFields: s.Fields.TweetFields},
	})
	if err != nil || len(page.Data) != 100 {
		b.Fatalf("page: %v, %d posts", err, len(page.Data))
	}
	return page
}
