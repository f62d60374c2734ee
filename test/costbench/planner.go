package costbench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cloudquery/plugin-sdk/v4/message"
	sdkplugin "github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/client"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/resources"
)

// plannerStrategy runs the real plugin in-process: every user is an account
// of one spec at default planner settings (but Config.Confirmations), one plugin sync per round, table
// x_bookmarks only, state in an in-memory backend (internal/memstate).
type plannerStrategy struct {
	env      *env
	p        *sdkplugin.Plugin
	st       *memstate.Store
	mu       sync.Mutex
	sessions *account.Set
	index    map[string]int // user id -> user index
}

func (s *plannerStrategy) Name() string { return StrategyPlanner }

func (s *plannerStrategy) Start(ctx context.Context, e *env) error {
	s.env = e
	s.st = memstate.New()
	s.index = map[string]int{}
	accounts := make([]map[string]any, len(e.script.UserIDs))
	for u, id := range e.script.UserIDs {
		s.index[id] = u
		accounts[u] = map[string]any{"user_id": id, "access_token": e.tokens[u]}
		if e.owned {
			accounts[u]["owned_reads"] = true
		}
	}
	spec := map[string]any{"base_url": e.sim.URL(), "accounts": accounts}
	if e.content != nil {
		spec["content"] = e.content
	}
	if e.confirmations != 0 {
		spec["planner"] = map[string]any{"confirmations": e.confirmations}
	}
	if w := time.Duration(e.script.Workload.RateLimit.Window); w+time.Minute > 16*time.Minute {
		// Not a planner setting: the default wait cap (16m) fits 15-minute
		// windows only; a longer window needs a longer wait.
		spec["rate_limit_wait_cap"] = (w + time.Minute).String()
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return err
	}
	s.p = plugin.New(
		plugin.WithClock(e.clk),
		plugin.WithTransport(e.transport),
		plugin.WithState(s.st),
		plugin.WithObserver(plugin.ObserverFunc(func(set *account.Set, _ *compliance.Check) {
			s.mu.Lock()
			s.sessions = set
			s.mu.Unlock()
		})),
	)
	if e.logger != nil {
		s.p.SetLogger(*e.logger)
	}
	return s.p.Init(ctx, specJSON, sdkplugin.NewClientOptions{})
}

func (s *plannerStrategy) Sync(ctx context.Context, round int) ([]userSync, error) {
	outs := make([]userSync, len(s.env.script.UserIDs))
	ch := make(chan message.SyncMessage, 64)
	started := s.env.clk.Now()
	var consumeErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		for m := range ch {
			ins, ok := m.(*message.SyncInsert)
			if !ok || consumeErr != nil {
				continue
			}
			consumeErr = s.collect(ins.Record, started, outs)
		}
	}()
	s.mu.Lock()
	s.sessions = nil
	s.mu.Unlock()
	err := s.p.Sync(ctx, sdkplugin.SyncOptions{Tables: []string{resources.BookmarksTable}}, ch)
	close(ch)
	<-done
	if err != nil {
		return nil, fmt.Errorf("plugin sync of round %d: %w", round, err)
	}
	if consumeErr != nil {
		return nil, consumeErr
	}
	s.mu.Lock()
	set := s.sessions
	s.mu.Unlock()
	if set == nil {
		return nil, errors.New("the sessions hook was not called")
	}
	for _, sess := range set.Sessions {
		u, ok := s.index[sess.UserID]
		if !ok {
			return nil, fmt.Errorf("a session for unknown user %q", sess.UserID)
		}
		o := &outs[u]
		mu := sess.Meter.Usage(sess.UserID, client.OpListBookmarks)
		o.Billed, o.Requests, o.RateLimited, o.Waits = mu.PostsReturned, mu.Requests, mu.RateLimited, mu.RateLimitWaits
		o.PostsBilled, o.UsersBilled, o.USD = mu.PostsBilled, mu.UsersBilled, mu.USD
		o.WalkBilled, o.Needed = -1, -1
		if sess.Err != nil {
			o.Err = sess.Err
		}
		for _, w := range sess.Report().Walks() {
			if w.Operation != client.OpListBookmarks {
				continue
			}
			if w.Err != nil {
				o.Err = w.Err
			}
			if r := w.Result; r != nil {
				o.WalkBilled = r.Billed
				o.PageSizes = r.PageSizes
				o.Outcome = string(r.Outcome)
				if r.Outcome.Clean() {
					o.Needed = r.Needed
				}
			}
		}
		if err := sess.Report().Err(); err != nil && o.Err == nil {
			o.Err = err
		}
	}
	return outs, nil
}

// collect adds the (user_id, post_id) pairs of an x_bookmarks record.
// collect adds the posts of the x_bookmarks rows in rec that the sync that
// started at started found to outs. Rows first found by earlier syncs,
// which it sends again (spec.Resend), are not emissions of this round.
func (s *plannerStrategy) collect(rec arrow.RecordBatch, started time.Time, outs []userSync) error {
	if name, _ := rec.Schema().Metadata().GetValue(schema.MetadataTableName); name != resources.BookmarksTable {
		return nil
	}
	col := func(name string) (*array.String, error) {
		idx := rec.Schema().FieldIndices(name)
		if len(idx) != 1 {
			return nil, fmt.Errorf("x_bookmarks has no column %s", name)
		}
		c, ok := rec.Column(idx[0]).(*array.String)
		if !ok {
			return nil, fmt.Errorf("x_bookmarks.%s is %s, not a string column", name, rec.Column(idx[0]).DataType())
		}
		return c, nil
	}
	users, err := col("user_id")
	if err != nil {
		return err
	}
	posts, err := col("post_id")
	if err != nil {
		return err
	}
	idx := rec.Schema().FieldIndices("first_seen_at")
	if len(idx) != 1 {
		return errors.New("x_bookmarks has no column first_seen_at")
	}
	firstSeen, ok := rec.Column(idx[0]).(*array.Timestamp)
	if !ok {
		return fmt.Errorf("x_bookmarks.first_seen_at is %s, not a timestamp column", rec.Column(idx[0]).DataType())
	}
	unit := firstSeen.DataType().(*arrow.TimestampType).Unit
	for i := 0; i < int(rec.NumRows()); i++ {
		if firstSeen.Value(i).ToTime(unit).Before(started) {
			continue
		}
		u, ok := s.index[users.Value(i)]
		if !ok {
			return fmt.Errorf("a row for unknown user %q", users.Value(i))
		}
		outs[u].Emitted = append(outs[u].Emitted, strings.Clone(posts.Value(i))) // Value shares the record's buffer
	}
	return nil
}

func (s *plannerStrategy) Close() {
	if s.p != nil {
		_ = s.p.Close(context.Background())
	}
}
