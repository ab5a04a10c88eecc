package emulator

import (
	"math"
	"math/rand/v2"
	"sync/atomic"
	"time"
)

// Counters are one direction's tallies since Start. Packets dropped or
// answered are counted once, under the first cause that took them.
type Counters struct {
	// Received and ReceivedBytes: packets read from the sending side's
	// device (after offload splitting).
	Received, ReceivedBytes uint64
	// Forwarded and ForwardedBytes: packets written to the receiving
	// side's device, duplicates included.
	Forwarded, ForwardedBytes uint64
	// Queued and QueuedBytes: packets held now, in the bottleneck queue
	// or the delay line, waiting to leave.
	Queued, QueuedBytes uint64
	// DroppedQueue: the bottleneck's queue was full (drop-tail).
	DroppedQueue uint64
	// DroppedLoss: random (Bernoulli) loss.
	DroppedLoss uint64
	// DroppedGE: Gilbert–Elliott loss.
	DroppedGE uint64
	// DroppedPolice: the policer's bucket held too few tokens.
	DroppedPolice uint64
	// DroppedMTU: larger than the MTU, whether answered with ICMP,
	// black-holed, or IPv4 without DF.
	DroppedMTU uint64
	// Duplicated: extra copies made.
	Duplicated uint64
	// Reordered: packets that overtook the one ahead of them.
	Reordered uint64
	// ICMPSent: "too big" answers to this direction's packets, sent back
	// to their source.
	ICMPSent uint64
	// Errors: failed device reads and writes. The packets of a failed
	// write are in no other counter.
	Errors uint64
}

// counters is the live form of Counters.
type counters struct {
	received, receivedBytes   atomic.Uint64
	forwarded, forwardedBytes atomic.Uint64
	queued, queuedBytes       atomic.Uint64
	droppedQueue, droppedLoss atomic.Uint64
	droppedGE, droppedMTU     atomic.Uint64
	droppedPolice             atomic.Uint64
	duplicated, reordered     atomic.Uint64
	icmpSent, errors          atomic.Uint64
}

func (c *counters) snapshot() Counters {
	return Counters{
		Received: c.received.Load(), ReceivedBytes: c.receivedBytes.Load(),
		Forwarded: c.forwarded.Load(), ForwardedBytes: c.forwardedBytes.Load(),
		Queued: c.queued.Load(), QueuedBytes: c.queuedBytes.Load(),
		DroppedQueue: c.droppedQueue.Load(), DroppedLoss: c.droppedLoss.Load(),
		DroppedGE: c.droppedGE.Load(), DroppedMTU: c.droppedMTU.Load(), DroppedPolice: c.droppedPolice.Load(),
		Duplicated: c.duplicated.Load(), Reordered: c.reordered.Load(),
		ICMPSent: c.icmpSent.Load(), Errors: c.errors.Load(),
	}
}

// fate is what becomes of one arriving packet: n copies leave (0 when it
// was dropped, 2 when duplicated), copy i at leave[i]. A copy with ahead[i]
// set was reordered: it leaves before every packet with the same leave time
// that is not ahead, in particular the one it overtook.
type fate struct {
	n     int
	leave [2]time.Duration
	ahead [2]bool
}

func (f *fate) add(at time.Duration, ahead bool) {
	f.leave[f.n], f.ahead[f.n] = at, ahead
	f.n++
}

// slot is a packet in the bottleneck: serialized from start to end.
type slot struct {
	start, end time.Duration
	size       int
}

