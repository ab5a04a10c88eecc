// Command tcpscope measures, instruments and explains TCP transfers.
// Everything lives in internal/cli; main only wires signals and the exit code.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/tcpscope/tcpscope/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	// The first Ctrl-C ends a test cleanly; restoring the default then
	// lets a second one kill a process that is slow to finish.
	go func() { <-ctx.Done(); stop() }()
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
