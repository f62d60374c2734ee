// Command interruptloop interrupts the exporter at random moments, hundreds
// of times, with SIGINT (Ctrl-C) and SIGTERM, and reports hangs, panics,
// bookmarks lost, keys written twice and posts counted billed twice
// (package test/interruptloop says how).
//
//	go run ./test/cmd/interruptloop [-n 300] [-accounts 3] [-bookmarks 2000] [-seed 1] [-race] [-binary PATH] [-v]
//
// It builds the binary first (with -race, under the race detector) unless
// -binary names one, and
// exits 1 when the loop saw anything the exporter must not do.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"time"

	"github.com/cq-source-x/cq-source-x/test/interruptloop"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "interruptloop:", err)
		os.Exit(1)
	}
}

func run() error {
	var o interruptloop.Options
	var race, verbose bool
	var keep, binary string
	flag.IntVar(&o.Interrupts, "n", 300, "interrupts")
	flag.IntVar(&o.Accounts, "accounts", 3, "accounts")
	flag.IntVar(&o.Bookmarks, "bookmarks", 2000, "bookmarks per account at the start")
	flag.DurationVar(&o.Latency, "latency", 10*time.Millisecond, "latency of each request")
	flag.Uint64Var(&o.Seed, "seed", 1, "seed of the delays, signals and list changes")
	flag.BoolVar(&race, "race", false, "build the binary with the race detector")
	flag.BoolVar(&verbose, "v", false, "a line per round")
	flag.StringVar(&keep, "dir", "", "directory for the archives (default: a temporary one, removed)")
	flag.StringVar(&binary, "binary", "", "the binary to interrupt (default: built from this checkout)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	dir := keep
	if dir == "" {
		tmp, err := os.MkdirTemp("", "interruptloop-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	o.Dir, o.Binary = dir, binary
	if binary == "" {
		o.Binary = filepath.Join(dir, "cq-source-x")
		args := []string{"build", "-o", o.Binary}
		if race {
			args = append(args, "-race")
		}
		build := exec.Command("go", append(args, "github.com/cq-source-x/cq-source-x")...)
		build.Stderr = os.Stderr
		if err := build.Run(); err != nil {
			return fmt.Errorf("building the binary: %w", err)
		}
	}
	if verbose {
		o.Log = os.Stderr
	}
	rep, err := interruptloop.Run(ctx, o)
	if rep != nil {
		rep.WriteText(os.Stdout)
	}
	if err != nil {
		return err
	}
	if !rep.OK() {
		return fmt.Errorf("the exporter did what it must not (see above); archives in %s", dir)
	}
	return nil
}
