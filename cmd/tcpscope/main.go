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

// commit and commitDate are stamped by the Makefile (-ldflags -X), for
// builds Go's own VCS stamping misses; tcpscope version prints them.
var commit, commitDate string

func main() {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		// The first signal ends the work cleanly: tests stop and report,
		// the lab is taken down. A second one means now.
		<-sigs
		cancel()
		<-sigs
		os.Exit(cli.ExitInterrupted)
	}()
	code := cli.MainBuild(ctx, cli.Build{Commit: commit, Date: commitDate}, os.Args[1:], os.Stdout, os.Stderr)
	cancel()
	os.Exit(code)
}
