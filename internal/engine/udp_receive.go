package engine

import (
	"errors"
	"fmt"
	"os"
	"time"
)

// receiveUDP reads datagrams until the sender's closing datagram, the
// control connection's end (iperf3), or UDPLinger of silence past the
// planned end. It reads what is queued in batches (udpIO), with GRO
// if the test asked for it (--gro); each datagram is accounted on its
// own, all of a batch with the batch's arrival time.
func (e *End) receiveUDP(s *Stream) error {
	r, err := e.newUDPReceiver(s)
	if err != nil {
		return err
	}
	var lastDeadline time.Time
	each := r.each // one method value, not one per batch
	for {
		r.now = time.Time{}
		drops, haveDrops, _, err := r.uio.recv(false, each)
		if haveDrops && !r.gro {
			s.udp.drops.Store(drops)
		}
		if err != nil && e.peerCloses && e.isStopped() {
			return r.endedOnControl()
		}
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				// No closing datagram (all were lost): the sender ran
				// to the planned end unless the test was stopped.
				if p := Span(&e.cfg); p > 0 && !e.isStopped() {
					s.finished = max(s.finished, p)
				}
				return nil
			}
			if TransientUDPError(err) {
				continue // an ICMP error from our own earlier answer
			}
			s.finished = e.since()
			return fmt.Errorf("receive: %w", err)
		}
		if r.fin {
			return nil
		}
		// Moving the deadline costs a system call: once a tenth of the
		// linger is enough.
		if !r.now.IsZero() && !e.peerCloses && r.now.Sub(lastDeadline) > UDPLinger/10 {
			r.setDeadline(r.now)
			lastDeadline = r.now
		}
	}
}

// udpReceiver is one UDP stream's reading.
type udpReceiver struct {
	e   *End
	s   *Stream
	f   *UDPFlow
	uio *udpIO
	// gro: the kernel coalesces datagrams (--gro).
	gro bool
	// limit is the planned end (or the class's hard stop), 0 for a test
	// of bytes; hard is the latest the reader waits for.
	limit time.Duration
	hard  time.Time
	// now and arrival are the batch being read's arrival; fin: the
	// sender's closing datagram came.
	now     time.Time
	arrival time.Duration
	fin     bool
}

func (e *End) newUDPReceiver(s *Stream) (*udpReceiver, error) {
	f := s.udp
	uio, err := newUDPIO(f.conn, !e.cfg.NoGSO)
	if err != nil {
		return nil, fmt.Errorf("receive: %w", err)
	}
	r := &udpReceiver{e: e, s: s, f: f, uio: uio, limit: Span(&e.cfg)}
	// GRO only when asked for (--gro): the kernel then counts the
	// buffers it drops, not the datagrams in them (SO_RXQ_OVFL), and a
	// drop count that is not a count of datagrams is no count.
	r.gro = e.cfg.GRO && !e.cfg.NoGSO && uio.enableGRO()
	if !r.gro && enableDropCount(f.conn) {
		// The kernel counts the socket's drops from its creation, and
		// each stream's socket is its own (connected, opened for this
		// stream): no control message means no drop yet.
		f.drops.Store(0)
	}
	if r.limit == 0 {
		r.limit = e.hardStop
	}
	if r.limit > 0 {
		r.hard = e.t0.Add(r.limit + finishGrace)
	}
	r.setDeadline(time.Now())
	// The deadline above may have replaced the end drainReceivers set
	// in between, had TEST_END come first: that end stands. (The
	// deadline is not moved again for iperf3: it stays at hard.)
	if by, ok := e.drainDeadline(); ok {
		_ = f.conn.SetReadDeadline(by)
	}
	return r, nil
}

// setDeadline sets the read deadline after a datagram at last: until the
// planned end the reader waits; after it, it gives the path UDPLinger
// since the last datagram.
func (r *udpReceiver) setDeadline(last time.Time) {
	e := r.e
	next := last.Add(UDPLinger)
	if r.limit > 0 && next.Before(e.t0.Add(r.limit+UDPLinger)) {
		next = e.t0.Add(r.limit + UDPLinger)
	}
	if !r.hard.IsZero() && next.After(r.hard) {
		next = r.hard
	}
	if r.limit == 0 && r.f.packets.Load() == 0 {
		next = time.Time{} // a byte-count test not yet begun
	}
	if e.peerCloses {
		next = r.hard // iperf3 ends the test on the control connection
	}
	if by, ok := e.drainDeadline(); ok {
		next = by // it was ended: keep that end
	}
	_ = r.f.conn.SetReadDeadline(next)
}

// take accounts one datagram; it reports the sender's closing one.
func (r *udpReceiver) take(b []byte, arrival time.Duration) (fin bool) {
	s := r.s
	if r.f.account(b, arrival) {
		return true
	}
	if s.first == 0 {
		s.first = arrival
	}
	s.finished = arrival
	s.moved.Add(int64(len(b)))
	return false
}

// each accounts one datagram of a batch; false stops the batch at the
// closing datagram.
func (r *udpReceiver) each(b []byte) bool {
	e := r.e
	if r.now.IsZero() {
		r.now = time.Now()
		r.arrival = r.now.Sub(e.t0)
	}
	if r.f.hello != nil && r.f.hello(b) {
		// A hello again: our answer was lost. Answer again.
		r.f.answerAgain()
		return true
	}
	if r.take(b, r.arrival) {
		// The sender is done: the test's time ends here, not at the
		// last datagram, which a sender ahead of its rate sends early.
		r.s.finished = r.arrival
		r.fin = true
		return false
	}
	return true
}

// endedOnControl counts what had arrived when iperf3 ended the test on
// its control connection (TEST_END): those datagrams are the test's,
// even if this reader had not got to them, as the client counted them
// sent. The test's time ran until TEST_END, as iperf3's receiver counts
// it, not to the last datagram: a sender that kept ahead of its rate
// sends its last one early. A receiver that read on past TEST_END
// (readOn) ran until its last datagram, when that came later.
func (r *udpReceiver) endedOnControl() error {
	e, s := r.e, r.s
	derr := drainUDP(r.f, r.uio, !r.gro, func(b []byte) { r.take(b, e.since()) })
	if e.readOn {
		s.finished = max(s.finished, e.endedAt())
	} else {
		s.finished = e.endedAt()
	}
	return derr
}
