package perf

import (
	"os"
	"testing"

	"github.com/tcpscope/tcpscope/internal/perf/perftest"
)

// TestMain runs the paced and timer-bound tests several at once (they
// wait on the clock, not the CPU); see perftest.RunClockBound.
func TestMain(m *testing.M) { os.Exit(perftest.RunClockBound(m)) }
