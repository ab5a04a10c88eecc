package engine

import (
	"net"
	"time"

	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// A timed TCP test should end near its planned end. A sender that writes
// until then leaves its send buffer full, and the receiver reads on to
// end of file while the buffer drains at the path's rate: -t 10 -w 8M
// across a 20 Mbit/s, 50 ms path ran 13.4 s. So near the end a sender
// writes only while what it has queued (written and not acknowledged,
// SIOCOUTQ) drains by the planned end at the rate its peer acknowledges
// (tailGate), and a receiver stops waiting for the rest at a bound past
// the planned end (cutAfter) and counts what it read by then.

// The gate's pace: it reads the kernel at most every tailLook while the
// sender writes (a read costs about 3.5 µs; a loopback sender writes a
// 128 KiB block in about 30 µs), and holding back, re-checks as often.
// It keeps an acknowledged-bytes mark every markEvery, markKept of them.
const (
	tailLook  = 5 * time.Millisecond
	markEvery = 10 * time.Millisecond
	markKept  = 128 // 1.28 s of marks at least
)

// The rate the gate drains at is the peer's acknowledgements over the
// latest rateWindow: four smoothed RTTs, within [minRateWindow, 1 s]: long
// enough to smooth a loss-based sender's sawtooth, short enough to follow
// a change. Younger than minRateHistory, the kernel's delivery rate
// stands in for it.
const (
	minRateWindow  = 200 * time.Millisecond
	maxRateWindow  = time.Second
	minRateHistory = 50 * time.Millisecond
)

// cutAfter is how long past the planned end a receiver waits for the
// rest at least (it waits two of its RTTs if longer): once the gate has
// drained the sender's queue by the planned end, the last bytes arrive
// about half an RTT after it, a round trip covers a late estimate, and a
// second covers a retransmission of the tail; a second at least keeps a
// sender whose rate fell at the end (a loss, a rate limiter's bucket
// emptied) from being cut for a few milliseconds, and it is what the user
// notices as "about -t".
const cutAfter = time.Second

// ackMark is the acknowledged bytes at a time.
type ackMark struct {
	at    time.Time
	acked int64
}

// tailGate holds a sender's writes back so that its queue drains by the
// planned end. Owned by the stream's sending goroutine.
type tailGate struct {
	conn *net.TCPConn
	end  time.Time // the planned end
	off  bool      // the kernel cannot say: the gate always opens

	looked  time.Time // the last kernel read
	queued  int64     // SIOCOUTQ then, plus what was written since
	rate    float64   // bytes per second, 0 when not known
	rateOK  bool
	marks   [markKept]ackMark
	nMarks  int // marks kept, at most markKept
	newest  int // index of the newest mark
	holding bool
	// heldFrom and heldQueued: when the gate began to hold back since
	// the last write, and the queue then.
	heldFrom   time.Time
	heldQueued int64
}

func newTailGate(c *net.TCPConn, end time.Time) *tailGate {
	return &tailGate{conn: c, end: end}
}

// admit waits until more bytes may be written: until what is queued
// and they drain by the planned end at the acknowledged rate. It
// returns how many of n (all of them, or with whole set, only all; else
// at least minGated or all of n), and the margin: how long the write may
// take and still drain by then (the time left when the rate is not
// known), for a write the full send buffer holds up enters the queue
// late, and drains late. It returns false once the planned end has come
// or stopped is closed: the sender writes no more.
func (g *tailGate) admit(n int, whole bool, stopped <-chan struct{}) (allow int, margin time.Duration, ok bool) {
	for {
		now := time.Now()
		left := g.end.Sub(now)
		if left <= 0 {
			return 0, 0, false
		}
		if g.off {
			return n, left, true
		}
		if g.holding || now.Sub(g.looked) >= tailLook {
			g.look(now)
		}
		allow, margin = n, left
		switch {
		case !g.rateOK:
		case g.rate <= 0:
			// Nothing acknowledged for a whole window: more bytes would
			// only wait behind the queue. A queue under minGated holds
			// nothing back: a paced sender's window may see no
			// acknowledgement at all.
			if g.queued > minGated {
				allow = 0
			}
		default:
			// What drains in the time left, less what is queued.
			fit := int64(g.rate*left.Seconds()) - g.queued
			least := int64(n)
			if !whole {
				least = min(least, minGated)
			}
			if fit < least {
				allow = 0
			} else if fit < int64(n) {
				allow = int(fit)
			}
			if allow > 0 {
				// At least a look's time: a write stopped at once by
				// its deadline would only come back for another look.
				drain := time.Duration(float64(g.queued+int64(allow)) / g.rate * float64(time.Second))
				margin = max(left-drain, tailLook)
			}
		}
		if allow > 0 {
			return allow, margin, true
		}
		if !g.holding {
			g.holding, g.heldFrom, g.heldQueued = true, now, g.queued
		}
		t := time.NewTimer(min(tailLook, left))
		select {
		case <-t.C:
		case <-stopped:
			t.Stop()
			return 0, 0, false
		}
	}
}

// minGated is the least the gate lets a sender write when a whole
// write does not fit: a write of a MiB at a time would otherwise leave
// the last 0.4 s of a 20 Mbit/s path idle.
const minGated = 16 * 1024

// wrote notes n bytes written: the queue grew, and the gate no longer
// holds.
func (g *tailGate) wrote(n int) {
	g.queued += int64(n)
	g.holding = false
}

// held is when the gate began to hold back the writes it held to the
// end, and the queue then; ok is false when the last write was let
// through.
func (g *tailGate) held() (from time.Time, queued int64, ok bool) {
	return g.heldFrom, g.heldQueued, g.holding
}

// look reads the socket's queue and acknowledged bytes, and updates the
// rate.
func (g *tailGate) look(now time.Time) {
	g.looked = now
	smp, err := tcpinfo.Read(g.conn)
	if err != nil || !smp.SendQ.OK || !smp.BytesAcked.OK {
		g.off = true
		return
	}
	g.queued = int64(smp.SendQ.V)
	acked := int64(smp.BytesAcked.V)
	if g.nMarks == 0 || now.Sub(g.marks[g.newest].at) >= markEvery {
		g.newest = (g.newest + 1) % markKept
		g.marks[g.newest] = ackMark{at: now, acked: acked}
		g.nMarks = min(g.nMarks+1, markKept)
	}
	window := min(max(4*smp.RTT, minRateWindow), maxRateWindow)
	// The newest mark at least window old, else the oldest kept.
	ref := -1
	for k := 1; k < g.nMarks; k++ {
		i := (g.newest - k + markKept) % markKept
		ref = i
		if now.Sub(g.marks[i].at) >= window {
			break
		}
	}
	if ref >= 0 {
		if age := now.Sub(g.marks[ref].at); age >= minRateHistory {
			g.rate = float64(acked-g.marks[ref].acked) / age.Seconds()
			g.rateOK = true
			return
		}
	}
	if r, ok := smp.DeliveryRate.Get(); ok && r > 0 {
		g.rate, g.rateOK = r.BytesPerSecond(), true
		return
	}
	g.rateOK = false
}
