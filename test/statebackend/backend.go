// Package statebackend is a small destination plugin that the SDK's state
// client talks to over gRPC, as the CloudQuery CLI's state backend (a
// destination such as PostgreSQL) does: Write stores key/value rows in
// their table, Read returns a table's rows. The end-to-end tests and the
// state benchmark serve it.
package statebackend

import (
	"bytes"
	"context"
	"errors"
	"io"
	"maps"
	"net"
	"slices"
	"sync"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
	pbdiscovery "github.com/cloudquery/plugin-pb-go/pb/discovery/v1"
	pb "github.com/cloudquery/plugin-pb-go/pb/plugin/v3"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"google.golang.org/grpc"
)

// Backend holds the state tables.
type Backend struct {
	pb.UnimplementedPluginServer
	pbdiscovery.UnimplementedDiscoveryServer

	mu      sync.Mutex
	tables  map[string]map[string]string // table → key → value
	written func(keys []string)          // called after each write, with its keys
	refuse  bool                         // writes fail: the plugin writing is dead
	read    Read
}

// Read is what Read calls sent: rows and bytes (of the Arrow records) by
// table.
type Read struct {
	Rows, Bytes map[string]int
}

// Serve serves a new Backend on lis until stop is called.
func Serve(lis net.Listener) (b *Backend, stop func()) {
	b = &Backend{tables: map[string]map[string]string{}, read: Read{Rows: map[string]int{}, Bytes: map[string]int{}}}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(100 << 20))
	pb.RegisterPluginServer(srv, b)
	pbdiscovery.RegisterDiscoveryServer(srv, b)
	go func() { _ = srv.Serve(lis) }()
	return b, srv.Stop
}

// OnWrite has f called after each write, with the keys it wrote (nil: none).
func (b *Backend) OnWrite(f func(keys []string)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.written = f
}

// RefuseWrites makes writes fail, or succeed again.
func (b *Backend) RefuseWrites(refuse bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.refuse = refuse
}

// Table is a copy of a table's rows.
func (b *Backend) Table(name string) map[string]string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return maps.Clone(b.tables[name])
}

// Tables names the tables.
func (b *Backend) Tables() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Sorted(maps.Keys(b.tables))
}

// SetTable replaces a table's rows.
func (b *Backend) SetTable(name string, rows map[string]string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.tables[name] = maps.Clone(rows)
}

// Value is the value of key in any table but skip.
func (b *Backend) Value(key, skip string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	for name, table := range b.tables {
		if v, ok := table[key]; ok && name != skip {
			return v
		}
	}
	return ""
}

// TakeRead returns what was read since the last call.
func (b *Backend) TakeRead() Read {
	b.mu.Lock()
	defer b.mu.Unlock()
	read := b.read
	b.read = Read{Rows: map[string]int{}, Bytes: map[string]int{}}
	return read
}

func (b *Backend) GetVersions(context.Context, *pbdiscovery.GetVersions_Request) (*pbdiscovery.GetVersions_Response, error) {
	return &pbdiscovery.GetVersions_Response{Versions: []int32{3}}, nil
}

func (b *Backend) Write(stream grpc.ClientStreamingServer[pb.Write_Request, pb.Write_Response]) error {
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
		hook := b.written
		b.mu.Unlock()
		if hook != nil {
			hook(written)
		}
	}
}

// Read sends a table's rows, a record of at most 1,000 at a time, as a
// database destination sends what it reads as it reads it.
func (b *Backend) Read(req *pb.Read_Request, stream grpc.ServerStreamingServer[pb.Read_Response]) error {
	sc, err := pb.NewSchemaFromBytes(req.Table)
	if err != nil {
		return err
	}
	b.mu.Lock()
	rows := maps.Clone(b.table(sc))
	b.mu.Unlock()
	bldr := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer bldr.Release()
	send := func() error {
		rec := bldr.NewRecordBatch()
		defer rec.Release()
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
		if err := w.Write(rec); err != nil {
			return err
		}
		if err := w.Close(); err != nil {
			return err
		}
		b.mu.Lock()
		b.read.Rows[tableName(sc)] += int(rec.NumRows())
		b.read.Bytes[tableName(sc)] += buf.Len()
		b.mu.Unlock()
		return stream.Send(&pb.Read_Response{Record: buf.Bytes()})
	}
	n := 0
	for k, v := range rows {
		bldr.Field(0).(*array.StringBuilder).Append(k)
		bldr.Field(1).(*array.StringBuilder).Append(v)
		if sc.NumFields() > 2 {
			bldr.Field(2).(*array.Uint64Builder).Append(1)
		}
		if n++; n%1000 == 0 {
			if err := send(); err != nil {
				return err
			}
		}
	}
	if n%1000 != 0 {
		return send()
	}
	return nil
}

// table is the rows of the table sc names, created empty when missing.
// b.mu held.
func (b *Backend) table(sc *arrow.Schema) map[string]string {
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
