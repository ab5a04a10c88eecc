package cli

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/diagnose"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf"
)

// The server's own diagnosis of a test paced at 1 Mbit/s (what its log
// says, and all a stock iperf3 client's operator sees): little arrived,
// in segments smaller than the MSS, because the client asked for little.
// It read as a path-MTU black hole for every paced test.
func TestServerEndPacedIsNoBlackHole(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	records := make(chan perf.TestRecord, 1)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		(&perf.Server{Version: Version, OnTest: func(r perf.TestRecord) { records <- r }}).Serve(ctx, ln)
		close(done)
	}()
	defer func() { cancel(); <-done }()
	cfg := model.TestConfig{Duration: time.Second, Bitrate: model.MbitPerSecond, Length: 128 * model.KiB}
	if _, err := (&perf.Client{}).Run(context.Background(), ln.Addr().String(), cfg); err != nil {
		t.Fatal(err)
	}
	rec := <-records
	fs := diagnose.ServerEnd(rec.Config, rec.Report)
	for _, f := range fs {
		t.Logf("%s: %s", f.ID, f.Summary)
		if f.ID == "pmtu-blackhole" {
			t.Errorf("a test paced at 1 Mbit/s diagnosed as a black hole: %s", f.Summary)
		}
	}
}
