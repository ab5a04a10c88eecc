package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// UDP streams carry datagrams in iperf3's layout, so one engine serves
// tcpscope's own UDP tests and both ends of iperf3's: a header of the
// sender's clock (seconds, microseconds, both u32) and a sequence number
// (u32, or u64 with 64-bit counters), big endian, then payload. Sequence
// numbers start at 1. tcpscope's own tests always use 64-bit counters.
const (
	udpHeader32 = 12
	udpHeader64 = 16
	// MinUDPLength is the smallest datagram: a 64-bit header.
	MinUDPLength = udpHeader64
	// MaxUDPLength is the largest UDP payload over IPv4.
	MaxUDPLength = 65507
	// DefaultUDPLength keeps a datagram within a 1500-byte MTU (20 bytes
	// of IPv4 and 8 of UDP beside it), so nothing is fragmented on
	// common paths.
	DefaultUDPLength = 1460
	// DefaultUDPBitrate is a UDP test's rate unless -b says otherwise:
	// iperf3's default (1 Mbit/s, in SI units here).
	DefaultUDPBitrate = model.MbitPerSecond
	// udpFinFlag marks a native sender's closing datagram: the top bit of
	// a 64-bit sequence number, which no real count reaches.
	udpFinFlag = uint64(1) << 63
	// UDPLinger is how long a receiver keeps listening once the senders'
	// planned end has passed and nothing arrives: datagrams in flight on
	// a long path, or a closing datagram that was lost.
	UDPLinger = time.Second
)

// udpReceiveBuffer is the SO_RCVBUF a UDP receiver asks for unless -w
// sets one (the kernel grants at most net.core.rmem_max, 208 KiB unless
// raised): datagrams that come while the reader waits for a CPU wait in
// it, and the kernel's default holds about 1.5 ms at 1 Gbit/s, less than
// a busy machine's scheduling delay. Drops there would be the host's, not
// the path's the test is about.
const udpReceiveBuffer = 4 * model.MiB

// udpMaxRefusals is how many ICMP port unreachables a server's sender
// takes before it stops: one or two come when a client's socket opens
// late or closes early, not a run of them.
const udpMaxRefusals = 8

// udpMaxAnswers bounds how often a stream's hello is answered: a client
// repeats it every udpRetry while the answer is lost, and a path that
// loses this many answers in a row cannot carry a test.
const udpMaxAnswers = 16

// UDPFlow is the datagram side of one stream. The stream's goroutine
// writes the counters; the sampler reads them.
type UDPFlow struct {
	conn *net.UDPConn
	// wide: 64-bit sequence numbers.
	wide bool
	// native: the peer is tcpscope, which ends with closing datagrams.
	native bool
	// hello tells the peer's hello datagram, and answer is this end's
	// answer to it, sent again when the hello comes again, which it does
	// while the first answer is lost (AnswerHellos); answered counts the
	// answers sent.
	hello     func([]byte) bool
	answer    []byte
	answered  int
	answering chan struct{}

	packets    atomic.Int64 // sent, or expected (the highest sequence seen)
	lost       atomic.Int64
	outOfOrder atomic.Int64
	jitter     atomic.Int64 // ns
	drops      atomic.Int64 // socket buffer drops, -1 unknown

	// Receiver state, owned by the stream's goroutine.
	transit     time.Duration
	haveTransit bool
	jitterS     float64
}

// NewUDPFlow is the datagram side of a stream on a connected socket:
// wide, its datagrams carry 64-bit counters; native, its peer is
// tcpscope, whose sender ends with closing datagrams.
func NewUDPFlow(c *net.UDPConn, wide, native bool) *UDPFlow {
	f := &UDPFlow{conn: c, wide: wide, native: native}
	f.drops.Store(-1)
	return f
}

