package cli

import (
	"fmt"
	"maps"
	"slices"
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

// lastSyncs are, per user id, the rows of the user's latest sync in the
// x_api_usage files of an exporter's output directory: the one with the
// latest start, whatever merged or renamed the files.
func lastSyncs(out string) (map[string][]usageRow, error) {
	all, err := readUsage(out)
	latest := map[string][]usageRow{}
	for user, rows := range all {
		var last []usageRow
		for _, r := range rows {
			switch {
			case len(last) == 0 || r.StartedAt.After(last[0].StartedAt):
				last = []usageRow{r}
			case r.StartedAt.Equal(last[0].StartedAt) && r.SyncID == last[0].SyncID:
				last = append(last, r)
			}
		}
		slices.SortFunc(last, func(a, b usageRow) int { return strings.Compare(a.Operation, b.Operation) })
		latest[user] = last
	}
	return latest, err
}

// syncCost is what one sync billed for one account.
type syncCost struct {
	StartedAt    time.Time `json:"sync_started_at"`
	PostsBilled  int64     `json:"posts_billed"`
	EstimatedUSD float64   `json:"estimated_usd"`
}

// recentCosts are, per user id, what each of the user's last n syncs in
// the exporter's output directory billed, the latest first.
func recentCosts(out string, n int) (map[string][]syncCost, error) {
	all, err := readUsage(out)
	costs := map[string][]syncCost{}
	for user, rows := range all {
		bySync := map[string]syncCost{}
		for _, r := range rows {
			c, ok := bySync[r.SyncID]
			if !ok {
				c.StartedAt = r.StartedAt
			}
			c.PostsBilled += r.PostsBilled
			c.EstimatedUSD += r.EstimatedUSD
			bySync[r.SyncID] = c
		}
		list := slices.SortedFunc(maps.Values(bySync), func(a, b syncCost) int { return b.StartedAt.Compare(a.StartedAt) })
		costs[user] = list[:min(n, len(list))]
	}
	return costs, err
}

// readUsage reads the rows of syncs of the archive's x_api_usage, by user
// id (the files are small: a few rows per account and sync). The rows of
// the bookmark commands' requests are not a sync's.
func readUsage(out string) (map[string][]usageRow, error) {
	snap, err := archive.OpenSnapshot(out)
	if err != nil {
		return nil, err
	}
	defer snap.Close()
	rows := map[string][]usageRow{}
	return rows, snap.Read(resources.APIUsageTable, nil, func(rec arrow.RecordBatch) error {
		return readUsageRecord(rec, func(user string, r usageRow) {
			if op := client.Operation(r.Operation); op != client.OpAddBookmark && op != client.OpRemoveBookmark {
				rows[user] = append(rows[user], r)
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
