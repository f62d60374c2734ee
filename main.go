// Command cq-source-x is a CloudQuery source plugin for X bookmarks and a
// standalone exporter to Parquet. See README.md.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/cq-source-x/cq-source-x/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
