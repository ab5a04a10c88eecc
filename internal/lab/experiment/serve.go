package experiment

import (
	"context"
	"fmt"
	"net"
	"strconv"

	"github.com/tcpscope/tcpscope/internal/iperf3"
	"github.com/tcpscope/tcpscope/internal/lab"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// Serve starts a tcpscope server in pair p's host B on port (0: any) and
// returns its address and a function that stops it and waits for it to
// finish. It lives here, not in package lab, because the lab builds paths
// and tests the engine without importing it: this package is where the
// two meet.
func Serve(ctx context.Context, p *lab.Pair, port int, version string) (string, func(), error) {
	ln, err := p.B.Listen(ctx, "tcp", net.JoinHostPort(p.B.Addr.String(), strconv.Itoa(port)))
	if err != nil {
		return "", nil, fmt.Errorf("listen in host B: %w", err)
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv := perf.Add(&serve.Server{Version: version, InNetns: p.B.Do})
		// Stock iperf3 clients too, as tcpscope server serves them: a
		// lab shell's user runs iperf3 -c $B as well.
		srv.Handle(&iperf3.Handler{})
		srv.Serve(sctx, ln)
	}()
	return ln.Addr().String(), func() { cancel(); <-done }, nil
}
