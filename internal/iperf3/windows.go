package iperf3

import (
	"context"
	"fmt"
	"net"
	"sync/atomic"
	"time"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// The pace of watching a stock server's windows: while the test runs,
// for their largest (what an emptied receive buffer advertises); once the
// senders stop, for the acknowledgement of the last byte and the window's
// reopening.
const (
	windowPoll = 10 * time.Millisecond
	drainPoll  = time.Millisecond
)

// The wait, past the acknowledgement of a stream's last byte, for the
// server's application to read what its kernel holds is bounded: every
// moment of it lengthens the server's time for the stream (it ends at
// TEST_END) and not the sender's (it ends when writing stopped), so the
// two ends' rates drift apart by the wait's share of the test. At most
// readWaitShare of the stream's writing time, and at most maxReadWait.
const (
	readWaitShare = 0.01
	maxReadWait   = time.Second
)

// readGrace is the wait, past the acknowledgement of a stream's last
// byte and its window back at its largest, for a server's read loop to
// take the bytes the window's scale hides: a turn of its loop.
const readGrace = 2 * time.Millisecond

// peerWindows follows the window a stock iperf3 server advertises on each
// sending TCP stream (tcp_info's snd_wnd): it shrinks by what the server's
// kernel holds unread, and reopens as its application reads.
type peerWindows struct {
	streams []*engine.Stream
	max     []model.Bytes
	// bounded: the whole wait, the acknowledgements' too, is bounded by
	// readWaitShare. A server that also sends (--bidir) reads slowly once
	// this end stops sending, its one thread writing up to ten blocks
	// for each it reads, and its time for what it receives runs on until
	// TEST_END: waiting for every acknowledgement set its clock up to 3%
	// past this end's (10 runs at loopback speed), and it still had not
	// read all.
	bounded bool
}

func newPeerWindows(senders []*engine.Stream, bounded bool) *peerWindows {
	w := &peerWindows{bounded: bounded}
	for _, s := range senders {
		if s.TCP() != nil {
			w.streams = append(w.streams, s)
		}
	}
	w.max = make([]model.Bytes, len(w.streams))
	return w
}

// poll notes each stream's window.
func (w *peerWindows) poll() {
	for i, s := range w.streams {
		if smp, err := tcpinfo.Read(s.TCP()); err == nil {
			w.note(i, &smp)
		}
	}
}

func (w *peerWindows) note(i int, smp *model.Sample) {
	if v, ok := smp.SndWnd.Get(); ok && v > w.max[i] {
		w.max[i] = v
	}
}

// awaitRead waits, once the senders have stopped, until the server has
// every byte and its application has likely read them: iperf3 stops
// counting at TEST_END, and what is then in flight, queued here or
// unread there goes uncounted (esnet/iperf#382). First every byte is
// acknowledged (the send queue empties; a stream whose acknowledgements
// stall for engine.StallLimit is given up). Then the server's window reopens as
// its application reads: a stream is done when its window is back to its
// largest and readGrace has passed since its last byte was acknowledged
// (the window's scale hides the last few bytes unread). Linux receivers
// announce a reopening only while the window is under half its ceiling,
// so a window may stay short though all was read;
// its shortfall is what was unread at its last announcement, and the
// application reads it at the stream's rate or faster: a stream is done
// once that time (and two round trips) has passed since the window last
// moved, and at most readWaitShare of its writing time after its last
// byte was acknowledged. (A server that sends too, --bidir, reads far
// slower once this end stops sending: its loop writes up to ten blocks
// for each one it reads. There the bound decides, from the start of the
// wait: see peerWindows.bounded.) Without snd_wnd
// (kernels before 5.4), the acknowledgement is all there is to wait for.
//
// A timed test's wait ends at cutBy at the latest (the zero time: none),
// as a native receiver stops waiting for a sender's queue to drain past
// the planned end (engine.CutAfter): cut reports that it did, bytes still
// unacknowledged then.
func (w *peerWindows) awaitRead(ctx context.Context, cutBy time.Time) (cut bool) {
	begin := time.Now()
	ps := make([]streamRead, len(w.streams))
	for i, s := range w.streams {
		// The stream's writing, done by now.
		if d := s.Finished().Seconds(); d > 0 {
			ps[i].bytesPerSecond = float64(s.Moved()) / d
		}
		ps[i].budget = min(time.Duration(float64(s.Finished())*readWaitShare), maxReadWait)
	}
	for {
		pending, unacked := false, false
		now := time.Now()
		for i, s := range w.streams {
			p := &ps[i]
			if p.done {
				continue
			}
			smp, err := tcpinfo.Read(s.TCP())
			if err != nil || !smp.SendQ.OK {
				p.done = true // nothing to tell by
				continue
			}
			w.note(i, &smp)
			unacked = unacked || smp.SendQ.V > 0
			wait := p.acking(&smp, now, now.Sub(begin), w.bounded)
			if smp.SendQ.V == 0 {
				wait = p.reading(&smp, now, w.max[i])
			}
			p.done = !wait
			pending = pending || wait
		}
		if !pending {
			return false
		}
		if !cutBy.IsZero() && !now.Before(cutBy) {
			return unacked
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(drainPoll):
		}
	}
}

// streamRead is one stream's progress in awaitRead.
type streamRead struct {
	done           bool
	acked          model.Bytes // bytes acknowledged, and since when
	ackedSince     time.Time
	allAcked       time.Time
	wnd            model.Bytes // the window, once all is acknowledged, and since when
	wndSince       time.Time
	bytesPerSecond float64 // the stream's writing rate
	budget         time.Duration
}

// acking says whether to wait on for a stream with bytes still
// unacknowledged (smp's send queue): until they are acknowledged, unless
// the wait is bounded and has taken the stream's budget, or the
// acknowledgements stall for engine.StallLimit. With the send queue empty
// it notes when all was acknowledged, and says no.
func (p *streamRead) acking(smp *model.Sample, now time.Time, waited time.Duration, bounded bool) bool {
	if smp.SendQ.V == 0 {
		if p.allAcked.IsZero() {
			p.allAcked = now
		}
		return false
	}
	if bounded && waited >= p.budget {
		return false
	}
	if a := smp.BytesAcked.V; p.ackedSince.IsZero() || a != p.acked {
		p.acked, p.ackedSince = a, now
	} else if now.Sub(p.ackedSince) >= engine.StallLimit {
		return false
	}
	return true
}

// reading says whether to wait on for a stream whose bytes are all
// acknowledged, for the server's application to read them: until its
// window (smp's) is back to its ceiling, readGrace after all was
// acknowledged, or until the time to read its shortfall at the stream's
// rate has passed since the window last moved, within the budget.
func (p *streamRead) reading(smp *model.Sample, now time.Time, ceiling model.Bytes) bool {
	wnd, ok := smp.SndWnd.Get()
	if !ok || p.bytesPerSecond == 0 {
		return false
	}
	if wnd >= ceiling {
		// The window moves in steps of its scale (1 KiB with a 32 MiB
		// buffer), so back at its largest it may still hide a few bytes
		// unread: the tail of the server's last read, which its loop
		// takes on its next turn, microseconds later (a stock server
		// left 53 bytes of 1.49 GB uncounted without this wait).
		return now.Sub(p.allAcked) < min(readGrace, p.budget)
	}
	if p.wndSince.IsZero() || wnd != p.wnd {
		p.wnd, p.wndSince = wnd, now
	}
	unread := float64(ceiling-wnd) / p.bytesPerSecond
	due := p.wndSince.Add(time.Duration(unread*float64(time.Second)) + 2*smp.RTT)
	if due.Before(p.allAcked.Add(readGrace)) {
		due = p.allAcked.Add(readGrace) // the window's scale hides bytes here too
	}
	return !now.After(due) && now.Sub(p.allAcked) < p.budget
}

// readGoal is the bytes a client receiving a byte or block count test
// reads before it ends the test, as iperf3's client does. A block count
// is counted in bytes too, Blocks × Length: iperf3's client counts each
// read as a block, and a read that catches part of a block (one of its
// segments still on the way) makes it end a few blocks short of the
// count, more so on a busy machine.
type readGoal struct {
	want int64
	got  atomic.Int64
}

// newReadGoal is the goal of a TCP test whose client receives a count (-n
// or -k with -R or --bidir); nil when none.
func newReadGoal(cfg model.TestConfig) *readGoal {
	if cfg.Bytes == 0 || !(cfg.Reverse || cfg.Bidir) || cfg.IsUDP() {
		return nil
	}
	return &readGoal{want: int64(cfg.Bytes)}
}

// add counts a read of n bytes, and reports whether the goal is met.
func (g *readGoal) add(n int) bool { return g.got.Add(int64(n)) >= g.want }

// uncounted says when a stock iperf3 server counted fewer bytes of a TCP
// test than were sent. It stops reading at TEST_END, and what its
// application had not read by then is never counted, even when its
// kernel has it all (esnet/iperf#382): only its window tells the sender
// how far it has read, and not always (awaitRead). With -O each end
// counts from its own omit mark, and the counts differ by design.
func uncounted(run *model.Run) string {
	if run.Config.IsUDP() || run.Config.Omit > 0 {
		return ""
	}
	var sent, counted model.Bytes
	for _, t := range run.Client.Totals {
		if t.Role == model.Sender {
			sent += t.Bytes
		}
	}
	for _, t := range run.Remote.Totals {
		if t.Role == model.Receiver {
			counted += t.Bytes
		}
	}
	if counted >= sent {
		return ""
	}
	return fmt.Sprintf("the iperf3 server counted %s of the %s sent: it stops reading when the test ends, and what its application had not yet read by then goes uncounted (iperf3's protocol; tcpscope ends the test once every byte is acknowledged and the server's window has reopened, waiting for that at most %.0f%% of the test); the headline is what it counted",
		counted.Decimal(), sent.Decimal(), 100*readWaitShare)
}

// controlRTT is the smoothed RTT of the control connection, 0 when it
// cannot be read.
func controlRTT(c net.Conn) time.Duration {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return 0
	}
	smp, err := tcpinfo.Read(tc)
	if err != nil {
		return 0
	}
	return smp.RTT
}
