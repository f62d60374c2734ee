package e2e

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pbdiscovery "github.com/cloudquery/plugin-pb-go/pb/discovery/v1"
	pb "github.com/cloudquery/plugin-pb-go/pb/plugin/v3"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"google.golang.org/grpc"
)

// stateBackend is a small destination plugin that the SDK's state client
// talks to, as the CloudQuery CLI's state backend (a destination such as
// PostgreSQL) would: Write stores key/value rows in their table, Read
// returns a table's rows.
type stateBackend struct {
	pb.UnimplementedPluginServer
	pbdiscovery.UnimplementedDiscoveryServer

	mu      sync.Mutex
	tables  map[string]map[string]string // table → key → value
	writes  int
	written func(keys []string) // called after each write, with its keys
	refuse  bool                // writes fail: the plugin writing is dead
	read    map[string]int      // table → rows read
}

// onWrite has f called after each write, with the keys it wrote (nil: none).
func (b *stateBackend) onWrite(f func(keys []string)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.written = f
}

// refuseWrites makes writes fail, or succeed again.
func (b *stateBackend) refuseWrites(refuse bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refuse = refuse
}

type versioned struct {
	value   string
	version uint64
}

func startStateBackend(t *testing.T, dir string) (*stateBackend, string) {
	t.Helper()
	sock := filepath.Join(dir, "state.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	b := &stateBackend{tables: map[string]map[string]string{}, read: map[string]int{}}
	srv := grpc.NewServer()
	pb.RegisterPluginServer(srv, b)
	pbdiscovery.RegisterDiscoveryServer(srv, b)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return b, "unix://" + sock
}

func (b *stateBackend) GetVersions(context.Context, *pbdiscovery.GetVersions_Request) (*pbdiscovery.GetVersions_Response, error) {
	return &pbdiscovery.GetVersions_Response{Versions: []int32{3}}, nil
}

func (b *stateBackend) Write(stream grpc.ClientStreamingServer[pb.Write_Request, pb.Write_Response]) error {
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&pb.Write_Response{})
		}
		if err != nil {
			return err
		}
		if m, ok := req.Message.(*pb.Write_Request_MigrateTable); ok {
			sc, err := pb.NewSchemaFromBytes(m.MigrateTable.Table)
			if err != nil {
				return err
			}
			b.mu.Lock()
			b.table(sc)
			b.mu.Unlock()
			continue
		}
		ins, ok := req.Message.(*pb.Write_Request_Insert)
		if !ok {
			continue
		}
		rec, err := pb.NewRecordFromBytes(ins.Insert.Record)
		if err != nil {
			return err
		}
		keys, values := rec.Column(0).(*array.String), rec.Column(1).(*array.String)
		b.mu.Lock()
		if b.refuse {
			b.mu.Unlock()
			return errors.New("the state backend lost its writer")
		}
		table := b.table(rec.Schema())
		var written []string
		for i := 0; i < keys.Len(); i++ {
			table[keys.Value(i)] = values.Value(i)
			written = append(written, keys.Value(i))
		}
		b.writes++
		hook := b.written
		b.mu.Unlock()
		if hook != nil {
			hook(written)
		}
	}
}

func (b *stateBackend) Read(req *pb.Read_Request, stream grpc.ServerStreamingServer[pb.Read_Response]) error {
	sc, err := pb.NewSchemaFromBytes(req.Table)
	if err != nil {
		return err
	}
	bldr := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer bldr.Release()
	b.mu.Lock()
	table := b.table(sc)
	b.read[tableName(sc)] += len(table)
	for k, v := range table {
		bldr.Field(0).(*array.StringBuilder).Append(k)
		bldr.Field(1).(*array.StringBuilder).Append(v)
		if sc.NumFields() > 2 {
			bldr.Field(2).(*array.Uint64Builder).Append(1)
		}
	}
	b.mu.Unlock()
	rec := bldr.NewRecordBatch()
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	return stream.Send(&pb.Read_Response{Record: buf.Bytes()})
}

// table is the rows of the table sc names, created empty when missing.
func (b *stateBackend) table(sc *arrow.Schema) map[string]string {
	name := tableName(sc)
	if b.tables[name] == nil {
		b.tables[name] = map[string]string{}
	}
	return b.tables[name]
}

func tableName(sc *arrow.Schema) string {
	name, _ := sc.Metadata().GetValue(schema.MetadataTableName)
	return name
}

// oldTable is the table the syncs are given (backend_options.table_name),
// where versions before buckets kept every key.
const oldTable = "cq_state_x"

// value is the value of key in the state's buckets (not the old table).
func (b *stateBackend) value(key string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, table := range b.tables {
		if v, ok := table[key]; ok && name != oldTable {
			return v
		}
	}
	return ""
}

// rowsRead counts the rows read of each table, and clears the counts.
func (b *stateBackend) rowsRead() map[string]int {
	b.mu.Lock()
	defer b.mu.Unlock()
	read := b.read
	b.read = map[string]int{}
	return read
}
