package perf

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
	// udpLinger is how long a receiver keeps listening once the senders'
	// planned end has passed and nothing arrives: datagrams in flight on
	// a long path, or a closing datagram that was lost.
	udpLinger = time.Second
)

// udpReceiveBuffer is the SO_RCVBUF a UDP receiver asks for unless -w
// sets one (the kernel grants at most net.core.rmem_max, 208 KiB unless
// raised): datagrams that come while the reader waits for a CPU wait in
// it, and the kernel's default holds about 1.5 ms at 1 Gbit/s, less than
// a busy machine's scheduling delay. Drops there would be the host's, not
// the path's the test is about.
const udpReceiveBuffer = 4 * model.MiB

// udpMagic opens a native UDP stream's hello datagram: magic, the test's
// cookie and the stream id, as on TCP.
const udpMagic = "TCPSCOPU"

// udpHelloLen is the length of a native UDP hello.
const udpHelloLen = magicLen + cookieLen + 2

// udpAnswerMagic opens the server's answer to a hello: magic, the stream
// id and a token the client echoes on the control connection before the
// server sends the stream anything more. The answer is no longer than the
// hello, so a hello from a forged address makes the server send no more
// than it got.
const udpAnswerMagic = "TCPSCOPA"

// udpTokenLen is the length of a UDP stream's token.
const udpTokenLen = 16

// udpMaxRefusals is how many ICMP port unreachables a server's sender
// takes before it stops: one or two come when a client's socket opens
// late or closes early, not a run of them.
const udpMaxRefusals = 8

// udpMaxAnswers bounds how often a stream's hello is answered: a client
// repeats it every udpRetry while the answer is lost, and a path that
// loses this many answers in a row cannot carry a test.
const udpMaxAnswers = 16

