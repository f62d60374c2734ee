// Command cq-source-x is a CloudQuery source plugin for X bookmarks and a
// standalone exporter to Parquet. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/cq-source-x/cq-source-x/cli"
)

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	signals := make(chan os.Signal, 2)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal stops the command, which ends what it does
		// (an export commits what it read); a second one exits at once.
		<-signals
		cancel()
		<-signals
		fmt.Fprintln(os.Stderr, "\nInterrupted again: exiting at once. Nothing is committed past the last commit; run the command again.")
		os.Exit(cli.ExitInterrupted)
	}()
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	os.Exit(code)
}
