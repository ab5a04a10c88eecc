package cli

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/gate"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// The server's own diagnosis of a test paced at 1 Mbit/s (what its log
// says, and all a stock iperf3 client's operator sees): little arrived,
// in segments smaller than the MSS, because the client asked for little.
// It read as a path-MTU black hole for every paced test.
func TestServerEndPacedIsNoBlackHole(t *testing.T) {
	t.Parallel() // paced at 1 Mbit/s: runs beside the other paced tests
	rec := served(t, nil, model.TestConfig{Duration: time.Second, Bitrate: model.MbitPerSecond, Length: 128 * model.KiB})
	fs := diagnose.ServerEnd(rec.Config, rec.Report, rec.Client, rec.Server)
	for _, f := range fs {
		t.Logf("%s: %s", f.ID, f.Summary)
		if f.ID == "pmtu-blackhole" {
			t.Errorf("a test paced at 1 Mbit/s diagnosed as a black hole: %s", f.Summary)
		}
	}
}

// The server's own diagnosis of a test it held to its rate cap names the
// cap: before, it read as a sender nobody could see into, "the receiver
// kept up", when the receiver was the one holding the rate.
func TestServerEndNamesItsCap(t *testing.T) {
	tb, err := limits.Parse([]byte("[default]\nmax_rate = \"200M\"\n"), limits.Builtin())
	if err != nil {
		t.Fatal(err)
	}
	for _, reverse := range []bool{false, true} {
		t.Run(fmt.Sprintf("reverse=%v", reverse), func(t *testing.T) {
			t.Parallel() // paced by the cap, each on its own server
			rec := served(t, &tb, model.TestConfig{Duration: 2 * time.Second, Parallel: 2, Reverse: reverse})
			if rec.Report.RateCap != 200*model.MbitPerSecond {
				t.Errorf("-R %v: the server's report says a cap of %v", reverse, rec.Report.RateCap)
			}
			fs := diagnose.ServerEnd(rec.Config, rec.Report, rec.Client, rec.Server)
			if len(fs) == 0 || fs[0].ID != "server-rate-cap" {
				for _, f := range fs {
					t.Logf("%s: %s", f.ID, f.Summary)
				}
				t.Errorf("-R %v: the server's verdict does not name its own cap", reverse)
			}
		})
	}
}

// The server's own diagnosis of a test over loopback knows there is no
// path, as the client's does: it once said "the path's bottleneck is the
// limit" in its log and in a stock client's --get-server-output, for
// lack of the test's addresses.
func TestServerEndOverLoopbackHasNoPath(t *testing.T) {
	rec := served(t, nil, model.TestConfig{Duration: time.Second, Reverse: true})
	fs := diagnose.ServerEnd(rec.Config, rec.Report, rec.Client, rec.Server)
	if len(fs) == 0 {
		t.Fatal("no finding")
	}
	for _, f := range fs {
		t.Logf("%s: %s", f.ID, f.Summary)
		// The limit may be a CPU (under -race it was); where it is
		// the "bottleneck", it must say there is none.
		if strings.Contains(f.Summary, "path's bottleneck") || f.ID == "bottleneck" && !strings.Contains(f.Summary, "no path") {
			t.Errorf("over loopback the server's diagnosis names a path: %s: %s", f.ID, f.Summary)
		}
	}
}

// served runs one native test of cfg against a server on loopback, of
// policy (nil: the built-in), and returns the server's record of it.
func served(t *testing.T, policy *limits.Table, cfg model.TestConfig) gate.Record {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	records := make(chan gate.Record, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		srv := perf.Add(&serve.Server{Version: Version, Policy: policy})
		srv.Subscribe(gate.OnEnded(func(r gate.Record) { records <- r }))
		srv.Serve(ctx, ln)
		close(done)
	}()
	defer func() { cancel(); <-done }()
	if _, err := (&perf.Client{}).Run(context.Background(), ln.Addr().String(), cfg); err != nil {
		t.Fatal(err)
	}
	return <-records
}
