package cli

import (
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/cq-source-x/cq-source-x/archive"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/resources"
)

// usageRow is the part of an x_api_usage row status shows.
type usageRow struct {
	SyncID       string    `json:"sync_id"`
	Operation    string    `json:"operation"`
	StartedAt    time.Time `json:"sync_started_at"`
	Requests     int64     `json:"requests"`
	PostsBilled  int64     `json:"posts_billed"`
	EstimatedUSD float64   `json:"estimated_usd"`
	NewPosts     int64     `json:"new_posts"`
	WalkOutcomes string    `json:"walk_outcomes,omitempty"`
	Failure      string    `json:"failure,omitempty"`
}

// syncs are, per user id, the rows of the user's syncs in the x_api_usage
// files of an exporter's output directory, whatever merged or renamed
// them: the latest sync first, a sync's rows by operation. The rows of the
// bookmark commands' requests are not a sync's.
func syncs(out string) (map[string][][]usageRow, error) {
	bySync := map[[2]string][]usageRow{} // by user id and sync id
	err := readUsage(out, func(user string, r usageRow) {
		if op := client.Operation(r.Operation); op != client.OpAddBookmark && op != client.OpRemoveBookmark {
			key := [2]string{user, r.SyncID}
			bySync[key] = append(bySync[key], r)
		}
	})
	all := map[string][][]usageRow{}
	for key, rows := range bySync {
		slices.SortFunc(rows, func(a, b usageRow) int { return strings.Compare(a.Operation, b.Operation) })
		all[key[0]] = append(all[key[0]], rows)
	}
	for _, user := range all {
		slices.SortFunc(user, func(a, b []usageRow) int { return b[0].StartedAt.Compare(a[0].StartedAt) })
	}
	return all, err
}

// readUsage calls row with each row of the x_api_usage files of out (they
// are small: a few rows per account and sync).
func readUsage(out string, row func(user string, r usageRow)) error {
	want := []string{"sync_id", "user_id", "operation", "sync_started_at", "requests", "posts_billed", "estimated_usd", "new_posts", "walk_outcomes", "failure"}
	return archive.ReadRows(out, resources.APIUsageTable, want, nil, func(c *archive.Cols, i int) {
		num := func(name string) int64 { n, _ := c.Int(name, i); return n }
		usd, _ := strconv.ParseFloat(c.Raw("estimated_usd", i), 64) // a float's text is exact
		row(c.Str("user_id", i), usageRow{
			SyncID: c.Str("sync_id", i), Operation: c.Str("operation", i), StartedAt: c.Time("sync_started_at", i),
			Requests: num("requests"), PostsBilled: num("posts_billed"), EstimatedUSD: usd, NewPosts: num("new_posts"),
			WalkOutcomes: c.Str("walk_outcomes", i), Failure: c.Str("failure", i),
		})
	})
}
