package engine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// send writes until the duration ends, the byte budget is spent or stop is
// called, then half-closes and waits for the receiver to confirm.
func (e *End) send(s *Stream) error {
	// One thread makes every write of a TCP stream. A goroutine moved
	// between threads, and so between CPUs, hands the transmit path to
	// another CPU's backlog mid-burst: on loopback the receiver then
	// sees segments out of order and the sender retransmits what was not
	// lost; across a veth the same, in thousands (stock iperf3 -R -t 2
	// against tcpscope server, 128 KiB writes: 4-18 retransmissions
	// locked against 10-32 unlocked on loopback, stock's server 4-15;
	// across a veth 14-24k against 35-45k, stock's 15-23k, nearly all
	// undone by the sender as spurious: TCPFullUndo).
	if s.udp == nil {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	w, err := e.newSender(s)
	if err != nil {
		return err
	}
	defer w.close()
	var werr error
	var y yielder
	for {
		y.tick()
		chunk, ok := w.next()
		if !ok {
			break
		}
		before := s.moved.Load()
		n, err := w.write(chunk)
		e.markOmit(s, before)
		s.moved.Add(int64(n))
		w.written += int64(n)
		if w.gate != nil {
			w.gate.wrote(n)
		}
		if err != nil {
			if w.gated && errors.Is(err, os.ErrDeadlineExceeded) && !e.isStopped() && time.Now().Before(w.planned) {
				continue // the gate's deadline: it looks again
			}
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				werr = fmt.Errorf("write: %w", err)
			}
			break
		}
	}
	return w.finish(werr)
}

// sender is one TCP stream's writing: its buffer, pace, byte budget and
// tail gate.
type sender struct {
	e     *End
	s     *Stream
	buf   []byte
	write func([]byte) (int, error)
	close func()
	// pace is -b, 0 for none; written counts the bytes written.
	pace    model.Bitrate
	written int64
	// gate holds a timed test's last writes back so that its queue
	// drains by planned, the test's end (tail.go); gated: the write
	// deadline is the gate's margin.
	gate    *tailGate
	planned time.Time
	gated   bool
}

// newSender sizes the stream's writes and sets its write deadline.
func (e *End) newSender(s *Stream) (*sender, error) {
	w := &sender{e: e, s: s, buf: e.payload, write: s.conn.Write, close: func() {}, pace: e.cfg.Bitrate}
	if d := Span(&e.cfg); d > 0 {
		_ = s.conn.SetWriteDeadline(e.t0.Add(d))
		w.planned = e.t0.Add(d)
		w.gate = newTailGate(s.conn, w.planned)
	} else if e.hardStop > 0 {
		_ = s.conn.SetWriteDeadline(e.t0.Add(e.hardStop))
	}
	if w.pace > 0 && !e.wholeBlocks {
		// Writes of about 10 ms of the rate keep the pace smooth.
		w.buf = w.buf[:min(len(w.buf), max(int(w.pace.BytesPerSecond()/100), 1500))]
	}
	if e.cfg.ZeroCopy {
		zc, err := newZeroCopy(e.payload)
		if err != nil {
			return nil, fmt.Errorf("zero-copy sending: %w", err)
		}
		w.close = func() { _ = zc.Close() }
		w.write = func(b []byte) (int, error) { return zc.send(s.conn, len(b)) }
	}
	return w, nil
}

// next is the next write's bytes, after the pace's wait and the tail
// gate's; false: the sender is done (its budget spent, the test over).
func (w *sender) next() ([]byte, bool) {
	e := w.e
	// The budget is taken before the pace is waited for: a sender whose
	// budget is spent is done when its last write is, not when a next
	// one would have been due.
	chunk := w.buf
	if e.cfg.Bytes > 0 {
		left := e.budget.Add(-int64(len(w.buf)))
		if left+int64(len(w.buf)) <= 0 {
			return nil, false
		}
		if left < 0 {
			chunk = w.buf[:int64(len(w.buf))+left]
		}
	}
	if w.pace > 0 && w.written > 0 {
		// The application has nothing more to write until its bytes so
		// far are due at the rate: an application-limited sender, as
		// iperf3's -b makes one.
		e.awaitDue(w.written, w.pace)
		select {
		case <-e.stopped:
		default:
			if d := Span(&e.cfg); d > 0 && time.Now().After(e.t0.Add(d)) {
				return nil, false
			}
		}
	}
	if w.gate == nil {
		return chunk, true
	}
	allow, margin, ok := w.gate.admit(len(chunk), e.wholeBlocks, e.stopped)
	if !ok {
		return nil, false
	}
	// A write the full send buffer holds up past its margin would enter
	// the queue too late to drain by the planned end: it stops there,
	// having written what it could. (Once the margin is under half the
	// time left: before, a write held up for long still drains in time,
	// and a fast path never sets a deadline but in its last
	// milliseconds.)
	if now := time.Now(); margin < w.planned.Sub(now)/2 {
		_ = w.s.conn.SetWriteDeadline(now.Add(margin))
		w.gated = true
	} else if w.gated {
		_ = w.s.conn.SetWriteDeadline(w.planned)
		w.gated = false
	}
	if e.isStopped() {
		return nil, false // stop's deadline may have come before this one
	}
	return chunk[:allow], true
}

// finish ends the stream's sending: its time and tail, its last sample,
// and, for a native receiver, the half-close and the wait for it to
// confirm. werr is the writes' failure, if any.
func (w *sender) finish(werr error) error {
	e, s := w.e, w.s
	s.wrote.Store(true)
	s.finished = e.since()
	if w.gate != nil {
		if from, queued, ok := w.gate.held(); ok {
			s.tail = &model.Tail{HeldFrom: model.Some(max(from.Sub(e.t0), 0)), Queued: model.Some(model.Bytes(queued))}
		}
	}
	if e.peerCloses {
		// iperf3 ends a test on its control connection and closes the
		// streams, maybe with a reset: sample now, while the socket still
		// has its state; the caller closes it.
		return e.finalSample(s)
	}
	if werr != nil {
		e.finalSample(s)
		return werr
	}
	if err := s.conn.CloseWrite(); err != nil {
		return fmt.Errorf("half-close: %w", err)
	}
	if err := e.awaitConfirm(s); err != nil {
		e.finalSample(s)
		return err
	}
	return e.finalSample(s)
}

// awaitConfirm waits for the receiver to half-close after reading the
// stream's end of file: then every byte is acknowledged and the final
// sample shows the whole transfer. A path that stopped delivering (a
// path-MTU black hole, a dead link) would hold the test for the whole
// grace: it gives up once nothing has been acknowledged for stallLimit.
func (e *End) awaitConfirm(s *Stream) error {
	graceEnd := time.Now().Add(finishGrace)
	lastAcked, lastProgress := ackedBytes(s), time.Now()
	var one [512]byte
	for {
		next := time.Now().Add(time.Second)
		if next.After(graceEnd) {
			next = graceEnd
		}
		_ = s.conn.SetReadDeadline(next)
		_, err := s.conn.Read(one[:])
		if err == io.EOF {
			return nil
		}
		if errors.Is(err, os.ErrDeadlineExceeded) && time.Now().Before(graceEnd) {
			if a := ackedBytes(s); a != lastAcked {
				lastAcked, lastProgress = a, time.Now()
			} else if time.Since(lastProgress) >= stallLimit {
				return fmt.Errorf("wait for the receiver to finish: nothing acknowledged for %v: the path stopped delivering", stallLimit)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("wait for the receiver to finish: %w", err)
		}
	}
}
