package engine

import (
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// Flow is one connection as a Sampler reads it: an End's streams are
// flows, and so is any connection a protocol moves bytes on by itself
// (a WebSocket's, an HTTP stream's), whose handler counts what it moved.
type Flow interface {
	// ID and Role name the flow in its intervals.
	ID() int
	Role() model.Role
	// Moved is the application bytes written or read so far.
	Moved() int64
	// Read is the flow's kernel sample now, stamped on the sampler's
	// clock (model.Sample.At); false when none could be read (a UDP
	// flow, a closed socket): the interval's kernel figures are then
	// absent, not zero.
	Read() (model.Sample, bool)
	// Written is, once a sender's writes are over, what it wrote in all:
	// it caps what the kernel says was acknowledged (false before, and
	// for a receiver).
	Written() (int64, bool)
	// Datagrams is a UDP flow's account so far (false: a TCP flow).
	Datagrams() (model.Datagrams, bool)
}

// Sampler turns flows' byte counters and kernel samples into intervals:
// what each flow moved, and its kernel's view, since the last interval.
// It reads the clock of no one: each interval's end is given, and the
// samples carry their own times. One goroutine calls Interval.
type Sampler struct {
	flows     []Flow
	start     time.Duration // the next interval's start
	prev      []model.Sample
	prevBytes []int64
	prevUDP   []model.Datagrams
	// ackBase is each sender's bytes acknowledged at its first sample;
	// acked counts them in intervals since.
	ackBase []model.Opt[model.Bytes]
	acked   []model.Bytes
	// Observe, if set, sees each flow's sample (by its index) as an
	// interval takes it: an End keeps its peaks there.
	Observe func(i int, s *model.Sample)
}

// NewSampler samples flows from their samples first (by index; a zero
// Sample where there is none), taken before data moved, or at the point
// the measured period starts.
func NewSampler(flows []Flow, first []model.Sample) *Sampler {
	n := len(flows)
	sm := &Sampler{flows: flows, prev: make([]model.Sample, n), prevBytes: make([]int64, n), prevUDP: make([]model.Datagrams, n),
		ackBase: make([]model.Opt[model.Bytes], n), acked: make([]model.Bytes, n)}
	copy(sm.prev, first)
	for i := range sm.prev {
		sm.ackBase[i] = ackedBase(&sm.prev[i])
	}
	return sm
}

// Interval is the interval from the last one's end (the sampler's
// start, 0, before the first) to end, numbered index.
func (sm *Sampler) Interval(index int, end time.Duration) model.Interval {
	iv := model.Interval{Index: index, Start: sm.start, End: end, Streams: make([]model.StreamInterval, len(sm.flows))}
	for i, f := range sm.flows {
		iv.Streams[i] = sm.flow(i, f, end)
	}
	sm.start = end
	return iv
}

// flow is flow i's part of the interval ending at end.
func (sm *Sampler) flow(i int, f Flow, end time.Duration) model.StreamInterval {
	cur, ok := f.Read()
	// A stream's final sample can be stamped just before a tick that read
	// the socket once more, before the stream was marked done: the tick's
	// sample is then the newer one.
	if !ok || cur.At < sm.prev[i].At {
		cur = sm.prev[i]
	}
	b := f.Moved()
	if sm.Observe != nil {
		sm.Observe(i, &cur)
	}
	d, isUDP := f.Datagrams()
	si := intervalOf(f.ID(), f.Role(), !isUDP, &sm.prev[i], &cur, model.Bytes(b-sm.prevBytes[i]), end-sm.start)
	switch {
	case !ok:
		// No kernel read covers this interval: what the kernel counted
		// in it is unknown, not zero.
		si.OutOfOrder = model.Opt[uint32]{}
	case f.Role() == model.Sender && !isUDP:
		sm.acknowledged(i, f, &si, &cur, end)
	}
	sm.prev[i], sm.prevBytes[i] = cur, b
	if isUDP {
		si.UDP = datagramsSince(sm.prevUDP[i], d)
		sm.prevUDP[i] = d
	}
	return si
}

// acknowledged fills a TCP sender's acknowledged bytes and rate in the
// interval, from its sample cur.
func (sm *Sampler) acknowledged(i int, f Flow, si *model.StreamInterval, cur *model.Sample, end time.Duration) {
	// Once the writes are over the count is final, and caps what the
	// kernel says was acknowledged: its end of file, sent after them, may
	// be acknowledged in a sample that still reads established (tcp_info
	// reads the state before it locks the socket), and must not count.
	var written model.Opt[model.Bytes]
	if w, ok := f.Written(); ok {
		written = model.Some(model.Bytes(w))
	}
	si.AckedBytes = ackedIn(sm.ackBase[i], cur, written, &sm.acked[i])
	// Over the time between the kernel reads: a final sample is taken
	// when the stream ends, not on a tick.
	if a, ok := si.AckedBytes.Get(); ok {
		dt := cur.At - sm.prev[i].At
		if dt <= 0 {
			dt = end - sm.start
		}
		si.AckedRate = model.Some(model.RateOf(a, dt.Seconds()))
	}
}

// intervalOf is a flow's interval of dt from its samples prev and cur
// and the bytes it moved meanwhile; tcp: a TCP flow.
func intervalOf(id int, role model.Role, tcp bool, prev, cur *model.Sample, moved model.Bytes, dt time.Duration) model.StreamInterval {
	si := model.StreamInterval{
		Stream: id,
		Role:   role,
		Bytes:  moved,
		Rate:   model.RateOf(moved, dt.Seconds()),
		TCP:    *cur,
	}
	si.RetransSegs = cur.TotalRetrans - prev.TotalRetrans
	if a, ok := prev.BytesRetrans.Get(); ok && cur.BytesRetrans.OK {
		si.RetransBytes = model.Some(cur.BytesRetrans.V - a)
	}
	if role == model.Sender && tcp {
		si.Limited = model.LimitedBetween(prev, cur)
	}
	if role == model.Receiver && tcp {
		if a, ok := prev.RcvOOOPack.Get(); ok && cur.RcvOOOPack.OK {
			si.OutOfOrder = model.Some(cur.RcvOOOPack.V - a)
		}
	}
	return si
}

// ackedIn is what the receiver acknowledged of the payload since the
// last interval, by the sender's kernel, less what earlier intervals
// counted (*counted, updated); absent when the kernel lacks the counter.
// tcpi_bytes_acked counts sequence numbers: the SYN's, the data
// preamble's and, once acknowledged, the FIN's besides the payload. base
// is where the payload starts in it (ackedBase); once the stream is done,
// written, what the application wrote in all, caps the count (a reset
// can end a connection in a state that looks like a FIN's).
func ackedIn(base model.Opt[model.Bytes], cur *model.Sample, written model.Opt[model.Bytes], counted *model.Bytes) model.Opt[model.Bytes] {
	b, ok := base.Get()
	if !ok || !cur.BytesAcked.OK {
		return model.Opt[model.Bytes]{}
	}
	total := max(cur.BytesAcked.V, b) - b // below b: the preamble's ACK still to come
	if total > 0 && finAcked(cur, written.OK) {
		total--
	}
	if w, ok := written.Get(); ok {
		total = min(total, w)
	}
	total = max(total, *counted)
	in := total - *counted
	*counted = total
	return model.Some(in)
}

// ackedBase is where the payload starts in the kernel's count of bytes
// acknowledged, from the stream's first sample, taken before it sent any:
// what was acknowledged by then (the SYN, and the data preamble if its ACK
// came) and what was still unacknowledged (SIOCOUTQ: the preamble, if
// not).
func ackedBase(first *model.Sample) model.Opt[model.Bytes] {
	b, ok := first.BytesAcked.Get()
	if !ok {
		return model.Opt[model.Bytes]{}
	}
	if q, ok := first.SendQ.Get(); ok {
		b += q
	}
	return model.Some(b)
}

// finAcked reports a socket whose FIN the peer has acknowledged: in
// FIN-WAIT-2 or TIME-WAIT, or closed with nothing left unacknowledged
// (after TIME-WAIT a socket the application still holds reads as closed)
// while the stream runs; once it is done the cap by what was written
// says it, right after a reset too.
func finAcked(s *model.Sample, done bool) bool {
	switch s.State {
	case model.TCPFinWait2, model.TCPTimeWait:
		return true
	case model.TCPClose:
		q, ok := s.SendQ.Get()
		return !done && ok && q == 0
	}
	return false
}