// impairer is the pure model of one direction: it applies an Impairment
// to the packets that arrive (see the package doc). Times are durations
// since an arbitrary origin and must not decrease from one call to the
// next. It is not safe for concurrent use: one goroutine owns it.
type impairer struct {
	d     Impairment
	limit Queue
	rng   *rand.Rand
	c     *counters

	// The bottleneck: txEnd is when the last accepted packet finishes;
	// backlog holds the accepted packets not yet finished at the last
	// arrival, oldest first, from index head on, and backlogBytes their
	// sizes.
	txEnd        time.Duration
	backlog      []slot
	head         int
	backlogBytes int

	// last is when the last in-order packet leaves the delay line.
	last time.Duration
	// bad is the Gilbert–Elliott state.
	bad bool
	// The policer: tokens (bytes) in its bucket at filled, and the
	// bucket's size.
	tokens float64
	filled time.Duration
	bucket float64
}

func newImpairer(d Impairment, rng *rand.Rand, c *counters) *impairer {
	if d.GE != nil {
		ge := *d.GE // the caller's copy may change; ours must not
		d.GE = &ge
	}
	p := &impairer{d: d, limit: d.limit(), rng: rng, c: c}
	if d.Police != nil {
		pol := *d.Police
		p.d.Police = &pol
		p.bucket = float64(pol.burst())
		p.tokens = p.bucket // a policer starts with a full bucket
	}
	return p
}

// arrive decides the fate of a packet of size bytes arriving at now. It
// updates the drop, duplicate and reorder counters; the caller counts what
// it receives and forwards.
func (p *impairer) arrive(now time.Duration, size int) fate {
	var f fate
	// Both loss processes draw for every packet, so that the
	// Gilbert–Elliott chain steps per packet whatever random loss does.
	lost := p.d.Loss > 0 && p.rng.Float64() < p.d.Loss
	geLost := p.d.GE != nil && p.stepGE()
	switch {
	case lost:
		p.c.droppedLoss.Add(1)
		return f
	case geLost:
		p.c.droppedGE.Add(1)
		return f
	case p.d.Police != nil && !p.police(now, size):
		p.c.droppedPolice.Add(1)
		return f
	}
	copies := 1
	if p.d.Duplicate > 0 && p.rng.Float64() < p.d.Duplicate {
		copies = 2
		p.c.duplicated.Add(1)
	}
	for range copies {
		p.forward(now, size, &f)
	}
	return f
}

// stepGE reports whether the Gilbert–Elliott model loses this packet, then
// moves the chain on.
func (p *impairer) stepGE() bool {
	g := p.d.GE
	if p.bad {
		lost := g.LossBad > 0 && p.rng.Float64() < g.LossBad
		if g.R > 0 && p.rng.Float64() < g.R {
			p.bad = false
		}
		return lost
	}
	lost := g.LossGood > 0 && p.rng.Float64() < g.LossGood
	if g.P > 0 && p.rng.Float64() < g.P {
		p.bad = true
	}
	return lost
}

// police reports whether the policer lets a packet of size bytes through
// at now, and takes its tokens if so. The bucket fills at the rate up to
// its size; a packet that finds too few tokens is dropped and takes none.
func (p *impairer) police(now time.Duration, size int) bool {
	if now > p.filled {
		p.tokens = min(p.bucket, p.tokens+p.d.Police.Rate.BytesPerSecond()*(now-p.filled).Seconds())
		p.filled = now
	}
	if p.tokens < float64(size) {
		return false
	}
	p.tokens -= float64(size)
	return true
}

// forward takes one copy through the bottleneck and the delay line and adds
// its departure to f, or counts it dropped by the queue.
func (p *impairer) forward(now time.Duration, size int, f *fate) {
	exit := now
	if p.d.Rate > 0 {
		p.drain(now)
		if !p.admit(now, size) {
			p.c.droppedQueue.Add(1)
			return
		}
		start := max(now, p.txEnd)
		p.txEnd = start + p.serialization(size)
		p.backlog = append(p.backlog, slot{start, p.txEnd, size})
		p.backlogBytes += size
		exit = p.txEnd
	}
	// Draw for every packet, so that the random stream does not depend
	// on whether the line happens to be busy.
	reorder := p.d.Reorder > 0 && p.rng.Float64() < p.d.Reorder
	if reorder && p.last >= exit && p.last > now {
		// The packet ahead is still in the delay line: leave with it,
		// first. p.last stays: the in-order stream behind is unchanged.
		p.c.reordered.Add(1)
		f.add(p.last, true)
		return
	}
	at := max(exit+p.delay(), p.last)
	p.last = at
	f.add(at, false)
}

