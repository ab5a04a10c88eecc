package perf

import (
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
)

// lowatFor: a mark only where the rate makes it worth it and the window
// has room for it, at most a read's buffer, in powers of two.
func TestLowatFor(t *testing.T) {
	const gbit = 1e9 / 8 // bytes per second
	for _, c := range []struct {
		name                  string
		rate                  float64
		ssthresh, space, most model.Bytes
		want                  model.Bytes
	}{
		// 30 Gbit/s: 1 ms is 3.75 MB; the read buffer bounds it.
		{"fast, room", 30 * gbit, 27 * model.MiB, 8 * model.MiB, 256 * model.KiB, 256 * model.KiB},
		// 2 Gbit/s: 1 ms is 250 kB, floored to a power of two.
		{"2 Gbit/s", 2 * gbit, 27 * model.MiB, 8 * model.MiB, model.MiB, 128 * model.KiB},
		// 200 Mbit/s: 25 kB a millisecond, under lowatMin: none.
		{"slow", 0.2 * gbit, 27 * model.MiB, 8 * model.MiB, model.MiB, 1},
		// A window-limited stream: the sender sends the whole window
		// each round trip, no room to hold bytes back.
		{"window-limited", 30 * gbit, 4 * model.MiB, 4 * model.MiB, model.MiB, 1},
		{"space over ssthresh", 30 * gbit, 4 * model.MiB, 5 * model.MiB, model.MiB, 1},
		// Little room: a quarter of it.
		{"little room", 30 * gbit, 4*model.MiB + 512*model.KiB, 4 * model.MiB, model.MiB, 128 * model.KiB},
		// Nothing measured yet (rcv_space 0): none.
		{"no estimate", 30 * gbit, 4 * model.MiB, 0, model.MiB, 1},
	} {
		if got := lowatFor(c.rate, c.ssthresh, c.space, c.most); got != c.want {
			t.Errorf("%s: lowatFor = %d, want %d", c.name, got, c.want)
		}
	}
}