// udpFlow is the datagram side of one stream. The stream's goroutine
// writes the counters; the sampler reads them.
type udpFlow struct {
	conn *net.UDPConn
	// wide: 64-bit sequence numbers.
	wide bool
	// native: the peer is tcpscope, which ends with closing datagrams.
	native bool
	// token is a native stream's: the server issued it in answer, the
	// client got it there, and the server sends nothing more until the
	// client has echoed it. answer is the server's answer, sent again
	// when the hello comes again (until answering ends). answered counts
	// the answers sent.
	token     []byte
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

func newUDPFlow(c *net.UDPConn, wide, native bool) *udpFlow {
	f := &udpFlow{conn: c, wide: wide, native: native}
	f.drops.Store(-1)
	return f
}

// datagrams is the flow's account so far.
func (f *udpFlow) datagrams() model.Datagrams {
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
func (f *udpFlow) putHeader(b []byte, ts time.Duration, seq uint64) {
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
func (f *udpFlow) account(b []byte, arrival time.Duration) (fin bool) {
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
	f := s.udp
	size := int(e.cfg.Length)
	hdr := udpHeader32
	if f.wide {
		hdr = udpHeader64
	}
	if size < hdr {
		return fmt.Errorf("datagrams of %d bytes cannot hold the %d-byte header", size, hdr)
	}
	uio, err := newUDPIO(f.conn, !e.cfg.NoGSO)
	if err != nil {
		return fmt.Errorf("send: %w", err)
	}
	pace := e.cfg.Bitrate
	burst := uio.burst(size)
	if pace > 0 {
		burst = max(1, min(burst, int(pace.BytesPerSecond()/1000/float64(size))))
	}
	buf := make([]byte, size*burst)
	for i := range burst {
		copy(buf[i*size:(i+1)*size], e.payload)
	}
	deadline := time.Time{}
	if d := span(&e.cfg); d > 0 {
		deadline = e.t0.Add(d)
	} else if e.hardStop > 0 {
		deadline = e.t0.Add(e.hardStop)
	}
	_ = f.conn.SetWriteDeadline(deadline)
	byteMode := e.cfg.Bytes > 0
	var written int64
	var werr error
	var seq uint64
	refusals := 0
loop:
	for {
		if pace > 0 && written > 0 && e.awaitDue(written, pace) {
			break loop
		}
		select {
		case <-e.stopped:
			break loop
		default:
		}
		if !deadline.IsZero() && time.Now().After(deadline) {
			break
		}
		n := burst
		if byteMode {
			// Each datagram takes its share of the budget, the last one
			// even if less than a datagram is left, as one write did.
			k := 0
			for k < n && e.budget.Add(-int64(size)) > -int64(size) {
				k++
			}
			if k < n {
				e.budget.Add(int64(size)) // the failed take
			}
			if n = k; n == 0 {
				break
			}
		}
		ts := e.since()
		for i := range n {
			f.putHeader(buf[i*size:], ts, seq+uint64(i)+1)
		}
		sent, err := uio.send(buf, size, n)
		if byteMode && sent < n {
			// What the kernel did not take is not spent.
			e.budget.Add(int64((n - sent) * size))
		}
		seq += uint64(sent)
		f.packets.Store(int64(seq))
		s.moved.Add(int64(sent * size))
		written += int64(sent * size)
		if err != nil {
			switch {
			case errors.Is(err, os.ErrDeadlineExceeded):
				break loop
			case errors.Is(err, syscall.ECONNREFUSED) && e.side == model.ServerSide && refusals+1 >= udpMaxRefusals:
				// The client's host says again and again that nothing
				// listens at the port: whoever asked is gone, or was
				// never there (an iperf3 hello names no test, and its
				// port cannot be proven). Sending on would be a flood.
				werr = fmt.Errorf("send: %v refused %d datagrams (ICMP port unreachable): nothing listens there", f.conn.RemoteAddr(), udpMaxRefusals)
				break loop
			case isTransientSendError(err):
				// The peer's port is not open yet (ICMP unreachable from
				// an earlier datagram) or a queue is full: the datagrams
				// are not sent, as on a path that lost them, and the
				// test goes on.
				if errors.Is(err, syscall.ECONNREFUSED) {
					refusals++
				}
				continue
			}
			werr = fmt.Errorf("send: %w", err)
			break loop
		}
	}
	s.finished = e.since()
	if f.native {
		// Closing datagrams, three in case some are lost, tell the
		// receiver the count so it need not wait out its linger.
		var fin [udpHeader64]byte
		f.putHeader(fin[:], e.since(), udpFinFlag|seq)
		_ = f.conn.SetWriteDeadline(time.Time{})
		for range 3 {
			_, _ = f.conn.Write(fin[:])
			time.Sleep(5 * time.Millisecond)
		}
	}
	return werr
}

// receiveUDP reads datagrams until the sender's closing datagram, the
// control connection's end (iperf3), or udpLinger of silence past the
// planned end. It reads what is queued in batches (udpIO), with GRO
// if the test asked for it (--gro); each datagram is accounted on its
// own, all of a batch with the batch's arrival time.
func (e *End) receiveUDP(s *Stream) error {
	f := s.udp
	uio, err := newUDPIO(f.conn, !e.cfg.NoGSO)
	if err != nil {
		return fmt.Errorf("receive: %w", err)
	}
	// GRO only when asked for (--gro): the kernel then counts the
	// buffers it drops, not the datagrams in them (SO_RXQ_OVFL), and a
	// drop count that is not a count of datagrams is no count.
	gro := e.cfg.GRO && !e.cfg.NoGSO && uio.enableGRO()
	if !gro && enableDropCount(f.conn) {
		// The kernel counts the socket's drops from its creation, and
		// each stream's socket is its own (connected, opened for this
		// stream): no control message means no drop yet.
		f.drops.Store(0)
	}
	limit := span(&e.cfg)
	if limit == 0 {
		limit = e.hardStop
	}
	var hard time.Time
	if limit > 0 {
		hard = e.t0.Add(limit + finishGrace)
	}
	setDeadline := func(last time.Time) {
		// Until the planned end the reader waits; after it, it gives the
		// path udpLinger since the last datagram.
		next := last.Add(udpLinger)
		if limit > 0 && next.Before(e.t0.Add(limit+udpLinger)) {
			next = e.t0.Add(limit + udpLinger)
		}
		if !hard.IsZero() && next.After(hard) {
			next = hard
		}
		if limit == 0 && f.packets.Load() == 0 {
			next = time.Time{} // a byte-count test not yet begun
		}
		if e.peerCloses {
			next = hard // iperf3 ends the test on the control connection
		}
		if by, ok := e.drainDeadline(); ok {
			next = by // it was ended: keep that end
		}
		_ = f.conn.SetReadDeadline(next)
	}
	setDeadline(time.Now())
	// The deadline above may have replaced the end drainReceivers set
	// in between, had TEST_END come first: that end stands. (The
	// deadline is not moved again for iperf3: it stays at hard.)
	if by, ok := e.drainDeadline(); ok {
		_ = f.conn.SetReadDeadline(by)
	}
	var lastDeadline time.Time
	// take accounts one datagram; it reports the sender's closing one.
	take := func(b []byte, arrival time.Duration) (fin bool) {
		if f.account(b, arrival) {
			return true
		}
		if s.first == 0 {
			s.first = arrival
		}
		s.finished = arrival
		s.moved.Add(int64(len(b)))
		return false
	}
	var now time.Time
	var arrival time.Duration
	fin := false
	// each accounts one datagram of a batch; false stops the batch at the
	// closing datagram.
	each := func(b []byte) bool {
		if now.IsZero() {
			now = time.Now()
			arrival = now.Sub(e.t0)
		}
		if len(b) >= magicLen && string(b[:magicLen]) == udpMagic {
			// A hello again: our answer was lost. Answer again.
			if len(b) == udpHelloLen && e.side == model.ServerSide {
				f.answerAgain()
			}
			return true
		}
		if take(b, arrival) {
			// The sender is done: the test's time ends here, not at
			// the last datagram, which a sender ahead of its rate
			// sends early.
			s.finished = arrival
			fin = true
			return false
		}
		return true
	}
	for {
		now = time.Time{}
		drops, haveDrops, _, err := uio.recv(false, each)
		if haveDrops && !gro {
			f.drops.Store(drops)
		}
		if err != nil && e.peerCloses && e.isStopped() {
			// iperf3 ended the test on its control connection (TEST_END).
			// The datagrams that had arrived are the test's, even if this
			// reader had not got to them: the client counted them as
			// sent. The test's time ran until TEST_END, as iperf3's
			// receiver counts it, not to the last datagram: a sender
			// that kept ahead of its rate sends its last one early.
			// A receiver that read on past TEST_END (readOn) ran until
			// its last datagram, when that came later.
			derr := drainUDP(f, uio, !gro, func(b []byte) { take(b, e.since()) })
			if e.readOn {
				s.finished = max(s.finished, e.endedAt())
			} else {
				s.finished = e.endedAt()
			}
			return derr
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// No closing datagram (all were lost): the sender ran
				// to the planned end unless the test was stopped.
				if p := span(&e.cfg); p > 0 && !e.isStopped() {
					s.finished = max(s.finished, p)
				}
				break
			}
			if isTransientSendError(err) {
				continue // an ICMP error from our own earlier answer
			}
			s.finished = e.since()
			return fmt.Errorf("receive: %w", err)
		}
		if fin {
			break
		}
		// Moving the deadline costs a system call: once a tenth of the
		// linger is enough.
		if !now.IsZero() && !e.peerCloses && now.Sub(lastDeadline) > udpLinger/10 {
			setDeadline(now)
			lastDeadline = now
		}
	}
	return nil
}

// drainUDP reads what is queued on f's socket without waiting, for at
// most drainLimit, and hands each datagram to got.
func drainUDP(f *udpFlow, uio *udpIO, countDrops bool, got func([]byte)) error {
	_ = f.conn.SetReadDeadline(time.Time{})
	for until := time.Now().Add(drainLimit); time.Now().Before(until); {
		drops, haveDrops, n, err := uio.recv(true, func(b []byte) bool { got(b); return true })
		if haveDrops && countDrops {
			f.drops.Store(drops)
		}
		switch {
		case err != nil && isTransientSendError(err):
			continue
		case err != nil:
			return fmt.Errorf("drain: %w", err)
		case n == 0:
			return nil
		}
	}
	return nil
}

// answerAgain sends the stream's answer again, within udpMaxAnswers.
func (f *udpFlow) answerAgain() {
	if f.answer != nil && f.answered < udpMaxAnswers {
		f.answered++
		_, _ = f.conn.Write(f.answer)
	}
}

// answerHellos answers the hellos that come again until stopAnswering:
// until the test starts nothing else reads the stream's socket, and a
// client whose answer was lost repeats its hello there (the connected
// socket, not the server's port, gets the datagrams of its peer).
func (f *udpFlow) answerHellos() {
	f.answering = make(chan struct{})
	go func() {
		defer close(f.answering)
		buf := make([]byte, udpHelloLen+1)
		for {
			n, err := f.conn.Read(buf)
			switch {
			case err != nil && isTransientSendError(err):
				continue // an ICMP error: the client's socket not open yet
			case err != nil:
				return // stopAnswering, or closed
			case n == udpHelloLen && string(buf[:magicLen]) == udpMagic:
				f.answerAgain()
			}
		}
	}()
}

// stopAnswering ends answerHellos, leaving the socket to the test.
func (f *udpFlow) stopAnswering() {
	if f.answering == nil {
		return
	}
	_ = f.conn.SetReadDeadline(time.Unix(1, 0))
	<-f.answering
	f.answering = nil
	_ = f.conn.SetReadDeadline(time.Time{})
}

// udpAnswer is the server's answer to stream id's hello.
func udpAnswer(id int, token []byte) []byte {
	b := make([]byte, 0, magicLen+2+udpTokenLen)
	b = append(b, udpAnswerMagic...)
	b = binary.BigEndian.AppendUint16(b, uint16(id))
	return append(b, token...)
}

// parseUDPAnswer reads the token of an answer to stream id's hello.
func parseUDPAnswer(b []byte, id int) (token []byte, ok bool) {
	if len(b) != magicLen+2+udpTokenLen || string(b[:magicLen]) != udpAnswerMagic || int(binary.BigEndian.Uint16(b[magicLen:])) != id {
		return nil, false
	}
	return append([]byte(nil), b[magicLen+2:]...), true
}

// udpHello is a native UDP stream's hello.
func udpHello(cookie []byte, id int) []byte {
	b := make([]byte, 0, udpHelloLen)
	b = append(b, udpMagic...)
	b = append(b, cookie...)
	return binary.BigEndian.AppendUint16(b, uint16(id))
}

// parseUDPHello reads a native hello's cookie and stream id.
func parseUDPHello(b []byte) (cookie []byte, id int, ok bool) {
	if len(b) != udpHelloLen || string(b[:magicLen]) != udpMagic {
		return nil, 0, false
	}
	return b[magicLen : magicLen+cookieLen], int(binary.BigEndian.Uint16(b[magicLen+cookieLen:])), true
}
