package perf

import (
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// Receive low-water marks (issue 15). A reader on Go's poller reads
// whatever is queued, then finds the queue empty, parks, and is woken by
// the next segment: on loopback or a veth pair at 20-30 Gbit/s that is
// tens of thousands of park/wake cycles a second, each an epoll_pwait,
// a context switch and, once the whole process is idle, the runtime's
// sysmon put to sleep and woken again by the next read (futex). Measured
// with a stock iperf3 -l 128K client, the server made 2x iperf3's
// context switches and 1.5x its CPU per byte. With SO_RCVLOWAT the
// kernel wakes the reader only once a mark's worth is queued, so each
// wake reads a full buffer: the server then ran at iperf3's CPU per
// byte and the pair faster than iperf3's (docs/BENCHMARKS.md).
//
// A mark holds bytes back from the count until it fills, so it is kept
// small against what it could distort:
//   - the time: at most lowatSpan of the stream's recent rate, so while
//     the rate holds no byte waits longer than that to be counted;
//     should the rate collapse, the bytes held are still at most that
//     much of the old rate (0.1% of a 1 s interval), counted when the
//     mark fills, the window runs low or the sender's end of file comes;
//   - the window: at most a quarter of the room the window the receiver
//     offers has beyond what the sender sends per round trip
//     (rcv_ssthresh - rcv_space), so a window-limited stream, which has
//     no such room, gets no mark and its rate is the window's;
//   - the path: only where the round trip is under lowatRTT and the rate
//     at least lowatMin a millisecond (about 2 Gbit/s), where waking per
//     segment is what costs CPU (loopback, a LAN, a veth pair). Across a
//     1 Gbit/s, 21 ms lab path a 64 KiB mark cost a stock receiver about
//     1% of its rate (895-899 against 904-907 Mbit/s): the window there
//     is not far above the path's bandwidth-delay product, and what the
//     mark holds back is window the sender cannot use;
//   - the end: once the test is stopped the mark is dropped (dropLowat),
//     since an iperf3 peer ends a test on its control connection, not
//     with an end of file that would wake the reader.
//
// A paced reader
// and an iperf3 client counting its reads to a byte or block count get
// none.
const (
	lowatSpan   = time.Millisecond
	lowatWindow = 10 * time.Millisecond
	lowatMin    = 256 * model.KiB
	lowatRTT    = time.Millisecond
)

// lowatFor is the mark for a stream read at rate bytes per second
// across a path of round trip minRTT (absent: not known), whose receiver
// offers a window of up to ssthresh against space bytes per round trip
// (tcp_info's rcv_ssthresh and rcv_space), reading at most most bytes a
// call: a power of two from lowatMin, or 1 (the kernel's default, no
// mark). Powers of two keep a wobbling rate from setting it anew every
// window.
func lowatFor(rate float64, minRTT model.Opt[time.Duration], ssthresh, space, most model.Bytes) model.Bytes {
	if r, ok := minRTT.Get(); !ok || r >= lowatRTT || ssthresh <= space || space == 0 {
		return 1
	}
	m := min(model.Bytes(rate*lowatSpan.Seconds()), most, (ssthresh-space)/4)
	if m < lowatMin {
		return 1
	}
	p := lowatMin
	for p*2 <= m {
		p *= 2
	}
	return p
}

// lowater fits one receiving TCP stream's mark to its rate, on the
// stream's goroutine.
type lowater struct {
	e    *End
	s    *Stream
	most model.Bytes
	// from is when the current window began (on the end's clock), bytes
	// what was read in it.
	from  time.Duration
	bytes int64
	off   bool // the kernel refused a mark: read as before
}

// read counts n bytes read at at and, once a window has passed, fits
// the mark to the window's rate.
func (l *lowater) read(n int, at time.Duration) {
	if l.off {
		return
	}
	l.bytes += int64(n)
	dt := at - l.from
	if dt < lowatWindow {
		return
	}
	rate := float64(l.bytes) / dt.Seconds()
	l.from, l.bytes = at, 0
	if l.e.isStopped() {
		return
	}
	smp, err := tcpinfo.Read(l.s.conn)
	if err != nil {
		l.off = true
		return
	}
	want := lowatFor(rate, smp.MinRTT, smp.RcvSsthresh, smp.RcvSpace, l.most)
	if int64(want) == l.s.lowat.Load() || (want == 1 && l.s.lowat.Load() == 0) {
		return
	}
	l.s.lowat.Store(int64(want))
	if err := tcpinfo.SetRcvLowat(l.s.conn, want); err != nil {
		l.s.lowat.Store(0)
		l.off = true
		return
	}
	// A stop that came after the check above may have dropped the mark
	// before this set it: drop it again (stop's own drop comes after
	// this look if the look missed it).
	if l.e.isStopped() {
		l.s.dropLowat()
	}
}

// dropLowat gives a receiving TCP stream the kernel's default mark back
// (waking its reader if anything is queued). Safe from any goroutine.
func (s *Stream) dropLowat() {
	if s.conn == nil || s.role != model.Receiver {
		return
	}
	s.lowat.Store(0)
	_ = tcpinfo.SetRcvLowat(s.conn, 1)
}
