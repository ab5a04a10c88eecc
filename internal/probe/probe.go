// Package probe learns a path's basic facts the way the seeds' method
// starts, before any load: the round-trip time from timed TCP handshakes
// (a connect returns after one round trip, so no ICMP is needed and
// firewalls that drop ping do not matter), the MSS the ends agree on, and
// the path MTU the kernel knows for the destination.
package probe

import (
	"context"
	"fmt"
	"net"
	"slices"
	"syscall"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// DialTimeout bounds each handshake of a Path with the default dialer: a
// path that drops everything fails in this time, not the kernel's two
// minutes of SYN retries.
const DialTimeout = 10 * time.Second

// Dialer opens one TCP connection.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

// Path times n handshakes to addr (at least 1) and reads the MSS and path
// MTU of the last connection. A nil dial connects plainly, each attempt
// bounded by DialTimeout. The connections close at once; a tcpscope
// or iperf3 server takes that as a client that went away.
func Path(ctx context.Context, dial Dialer, network, addr string, n int) (model.PathFacts, error) {
	f := model.PathFacts{Addr: addr}
	if dial == nil {
		d := net.Dialer{Timeout: DialTimeout}
		dial = d.DialContext
	}
	var rtts []time.Duration
	for i := range max(n, 1) {
		start := time.Now()
		c, err := dial(ctx, network, addr)
		if err != nil {
			return f, fmt.Errorf("probe %s: %w", addr, err)
		}
		rtts = append(rtts, time.Since(start))
		if i == max(n, 1)-1 {
			if sc, ok := c.(syscall.Conn); ok {
				f.MSS, _ = tcpinfo.MSS(sc)
				f.PMTU, _ = tcpinfo.PathMTU(sc)
			}
		}
		c.Close()
	}
	slices.Sort(rtts)
	f.Connects, f.RTTMin, f.RTTMedian = len(rtts), rtts[0], rtts[len(rtts)/2]
	return f, nil
}
