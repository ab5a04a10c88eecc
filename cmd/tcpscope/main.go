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
	code := cli.Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