// serialization is how long the bottleneck takes to send size bytes.
func (p *impairer) serialization(size int) time.Duration {
	return time.Duration(math.Round(float64(size) * 8 * float64(time.Second) / float64(p.d.Rate)))
}

// drain forgets the packets the bottleneck has finished by now.
func (p *impairer) drain(now time.Duration) {
	for p.head < len(p.backlog) && p.backlog[p.head].end <= now {
		p.backlogBytes -= p.backlog[p.head].size
		p.head++
	}
	if p.head == len(p.backlog) {
		p.backlog, p.head = p.backlog[:0], 0
	} else if p.head > 1024 && p.head*2 > len(p.backlog) {
		n := copy(p.backlog, p.backlog[p.head:])
		p.backlog, p.head = p.backlog[:n], 0
	}
}

// admit reports whether the queue takes a packet of size bytes at now. The
// packet being serialized (the first in the backlog, once started) does not
// count as waiting.
func (p *impairer) admit(now time.Duration, size int) bool {
	waiting, waitingBytes := len(p.backlog)-p.head, p.backlogBytes
	if waiting > 0 && p.backlog[p.head].start <= now {
		waiting--
		waitingBytes -= p.backlog[p.head].size
	}
	switch q := p.limit; {
	case q.Packets > 0:
		return waiting < q.Packets
	case q.Bytes > 0:
		return int64(waitingBytes+size) <= int64(q.Bytes)
	case q.Time > 0:
		return p.txEnd-now <= q.Time
	}
	return true
}

// delay draws the packet's delay in the line: Delay plus jitter, at
// least 0.
func (p *impairer) delay() time.Duration {
	d := p.d.Delay
	if p.d.Jitter > 0 {
		d += time.Duration(p.jitter() * float64(p.d.Jitter))
	}
	return max(d, 0)
}

// The Pareto jitter: shape α = 3, scale 1, truncated at paretoMax (a
// delay of hundreds of SDs would only stall the test). On [1, c] the
// density is 3x⁻⁴/(1−c⁻³), so with F = 1−c⁻³ the mean is 1.5(1−c⁻²)/F and
// E[X²] = 3(1−1/c)/F; the constants are those at c = 20, and
// TestParetoConstants checks them.
const (
	paretoShape = 3
	paretoMax   = 20
	paretoMean  = 1.496437054631829
	paretoSD    = 0.7816856376201579
)

// jitter draws one standardized variation: mean 0, SD 1, shaped by
// Impairment.JitterDist.
func (p *impairer) jitter() float64 {
	switch p.d.JitterDist {
	case Uniform:
		return math.Sqrt(3) * (2*p.rng.Float64() - 1)
	case Pareto:
		return p.pareto()
	case ParetoNormal:
		// Var(0.25·N + 0.75·P) = 0.0625 + 0.5625 for standardized N, P.
		return (0.25*p.normal() + 0.75*p.pareto()) / math.Sqrt(0.625)
	}
	return p.normal()
}

// normal is a standard normal draw truncated at ±3.
func (p *impairer) normal() float64 {
	for {
		if z := p.rng.NormFloat64(); math.Abs(z) <= 3 {
			return z
		}
	}
}

// pareto is a standardized draw of the truncated Pareto, by inversion
// (redrawn above paretoMax, as the truncation means).
func (p *impairer) pareto() float64 {
	for {
		u := 1 - p.rng.Float64() // (0, 1]: no division by zero
		if x := math.Pow(u, -1.0/paretoShape); x <= paretoMax {
			return (x - paretoMean) / paretoSD
		}
	}
}