// datagrams is the flow's account so far.
func (f *UDPFlow) datagrams() model.Datagrams {
	d := model.Datagrams{
		Packets:    f.packets.Load(),
		Lost:       f.lost.Load(),
		OutOfOrder: f.outOfOrder.Load(),
		Jitter:     time.Duration(f.jitter.Load()),
	}
	if n := f.drops.Load(); n >= 0 {
		d.SocketDrops = model.Some(n)
	}
	return d
}

// since is the account between two snapshots; the jitter is the later one's.
func datagramsSince(prev, cur model.Datagrams) *model.Datagrams {
	d := model.Datagrams{
		Packets:    cur.Packets - prev.Packets,
		Lost:       cur.Lost - prev.Lost,
		OutOfOrder: cur.OutOfOrder - prev.OutOfOrder,
		Jitter:     cur.Jitter,
	}
	if c, ok := cur.SocketDrops.Get(); ok {
		d.SocketDrops = model.Some(c - prev.SocketDrops.V)
	}
	return &d
}

// putHeader writes a datagram's header for sequence seq sent at ts.
func (f *UDPFlow) putHeader(b []byte, ts time.Duration, seq uint64) {
	binary.BigEndian.PutUint32(b[0:], uint32(ts/time.Second))
	binary.BigEndian.PutUint32(b[4:], uint32(ts%time.Second/time.Microsecond))
	if f.wide {
		binary.BigEndian.PutUint64(b[8:], seq)
	} else {
		binary.BigEndian.PutUint32(b[8:], uint32(seq))
	}
}

// account counts one received datagram as iperf3 does: a sequence number
// past the highest so far opens a gap of lost datagrams; a lower one came
// out of order and fills one back. Jitter follows RFC 3550 §6.4.1: the
// transit time's change, smoothed by 1/16; the two clocks' offset cancels.
// It reports a closing datagram (native streams).
func (f *UDPFlow) account(b []byte, arrival time.Duration) (fin bool) {
	hdr := udpHeader32
	if f.wide {
		hdr = udpHeader64
	}
	if len(b) < hdr {
		return false
	}
	var seq uint64
	if f.wide {
		seq = binary.BigEndian.Uint64(b[8:])
	} else {
		seq = uint64(binary.BigEndian.Uint32(b[8:]))
	}
	if f.native && seq&udpFinFlag != 0 {
		// The closing datagram carries the sender's count: the datagrams
		// sent after the last one received (the tail) are lost too. A
		// gap count alone never sees them, while the socket's drop count
		// (SO_RXQ_OVFL, on this very datagram) does: the tail dropped by
		// a full buffer would be drops that no loss accounts for.
		if sent := int64(seq &^ udpFinFlag); sent > f.packets.Load() {
			f.lost.Add(sent - f.packets.Load())
			f.packets.Store(sent)
		}
		return true
	}
	sent := time.Duration(binary.BigEndian.Uint32(b[0:]))*time.Second + time.Duration(binary.BigEndian.Uint32(b[4:]))*time.Microsecond
	transit := arrival - sent
	if f.haveTransit {
		d := (transit - f.transit).Seconds()
		f.jitterS += (math.Abs(d) - f.jitterS) / 16
		f.jitter.Store(int64(f.jitterS * 1e9))
	}
	f.transit, f.haveTransit = transit, true
	high := uint64(f.packets.Load())
	switch {
	case seq > high:
		if seq > high+1 {
			f.lost.Add(int64(seq - high - 1))
		}
		f.packets.Store(int64(seq))
	default:
		f.outOfOrder.Add(1)
		if f.lost.Load() > 0 {
			f.lost.Add(-1)
		}
	}
	return false
}

