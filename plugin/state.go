package plugin

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	pb "github.com/cloudquery/plugin-pb-go/pb/plugin/v3"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cloudquery/plugin-sdk/v4/state"
	"github.com/cq-source-x/cq-source-x/account"
	"google.golang.org/grpc"
)

// The state of a CloudQuery sync is spread over stateBuckets tables, so
// that a shard reads and holds its own accounts' state alone (the SDK's
// client reads its table whole): see docs/design/plugin.md#state-buckets.
const stateBuckets = 256

// userBucket is the bucket of an account's state: it never changes.
func userBucket(userID string) int {
	h := fnv.New32a()
	h.Write([]byte(userID))
	return int(h.Sum32() % stateBuckets)
}

// scopeBucket is the bucket of a sync scope's keys: the first of its shard.
func scopeBucket(scope string) int {
	var num, total int
	if _, err := fmt.Sscanf(scope, "shard-%d-of-%d", &num, &total); err != nil || num < 1 {
		return 0
	}
	return (num - 1) % stateBuckets
}

func bucketOf(key string) (int, error) {
	k, ok := account.ParseKey(key)
	switch {
	case !ok:
		return 0, fmt.Errorf("state key %q is of no form the plugin writes", key)
	case k.User != "":
		return userBucket(k.User), nil
	}
	return scopeBucket(k.Scope), nil
}

// bucketedState is a state.Client over the bucket tables of a backend.
type bucketedState struct {
	conn   *grpc.ClientConn
	prefix string // backend_options.table_name
	scope  int    // the bucket of the sync's scope

	mu     sync.Mutex
	tables map[int]state.Client
	dirty  map[int]bool
	old    map[string]string // the table before buckets, once read
}

// openBuckets is the state of a sync of scope in conn's backend, its scope's table open.
func openBuckets(ctx context.Context, conn *grpc.ClientConn, prefix, scope string) (*bucketedState, error) {
	s := &bucketedState{conn: conn, prefix: prefix, scope: scopeBucket(scope), tables: map[int]state.Client{}, dirty: map[int]bool{}}
	if _, err := s.table(ctx, s.scope); err != nil {
		return nil, err
	}
	return s, nil
}

func (s *bucketedState) GetKey(ctx context.Context, key string) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, _, err := s.tableOf(ctx, key)
	if err != nil {
		return "", err
	}
	return c.GetKey(ctx, key)
}

// SetKey marks the bucket dirty and sets the key under the one lock Flush
// takes: no flush can come in between and leave the key unflushed.
func (s *bucketedState) SetKey(ctx context.Context, key, value string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, b, err := s.tableOf(ctx, key)
	if err != nil {
		return err
	}
	s.dirty[b] = true
	return c.SetKey(ctx, key, value)
}

// Flush writes the tables that changed, the scope's first: a compliance
// job whose results the accounts' checks took is cleared before them, so a
// stop in between checks the posts again rather than take them twice.
func (s *bucketedState) Flush(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	order := append([]int{s.scope}, slices.Collect(maps.Keys(s.dirty))...)
	for _, b := range order {
		if s.dirty[b] {
			if err := s.tables[b].Flush(ctx); err != nil {
				return err
			}
			delete(s.dirty, b)
		}
	}
	return nil
}

func (s *bucketedState) Close() error { return s.conn.Close() }

// tableOf is the table of key's bucket, and the bucket. s.mu held.
func (s *bucketedState) tableOf(ctx context.Context, key string) (state.Client, int, error) {
	b, err := bucketOf(key)
	if err != nil {
		return nil, 0, err
	}
	c, err := s.table(ctx, b)
	return c, b, err
}

// table is bucket b's table, opened (and the old table's keys moved in) the first time.
func (s *bucketedState) table(ctx context.Context, b int) (state.Client, error) {
	if c := s.tables[b]; c != nil {
		return c, nil
	}
	name := fmt.Sprintf("%s_%03d", s.prefix, b)
	c, err := state.NewClient(ctx, s.conn, name)
	if err == nil {
		err = s.moveOld(ctx, b, c)
	}
	if err != nil {
		return nil, fmt.Errorf("state table %s: %w", name, err)
	}
	s.tables[b] = c
	return c, nil
}

// moveOld copies bucket b's keys of the old table into c and marks it, unless marked.
func (s *bucketedState) moveOld(ctx context.Context, b int, c state.Client) error {
	if moved, err := c.GetKey(ctx, account.MovedKey); err != nil || moved != "" {
		return err
	}
	if s.old == nil {
		old, err := readTable(ctx, s.conn, s.prefix)
		if err != nil {
			return fmt.Errorf("reading the state of versions before buckets, %s: %w", s.prefix, err)
		}
		s.old = old
	}
	for k, v := range s.old {
		if kb, err := bucketOf(k); err == nil && kb == b {
			if err := c.SetKey(ctx, k, v); err != nil {
				return err
			}
			delete(s.old, k)
		}
	}
	if err := c.Flush(ctx); err != nil {
		return err
	}
	if err := c.SetKey(ctx, account.MovedKey, s.prefix); err != nil {
		return err
	}
	return c.Flush(ctx)
}

// readTable reads a whole state table as the SDK's state client does
// (docs/design/plugin.md#state-buckets).
func readTable(ctx context.Context, conn *grpc.ClientConn, name string) (map[string]string, error) {
	table, err := pb.SchemaToBytes((&schema.Table{Name: name, Columns: []schema.Column{
		{Name: "key", Type: arrow.BinaryTypes.String, PrimaryKey: true},
		{Name: "value", Type: arrow.BinaryTypes.String},
		{Name: "version", Type: arrow.PrimitiveTypes.Uint64},
	}}).ToArrowSchema())
	if err != nil {
		return nil, err
	}
	plugin := pb.NewPluginClient(conn)
	w, err := plugin.Write(ctx)
	if err == nil {
		err = w.Send(&pb.Write_Request{Message: &pb.Write_Request_MigrateTable{MigrateTable: &pb.Write_MessageMigrateTable{Table: table}}})
	}
	if err == nil {
		_, err = w.CloseAndRecv()
	}
	if err != nil {
		return nil, err
	}
	r, err := plugin.Read(ctx, &pb.Read_Request{Table: table})
	if err != nil {
		return nil, err
	}
	values, versions := map[string]string{}, map[string]uint64{}
	for {
		res, err := r.Recv()
		if errors.Is(err, io.EOF) {
			return values, nil
		}
		if err != nil {
			return nil, err
		}
		rdr, err := ipc.NewReader(bytes.NewReader(res.Record))
		if err != nil {
			return nil, err
		}
		for rdr.Next() {
			rec := rdr.RecordBatch()
			keys, vals := rec.Column(0).(*array.String), rec.Column(1).(*array.String)
			ver, _ := rec.Column(2).(*array.Uint64)
			for i := range keys.Len() {
				var v uint64
				if ver != nil && ver.IsValid(i) {
					v = ver.Value(i)
				}
				if _, seen := values[keys.Value(i)]; !seen || v >= versions[keys.Value(i)] {
					values[keys.Value(i)], versions[keys.Value(i)] = vals.Value(i), v
				}
			}
		}
		if err := rdr.Err(); err != nil {
			return nil, err
		}
		rdr.Release()
	}
}
