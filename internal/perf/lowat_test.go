package perf

import (
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// lowatFor: a mark only where the rate makes it worth it and the window
// has room for it, at most a read's buffer, in powers of two.
func TestLowatFor(t *testing.T) {
	const gbit = 1e9 / 8 // bytes per second
	for _, c := range []struct {
		name                  string
		rate                  float64
		rtt                   time.Duration // 0: not known
		ssthresh, space, most model.Bytes
		want                  model.Bytes
	}{
		// 30 Gbit/s on loopback: 1 ms is 3.75 MB; the read buffer bounds it.
		{"fast, room", 30 * gbit, 10 * time.Microsecond, 27 * model.MiB, 8 * model.MiB, 256 * model.KiB, 256 * model.KiB},
		{"fast, 1 MiB reads", 30 * gbit, 10 * time.Microsecond, 27 * model.MiB, 8 * model.MiB, model.MiB, model.MiB},
		// 5 Gbit/s: 1 ms is 625 kB, floored to a power of two.
		{"5 Gbit/s", 5 * gbit, 200 * time.Microsecond, 27 * model.MiB, 8 * model.MiB, model.MiB, 512 * model.KiB},
		// 1 Gbit/s: 125 kB a millisecond, under lowatMin: none.
		{"1 Gbit/s", 1 * gbit, 200 * time.Microsecond, 27 * model.MiB, 8 * model.MiB, model.MiB, 1},
		// A WAN path: none, whatever the rate.
		{"21 ms", 30 * gbit, 21 * time.Millisecond, 270 * model.MiB, 80 * model.MiB, model.MiB, 1},
		{"no RTT", 30 * gbit, 0, 27 * model.MiB, 8 * model.MiB, model.MiB, 1},
		// A window-limited stream: the sender sends the whole window
		// each round trip, no room to hold bytes back.
		{"window-limited", 30 * gbit, 10 * time.Microsecond, 4 * model.MiB, 4 * model.MiB, model.MiB, 1},
		{"space over ssthresh", 30 * gbit, 10 * time.Microsecond, 4 * model.MiB, 5 * model.MiB, model.MiB, 1},
		// Little room: a quarter of it.
		{"little room", 30 * gbit, 10 * time.Microsecond, 5 * model.MiB, 4 * model.MiB, model.MiB, 256 * model.KiB},
		{"too little room", 30 * gbit, 10 * time.Microsecond, 4*model.MiB + 512*model.KiB, 4 * model.MiB, model.MiB, 1},
		// Nothing measured yet (rcv_space 0): none.
		{"no estimate", 30 * gbit, 10 * time.Microsecond, 4 * model.MiB, 0, model.MiB, 1},
	} {
		rtt := model.Opt[time.Duration]{}
		if c.rtt > 0 {
			rtt = model.Some(c.rtt)
		}
		if got := lowatFor(c.rate, rtt, c.ssthresh, c.space, c.most); got != c.want {
			t.Errorf("%s: lowatFor = %d, want %d", c.name, got, c.want)
		}
	}
}