// sendUDP sends datagrams of cfg.Length at the test's bitrate (as fast as
// possible at 0) until the duration ends, the byte budget is spent or
// stop is called. A native sender then sends its closing datagrams.
//
// Datagrams go in bursts (udpIO): as many as one GSO send takes at full
// speed, about a millisecond of the rate when paced, so that a paced
// stream waits for one timer a burst, not one a datagram. A burst's
// datagrams carry the time it was handed to the kernel and consecutive
// sequence numbers, each in its own header.
func (e *End) sendUDP(s *Stream) error {
	w, err := e.newUDPSender(s)
	if err != nil {
		return err
	}
	f := s.udp
	var werr error
	for {
		if w.pace > 0 && w.written > 0 && e.awaitDue(w.written, w.pace) {
			break
		}
		if e.isStopped() || !w.deadline.IsZero() && time.Now().After(w.deadline) {
			break
		}
		n := w.take()
		if n == 0 {
			break
		}
		ts := e.since()
		for i := range n {
			f.putHeader(w.buf[i*w.size:], ts, w.seq+uint64(i)+1)
		}
		sent, err := w.uio.send(w.buf, w.size, n)
		if e.cfg.Bytes > 0 && sent < n {
			// What the kernel did not take is not spent.
			e.budget.Add(int64((n - sent) * w.size))
		}
		w.seq += uint64(sent)
		f.packets.Store(int64(w.seq))
		s.moved.Add(int64(sent * w.size))
		w.written += int64(sent * w.size)
		if err != nil {
			goOn, ferr := w.failed(err)
			if goOn {
				continue
			}
			werr = ferr
			break
		}
	}
	s.finished = e.since()
	w.close()
	return werr
}

// udpSender is one UDP stream's sending: its bursts, pace and count.
type udpSender struct {
	e        *End
	f        *UDPFlow
	uio      *udpIO
	size     int // a datagram's
	burst    int // datagrams a send
	buf      []byte
	pace     model.Bitrate
	deadline time.Time
	written  int64
	seq      uint64
	// refusals counts the ICMP port-unreachable errors sends met.
	refusals int
}

func (e *End) newUDPSender(s *Stream) (*udpSender, error) {
	f := s.udp
	w := &udpSender{e: e, f: f, size: int(e.cfg.Length), pace: e.cfg.Bitrate}
	hdr := udpHeader32
	if f.wide {
		hdr = udpHeader64
	}
	if w.size < hdr {
		return nil, fmt.Errorf("datagrams of %d bytes cannot hold the %d-byte header", w.size, hdr)
	}
	uio, err := newUDPIO(f.conn, !e.cfg.NoGSO)
	if err != nil {
		return nil, fmt.Errorf("send: %w", err)
	}
	w.uio = uio
	w.burst = uio.burst(w.size)
	if w.pace > 0 {
		w.burst = max(1, min(w.burst, int(w.pace.BytesPerSecond()/1000/float64(w.size))))
	}
	w.buf = make([]byte, w.size*w.burst)
	for i := range w.burst {
		copy(w.buf[i*w.size:(i+1)*w.size], e.payload)
	}
	if d := Span(&e.cfg); d > 0 {
		w.deadline = e.t0.Add(d)
	} else if e.hardStop > 0 {
		w.deadline = e.t0.Add(e.hardStop)
	}
	_ = f.conn.SetWriteDeadline(w.deadline)
	return w, nil
}

// take is how many datagrams the next send carries: a burst, or what is
// left of the byte budget, each datagram taking its share, the last one
// even if less than a datagram is left, as one write did.
func (w *udpSender) take() int {
	e := w.e
	if e.cfg.Bytes <= 0 {
		return w.burst
	}
	k := 0
	for k < w.burst && e.budget.Add(-int64(w.size)) > -int64(w.size) {
		k++
	}
	if k < w.burst {
		e.budget.Add(int64(w.size)) // the failed take
	}
	return k
}

