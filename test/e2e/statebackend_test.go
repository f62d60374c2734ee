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
	"google.golang.org/grpc"
)

// stateBackend is a small destination plugin that the SDK's state client
// talks to, as the CloudQuery CLI's state backend (a destination such as
// PostgreSQL) would: Write stores key/value rows, Read returns them.
type stateBackend struct {
	pb.UnimplementedPluginServer
	pbdiscovery.UnimplementedDiscoveryServer

	mu      sync.Mutex
	values  map[string]string
	writes  int
	written func(keys []string) // called after each write, with its keys
	refuse  bool                // writes fail: the plugin writing is dead
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
	b := &stateBackend{values: map[string]string{}}
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
		ins, ok := req.Message.(*pb.Write_Request_Insert)
		if !ok {
			continue // table migrations need nothing here
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
		var written []string
		for i := 0; i < keys.Len(); i++ {
			b.values[keys.Value(i)] = values.Value(i)
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
	for k, v := range b.values {
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

func (b *stateBackend) value(key string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.values[key]
}

var _ arrow.RecordBatch
