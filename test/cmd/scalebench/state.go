package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/cq-source-x/cq-source-x/test/statebackend"
)

// With -state n, the accounts of a scenario keep their state in a state
// backend this process serves over gRPC (test/statebackend), as a
// CloudQuery destination serves the CLI's syncs: each child plugin sync
// connects to it with backend_options, which spread the state over its
// bucket tables. Syncs of shard i/n of every table, four of each shard,
// bring the state to its steady form (the rows a first sync keeps to send
// again leave it once three later syncs have run); then one sync of every
// account and one of shard 1/n each report the state they read and their
// peak RSS.

// stateResult is the -state run of one scenario.
type stateResult struct {
	Scenario  string
	Total     int
	HeldBytes int // keys and values the backend holds
	Tables    int
	Syncs     []stateSync
}

type stateSync struct {
	Name         string
	Accounts     int
	Tables, Rows int // read of the backend
	Bytes        int // of the Arrow records read
	process
}

// stateSyncs runs the -state syncs of a scenario of the simulator at
// baseURL.
func (b *bench) stateSyncs(sc scenario, baseURL string, tokens []string, total int) (*stateResult, error) {
	accounts := make([]map[string]string, len(tokens))
	for i, tok := range tokens {
		accounts[i] = map[string]string{"user_id": userID(i), "access_token": tok}
	}
	spec := map[string]any{"base_url": baseURL, "accounts": accounts}
	if b.o.concurrency > 0 {
		spec["concurrency"] = b.o.concurrency
	}
	specJSON, err := json.Marshal(spec)
	if err != nil {
		return nil, err
	}
	specFile := filepath.Join(b.work, "plugin-spec.json")
	if err := os.WriteFile(specFile, specJSON, 0o600); err != nil {
		return nil, err
	}
	sock := filepath.Join(b.work, "state.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		return nil, err
	}
	backend, stop := statebackend.Serve(lis)
	defer stop()
	env := []string{envState + "=unix://" + sock}
	sync := func(name string, num, total int) (*stateSync, error) {
		fmt.Fprintf(os.Stderr, "scalebench: %s: state: %s\n", sc.Name, name)
		backend.TakeRead()
		p, err := runProcess(b.self, []string{childShard, specFile, strconv.Itoa(num), strconv.Itoa(total)}, env, b.log)
		if err != nil {
			return nil, err
		}
		var out shardOutput
		if err := json.Unmarshal(p.Stdout, &out); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		if len(out.Failed) > 0 {
			return nil, fmt.Errorf("%s: %d accounts failed", name, len(out.Failed))
		}
		read := backend.TakeRead()
		s := &stateSync{Name: name, Accounts: len(out.Accounts), Tables: len(read.Rows), process: *p}
		for t := range read.Rows {
			s.Rows += read.Rows[t]
			s.Bytes += read.Bytes[t]
		}
		return s, nil
	}
	for round := 1; round <= 4; round++ {
		for num := 1; num <= total; num++ {
			if _, err := sync(fmt.Sprintf("steady state, sync %d of shard %d/%d", round, num, total), num, total); err != nil {
				return nil, err
			}
		}
	}
	res := &stateResult{Scenario: sc.Name, Total: total}
	for _, name := range backend.Tables() {
		res.Tables++
		for k, v := range backend.Table(name) {
			res.HeldBytes += len(k) + len(v)
		}
	}
	for _, num := range []int{0, 1} {
		name := fmt.Sprintf("shard %d/%d", num, total)
		if num == 0 {
			name = "every account"
		}
		s, err := sync(name, num, total*num)
		if err != nil {
			return res, err
		}
		res.Syncs = append(res.Syncs, *s)
	}
	return res, nil
}

func (r *stateResult) write(w io.Writer) {
	fmt.Fprintf(w, "\nState in a gRPC state backend, %s: %s of keys and values in %d tables at steady state\n\n", r.Scenario, megabytes(int64(r.HeldBytes)), r.Tables)
	fmt.Fprintln(w, "| sync | accounts | tables read | rows read | bytes read | wall | peak RSS |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	for _, s := range r.Syncs {
		fmt.Fprintf(w, "| %s | %s | %d | %s | %s | %s | %s |\n", s.Name, thousands(s.Accounts), s.Tables, thousands(s.Rows), kilobytes(int64(s.Bytes)), seconds(s.Wall), megabytes(s.RSS))
	}
	if len(r.Syncs) == 2 {
		all, shard := r.Syncs[0], r.Syncs[1]
		fmt.Fprintf(w, "\nshard 1/%d of every account: %.1f%% of the rows read, %.1f%% of the bytes, %.1f%% of the peak RSS\n", r.Total,
			100*float64(shard.Rows)/float64(all.Rows), 100*float64(shard.Bytes)/float64(all.Bytes), 100*float64(shard.RSS)/float64(all.RSS))
	}
}
