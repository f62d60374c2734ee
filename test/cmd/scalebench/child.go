package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/metrics"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/cloudquery/plugin-sdk/v4/message"
	sdkplugin "github.com/cloudquery/plugin-sdk/v4/plugin"
	"github.com/cloudquery/plugin-sdk/v4/schema"
	"github.com/cq-source-x/cq-source-x/account"
	"github.com/cq-source-x/cq-source-x/cli"
	"github.com/cq-source-x/cq-source-x/compliance"
	"github.com/cq-source-x/cq-source-x/cqspec"
	"github.com/cq-source-x/cq-source-x/internal/memstate"
	"github.com/cq-source-x/cq-source-x/plugin"
	"github.com/cq-source-x/cq-source-x/resources"
)

// The benchmark runs what it measures in child processes of its own binary,
// so that each one's peak RSS is its own and the simulator's is not in it:
//
//	scalebench child-export ARGS...   is `cq-source-x export ARGS...` (cli, as main.go runs it)
//	scalebench child-shard SPEC N T [TABLES]   is a plugin sync of shard N/T of SPEC's accounts (SPEC's tables, or TABLES; every account with T 0), state in memory, or in the state backend at $SCALEBENCH_STATE
//	scalebench child-browse ARGS...   is `cq-source-x browse ARGS...`, stopped by SIGINT
//
// With SCALEBENCH_HEAPPROFILE=FILE set, a child writes a heap profile to
// FILE each time the Go heap reaches a new high (by a tenth), so the last
// one shows what was live near the peak; with SCALEBENCH_CPUPROFILE=FILE,
// a CPU profile of its whole run.
const (
	childExport = "child-export"
	childShard  = "child-shard"
	envState    = "SCALEBENCH_STATE"
	envHeapProf = "SCALEBENCH_HEAPPROFILE"
	envCPUProf  = "SCALEBENCH_CPUPROFILE"
)

// isChild says whether arg names a child of the benchmark.
func isChild(arg string) bool { return arg == childExport || arg == childShard || arg == childBrowse }

func runChild(args []string) int {
	if path := os.Getenv(envHeapProf); path != "" {
		stop := profileHeapPeaks(path)
		defer stop()
	}
	if path := os.Getenv(envCPUProf); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "CPU profile:", err)
			return 1
		}
		defer f.Close()
		defer pprof.StopCPUProfile()
	}
	ctx := context.Background()
	switch args[0] {
	case childExport:
		return cli.Run(ctx, append([]string{"export"}, args[1:]...), os.Stdin, os.Stdout, os.Stderr)
	case childBrowse:
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
		defer stop()
		return cli.Run(ctx, append([]string{"browse"}, args[1:]...), os.Stdin, os.Stdout, os.Stderr)
	case childShard:
		if len(args) != 4 && len(args) != 5 {
			fmt.Fprintln(os.Stderr, "usage: scalebench child-shard SPEC N T [TABLES]")
			return 2
		}
		var num, total int
		if _, err := fmt.Sscan(args[2]+" "+args[3], &num, &total); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		var tables []string
		if len(args) == 5 {
			tables = strings.Split(args[4], ",")
		}
		out, err := syncShard(ctx, args[1], num, total, tables)
		if err != nil {
			fmt.Fprintln(os.Stderr, "Error:", err)
			return 1
		}
		if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	return 2
}

// shardOutput is what one shard's sync did: its accounts (user ids, in
// spec order) and the x_bookmarks rows it sent for each.
type shardOutput struct {
	Accounts []string       `json:"accounts"`
	Rows     map[string]int `json:"rows"`
	Failed   []string       `json:"failed,omitempty"`
}

// syncShard runs the plugin as `cloudquery sync --shard num/total` runs it
// (the spec's tables unless tables is set, the SDK scheduler, the state in
// memory or in the backend $SCALEBENCH_STATE names), and counts the rows it
// sends. Total 0 syncs every account. A SPEC of .json is the plugin's
// spec alone, all tables (the CloudQuery CLI reads the spec file itself,
// however large).
func syncShard(ctx context.Context, specFile string, num, total int, tables []string) (*shardOutput, error) {
	src := &cqspec.Source{Tables: []string{"*"}}
	var err error
	if strings.HasSuffix(specFile, ".json") {
		src.PluginSpec, err = os.ReadFile(specFile)
	} else {
		src, err = cqspec.Read(specFile)
	}
	if err != nil {
		return nil, err
	}
	if tables == nil {
		tables = src.Tables
	}
	out := &shardOutput{Rows: map[string]int{}}
	var set *account.Set
	opts := []plugin.Option{plugin.WithObserver(plugin.ObserverFunc(func(s *account.Set, _ *compliance.Check) { set = s }))}
	sync := sdkplugin.SyncOptions{Tables: tables}
	if total > 0 {
		sync.Shard = &sdkplugin.Shard{Num: int32(num), Total: int32(total)}
	}
	if backend := os.Getenv(envState); backend != "" {
		sync.BackendOptions = &sdkplugin.BackendOptions{TableName: "cq_state_x", Connection: backend}
	} else {
		opts = append(opts, plugin.WithState(memstate.New()))
	}
	p := plugin.New(opts...)
	if err := p.Init(ctx, src.PluginSpec, sdkplugin.NewClientOptions{}); err != nil {
		return nil, err
	}
	defer p.Close(ctx)
	ch := make(chan message.SyncMessage, 64)
	errc := make(chan error, 1)
	go func() {
		defer close(ch)
		errc <- p.Sync(ctx, sync, ch)
	}()
	var countErr error
	for m := range ch {
		ins, ok := m.(*message.SyncInsert)
		if !ok || countErr != nil {
			continue
		}
		if name, _ := ins.Record.Schema().Metadata().GetValue(schema.MetadataTableName); name != resources.BookmarksTable {
			continue
		}
		idx := ins.Record.Schema().FieldIndices("user_id")
		if len(idx) != 1 {
			countErr = fmt.Errorf("x_bookmarks has no column user_id")
			continue
		}
		users, ok := ins.Record.Column(idx[0]).(*array.String)
		if !ok {
			countErr = fmt.Errorf("x_bookmarks.user_id is not a string column")
			continue
		}
		for i := range users.Len() {
			out.Rows[users.Value(i)]++ // the map key copies the string
		}
	}
	if err := <-errc; err != nil {
		return nil, err
	}
	if countErr != nil {
		return nil, countErr
	}
	if set == nil {
		return nil, fmt.Errorf("the sessions hook was not called")
	}
	for _, s := range set.Sessions {
		out.Accounts = append(out.Accounts, s.UserID)
		if s.Err != nil || s.Report().Err() != nil {
			out.Failed = append(out.Failed, s.UserID)
		}
	}
	return out, nil
}

// profileHeapPeaks samples the heap every 100 ms and writes a heap profile
// to path whenever it is a tenth above the last one written.
func profileHeapPeaks(path string) (stop func()) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	done, finished := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(finished)
		var last uint64
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
			}
			metrics.Read(sample)
			if v := sample[0].Value.Uint64(); v > last+last/10 {
				last = v
				writeHeapProfile(path)
			}
		}
	}()
	return func() { close(done); <-finished }
}

func writeHeapProfile(path string) {
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	f, err := os.Create(tmp)
	if err != nil {
		return
	}
	err = pprof.Lookup("heap").WriteTo(f, 0)
	if f.Close() == nil && err == nil {
		os.Rename(tmp, path)
	}
}