// failed says whether sending goes on after a send's err, and if not,
// with what error (nil: the deadline ended it).
func (w *udpSender) failed(err error) (goOn bool, _ error) {
	switch {
	case errors.Is(err, os.ErrDeadlineExceeded):
		return false, nil
	case errors.Is(err, syscall.ECONNREFUSED) && w.e.side == model.ServerSide && w.refusals+1 >= udpMaxRefusals:
		// The client's host says again and again that nothing listens
		// at the port: whoever asked is gone, or was never there (an
		// iperf3 hello names no test, and its port cannot be proven).
		// Sending on would be a flood.
		return false, fmt.Errorf("send: %v refused %d datagrams (ICMP port unreachable): nothing listens there", w.f.conn.RemoteAddr(), udpMaxRefusals)
	case TransientUDPError(err):
		// The peer's port is not open yet (ICMP unreachable from an
		// earlier datagram) or a queue is full: the datagrams are not
		// sent, as on a path that lost them, and the test goes on.
		if errors.Is(err, syscall.ECONNREFUSED) {
			w.refusals++
		}
		return true, nil
	}
	return false, fmt.Errorf("send: %w", err)
}

// close sends a native stream's closing datagrams, three in case some
// are lost: they tell the receiver the count so it need not wait out
// its linger.
func (w *udpSender) close() {
	if !w.f.native {
		return
	}
	var fin [udpHeader64]byte
	w.f.putHeader(fin[:], w.e.since(), udpFinFlag|w.seq)
	_ = w.f.conn.SetWriteDeadline(time.Time{})
	for range 3 {
		_, _ = w.f.conn.Write(fin[:])
		time.Sleep(5 * time.Millisecond)
	}
}

// drainUDP reads what is queued on f's socket without waiting, for at
// most drainLimit, and hands each datagram to got.
func drainUDP(f *UDPFlow, uio *udpIO, countDrops bool, got func([]byte)) error {
	_ = f.conn.SetReadDeadline(time.Time{})
	for until := time.Now().Add(drainLimit); time.Now().Before(until); {
		drops, haveDrops, n, err := uio.recv(true, func(b []byte) bool { got(b); return true })
		if haveDrops && countDrops {
			f.drops.Store(drops)
		}
		switch {
		case err != nil && TransientUDPError(err):
			continue
		case err != nil:
			return fmt.Errorf("drain: %w", err)
		case n == 0:
			return nil
		}
	}
	return nil
}

// Conn is the flow's socket.
func (f *UDPFlow) Conn() *net.UDPConn { return f.conn }

// answerAgain sends the stream's answer again, within udpMaxAnswers.
func (f *UDPFlow) answerAgain() {
	if f.answer != nil && f.answered < udpMaxAnswers {
		f.answered++
		_, _ = f.conn.Write(f.answer)
	}
}

// AnswerHellos answers the peer's hello (a datagram hello tells) with
// answer, now and whenever it comes again until StopAnswering: until the
// test starts nothing else reads the stream's socket, and a client whose
// answer was lost repeats its hello there (the connected socket, not the
// server's port, gets the datagrams of its peer). Once the test runs,
// its receiver answers a hello that still comes, and counts it as no
// data.
func (f *UDPFlow) AnswerHellos(hello func([]byte) bool, answer []byte) {
	f.hello, f.answer = hello, answer
	f.answerAgain()
	f.answering = make(chan struct{})
	go func() {
		defer close(f.answering)
		buf := make([]byte, MaxUDPLength)
		for {
			n, err := f.conn.Read(buf)
			switch {
			case err != nil && TransientUDPError(err):
				continue // an ICMP error: the client's socket not open yet
			case err != nil:
				return // StopAnswering, or closed
			case f.hello(buf[:n]):
				f.answerAgain()
			}
		}
	}()
}

// StopAnswering ends AnswerHellos, leaving the socket to the test.
func (f *UDPFlow) StopAnswering() {
	if f.answering == nil {
		return
	}
	_ = f.conn.SetReadDeadline(time.Unix(1, 0))
	<-f.answering
	f.answering = nil
	_ = f.conn.SetReadDeadline(time.Time{})
}
