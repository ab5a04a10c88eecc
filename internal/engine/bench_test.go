package engine

import (
	"encoding/json"
	"net"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// BenchmarkIntervalTick measures what sampling costs per stream and tick:
// reading tcp_info (with BBR's model), deriving the interval and encoding
// it as the server does for the control connection. At 100 ticks a second
// the per-second CPU cost is 100 × this. docs/BENCHMARKS.md uses it beside
// the throughput comparison, which is too noisy on a small VM to resolve 2%.
func BenchmarkIntervalTick(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			buf := make([]byte, 1<<16)
			for {
				if _, err := c.Read(buf); err != nil {
					return
				}
			}
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	c.Write(make([]byte, 1<<20))
	s := &Stream{id: 0, role: model.Sender, conn: c.(*net.TCPConn), done: make(chan struct{})}
	prev, _ := tcpinfo.Read(s.conn)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		cur, err := tcpinfo.Read(s.conn)
		if err != nil {
			b.Fatal(err)
		}
		cur.At = time.Duration(i+1) * 10 * time.Millisecond
		si := intervalOf(s.id, s.role, true, &prev, &cur, 1<<20, 10*time.Millisecond)
		iv := model.Interval{Index: i, End: cur.At, Streams: []model.StreamInterval{si}}
		if _, err := json.Marshal(&iv); err != nil {
			b.Fatal(err)
		}
		prev = cur
	}
}
