package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"
	"testing"

	"github.com/tcpscope/tcpscope/internal/daemon"
	"github.com/tcpscope/tcpscope/internal/perf/perftest"
)

// TestMain runs the paced and timer-bound tests several at once (they
// wait on the clock, not the CPU); see perftest.RunClockBound. Started as
// a daemon child (server -D re-executes the program, here this test
// binary), it is tcpscope instead, as cmd/tcpscope's main would be.
func TestMain(m *testing.M) {
	if _, ok := os.LookupEnv(daemon.EnvReady); ok {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		code := Main(ctx, os.Args[1:], os.Stdout, os.Stderr)
		stop()
		os.Exit(code)
	}
	os.Exit(perftest.RunClockBound(m))
}
