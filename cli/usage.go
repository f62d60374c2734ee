package cli

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
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

// lastSyncs reads the x_api_usage files of an exporter's output directory
// and returns, per user id, the rows of that user's latest sync. The files
// are small (a few rows per account and sync), so all are read: whatever
// merged or renamed them, the latest sync is the one with the latest start.
func lastSyncs(ctx context.Context, out string) (map[string][]usageRow, error) {
	latest := map[string][]usageRow{}
	err := readUsage(out, func(user string, r usageRow) {
		rows := latest[user]
		switch {
		case len(rows) == 0 || r.StartedAt.After(rows[0].StartedAt):
			latest[user] = []usageRow{r}
		case r.StartedAt.Equal(rows[0].StartedAt) && r.SyncID == rows[0].SyncID:
			latest[user] = append(rows, r)
		}
	})
	if err != nil {
		return nil, err
	}
	for _, rows := range latest {
		sort.Slice(rows, func(i, j int) bool { return rows[i].Operation < rows[j].Operation })
	}
	return latest, nil
}

// syncCost is what one sync billed for one account: its x_api_usage rows
// added up.
type syncCost struct {
	StartedAt    time.Time `json:"sync_started_at"`
	PostsBilled  int64     `json:"posts_billed"`
	EstimatedUSD float64   `json:"estimated_usd"`
}

// recentCosts reads the x_api_usage files of an exporter's output
// directory and returns, per user id, what each of its last n syncs
// billed, the latest first.
func recentCosts(ctx context.Context, out string, n int) (map[string][]syncCost, error) {
	bySync := map[[2]string]*syncCost{}
	err := readUsage(out, func(user string, r usageRow) {
		c := bySync[[2]string{user, r.SyncID}]
		if c == nil {
			c = &syncCost{StartedAt: r.StartedAt}
			bySync[[2]string{user, r.SyncID}] = c
		}
		c.PostsBilled += r.PostsBilled
		c.EstimatedUSD += r.EstimatedUSD
	})
	if err != nil {
		return nil, err
	}
	costs := map[string][]syncCost{}
	for key, c := range bySync {
		costs[key[0]] = append(costs[key[0]], *c)
	}
	for user, list := range costs {
		sort.Slice(list, func(i, j int) bool { return list[i].StartedAt.After(list[j].StartedAt) })
		costs[user] = list[:min(n, len(list))]
	}
	return costs, nil
}

// readUsage reads the rows of syncs of the archive's x_api_usage: the rows
// of the bookmark commands' requests are not a sync's.
func readUsage(out string, row func(user string, r usageRow)) error {
	snap, err := archive.OpenSnapshot(out)
	if err != nil {
		return err
	}
	defer snap.Close()
	return snap.Read(resources.APIUsageTable, nil, func(rec arrow.RecordBatch) error {
		return readUsageRecord(rec, func(user string, r usageRow) {
			if op := client.Operation(r.Operation); op != client.OpAddBookmark && op != client.OpRemoveBookmark {
				row(user, r)
			}
		})
	})
}

func readUsageRecord(rec arrow.RecordBatch, row func(user string, r usageRow)) error {
	var missing []string
	col := func(name string) arrow.Array {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) == 0 {
			missing = append(missing, name)
			return nil
		}
		return rec.Column(idx[0])
	}
	syncID, user, op := col("sync_id"), col("user_id"), col("operation")
	started, requests, billed := col("sync_started_at"), col("requests"), col("posts_billed")
	usd, found, outcomes, failure := col("estimated_usd"), col("new_posts"), col("walk_outcomes"), col("failure")
	if len(missing) > 0 {
		return fmt.Errorf("not an x_api_usage file: no column %s", strings.Join(missing, ", "))
	}
	str := func(a arrow.Array, i int) string {
		if s, ok := a.(*array.String); ok && s.IsValid(i) {
			return s.Value(i)
		}
		return ""
	}
	num := func(a arrow.Array, i int) int64 {
		if n, ok := a.(*array.Int64); ok && n.IsValid(i) {
			return n.Value(i)
		}
		return 0
	}
	for i := 0; i < int(rec.NumRows()); i++ {
		r := usageRow{
			SyncID: str(syncID, i), Operation: str(op, i), Requests: num(requests, i), PostsBilled: num(billed, i),
			NewPosts: num(found, i), WalkOutcomes: str(outcomes, i), Failure: str(failure, i),
		}
		if ts, ok := started.(*array.Timestamp); ok && ts.IsValid(i) {
			unit := ts.DataType().(*arrow.TimestampType).Unit
			r.StartedAt = ts.Value(i).ToTime(unit).UTC()
		}
		if f, ok := usd.(*array.Float64); ok && f.IsValid(i) {
			r.EstimatedUSD = f.Value(i)
		}
		row(str(user, i), r)
	}
	return nil
}
