package engine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// receive reads to end of file, then half-closes to confirm.
func (e *End) receive(s *Stream) error {
	r, err := e.newReceiver(s)
	if err != nil {
		return err
	}
	var y yielder
	for {
		y.tick()
		before := s.moved.Load()
		n, err := r.read(r.buf)
		e.markOmit(s, before)
		if n > 0 {
			r.last = e.since()
			r.arrive(n)
		}
		if err != nil {
			var step readStep
			step, err = r.atError(n, err)
			switch step {
			case readAgain:
				continue
			case readEnded:
				return r.finish()
			case readReturn:
				return err
			}
		}
		if n > 0 && s.first == 0 {
			s.first = e.since()
		}
		s.moved.Add(int64(n))
		if n > 0 && e.onRead != nil {
			e.onRead(n)
		}
		if err == io.EOF {
			return r.finish()
		}
		r.hold(n)
		if err != nil {
			s.finished = e.since()
			e.finalSample(s)
			return fmt.Errorf("read: %w", err)
		}
	}
}

// receiver is one TCP stream's reading: its buffer and pace, and the
// bounds of its end (the planned end, the grace after it, a cut).
type receiver struct {
	e    *End
	s    *Stream
	buf  []byte
	read func([]byte) (int, error)
	// pace is the rate reads are held to (a -R's read rate, a server's
	// cap), 0 for none; holds: a server's cap, which holds past the
	// planned end. paced counts the bytes read under it.
	pace  model.Bitrate
	holds bool
	paced int64
	// limit is the planned end (or the class's hard stop), 0 for a test
	// of bytes. Past it the receiver reads on while data still comes, up
	// to graceEnd, but gives up on a path that delivers nothing for
	// stallLimit (the sender does the same); lastMoved is the count at
	// the last such look.
	limit     time.Duration
	graceEnd  time.Time
	lastMoved int64
	// cutBy: a timed native test's receiver stops waiting for the rest
	// then, counting what it has, should the sender's queue still be
	// draining (tail.go); an iperf3 test ends on its control connection
	// instead.
	cutBy time.Time
	// last is the latest read that returned data; arrived the latest
	// that returned bytes not yet there when the end stopped: the end of
	// the receiver's time once stopped. A read that is late for bytes
	// queued before the stop (a busy reader) does not make their time
	// longer: timing them to the read put a stock -k 1000 client's two
	// ends 10% apart.
	last, arrived time.Duration
}

// newReceiver sizes the stream's reads and sets its first deadline.
func (e *End) newReceiver(s *Stream) (*receiver, error) {
	r := &receiver{e: e, s: s, pace: e.cfg.ReadRate, lastMoved: -1}
	if e.readCap > 0 && (r.pace == 0 || e.readCap < r.pace) {
		r.pace, r.holds = e.readCap, true
	}
	// Reading at least 256 KiB per call saves system calls when data has
	// piled up; at most 1 MiB, or 256 KiB in tests of many streams, bounds
	// a server's memory whatever clients ask for.
	most := model.MiB
	if len(e.streams) > 8 {
		most = 256 * model.KiB
	}
	size := min(max(e.cfg.Length, 256*model.KiB), most)
	if r.pace > 0 {
		// Reads of about 10 ms of the rate keep the pace smooth.
		size = min(size, max(model.Bytes(r.pace.BytesPerSecond()/100), 1500))
	}
	r.buf = make([]byte, size)
	r.limit = Span(&e.cfg)
	if r.limit == 0 {
		r.limit = e.hardStop
	}
	if r.limit > 0 {
		r.graceEnd = e.t0.Add(r.limit + finishGrace)
		first := e.t0.Add(r.limit + stallLimit)
		if Span(&e.cfg) > 0 && !e.peerCloses && !e.readOn {
			r.cutBy = e.t0.Add(r.limit + cutAfter)
			first = r.cutBy
		}
		// (iperf3: TEST_END may have come before this reader started;
		// the end drainReceivers set then stands.)
		e.setReadDeadline(s.conn, first)
	}
	read, err := rawReader(s.conn, e.cfg.SkipRxCopy)
	if err != nil {
		return nil, err
	}
	r.read = read
	return r, nil
}

// arrive notes n bytes read now (see arrived).
func (r *receiver) arrive(n int) {
	if stop := r.s.arrivedByStop.Load(); stop == 0 || r.s.moved.Load()+int64(n) >= stop {
		r.arrived = r.e.since()
	}
}

// readStep is what a receiver does after a read that failed.
type readStep int

const (
	readOn     readStep = iota // count the read's bytes, then handle its error
	readAgain                  // read again (the bytes are counted)
	readEnded                  // the stream has ended well (counted)
	readReturn                 // end the stream with the error given
)

// atError decides what a read that returned n bytes and err means: the
// test ended on its control connection, a deadline of the receiver's
// own (a cut, the grace), or a failure.
func (r *receiver) atError(n int, err error) (readStep, error) {
	e, s := r.e, r.s
	deadline := errors.Is(err, os.ErrDeadlineExceeded)
	if e.readOn && e.isStopped() && deadline {
		if by, ok := e.drainDeadline(); !ok || time.Now().Before(by) {
			// This reader's own deadline, not the end its caller sets
			// (maybe not yet): read on, for at most the grace.
			s.moved.Add(int64(n))
			e.setReadDeadline(s.conn, time.Now().Add(finishGrace))
			return readAgain, nil
		}
	}
	if e.peerCloses && e.isStopped() {
		r.drainEnded(n, err)
		return readEnded, nil
	}
	if !r.cutBy.IsZero() && deadline && !e.aborted.Load() {
		s.moved.Add(int64(n))
		switch by := e.t0.Add(r.limit + 2*receiverRTT(s.conn)); {
		case r.last <= r.limit:
			// Nothing arrived past the planned end: no queue is
			// draining, and a path that stopped delivering is told by
			// the stall below.
			r.cutBy = time.Time{}
			_ = s.conn.SetReadDeadline(e.t0.Add(r.limit + stallLimit))
		case by.After(time.Now()):
			r.cutBy = by // two round trips of this path are longer
			_ = s.conn.SetReadDeadline(by)
		default:
			return readReturn, e.cut(s, r.buf)
		}
		return readAgain, nil
	}
	if r.limit > 0 && deadline && time.Now().Before(r.graceEnd) && !e.aborted.Load() {
		if m := s.moved.Load(); m != r.lastMoved {
			r.lastMoved = m
			next := time.Now().Add(stallLimit)
			if next.After(r.graceEnd) {
				next = r.graceEnd
			}
			_ = s.conn.SetReadDeadline(next)
			return readAgain, nil
		}
		return readOn, fmt.Errorf("nothing received for %v after the planned end: the path stopped delivering", stallLimit)
	}
	return readOn, err
}

// drainEnded counts what arrived of an iperf3 test ended on its control
// connection: what came before is the test's, even if this reader had
// not got to it yet, as the client counted it sent. A drain that fails
// ends there: what it counted stands.
func (r *receiver) drainEnded(n int, err error) {
	e, s := r.e, r.s
	s.moved.Add(int64(n))
	cut := e.cutting.Load() && errors.Is(err, os.ErrDeadlineExceeded)
	_ = drainQueued(s.conn, r.buf, func(b []byte) {
		r.arrive(len(b))
		s.moved.Add(int64(len(b)))
		r.last = e.since()
	})
	if cut {
		s.tail = &model.Tail{CutAt: model.Some(e.since())}
	}
}

// hold sleeps, after a read of n bytes, until the bytes read so far are
// due at the read rate, until the senders' planned end; then the reader
// drains at full speed so the test ends. A server's cap holds on.
func (r *receiver) hold(n int) {
	if r.pace == 0 || n == 0 {
		return
	}
	e := r.e
	r.paced += int64(n)
	due := e.t0.Add(time.Duration(float64(r.paced) / r.pace.BytesPerSecond() * float64(time.Second)))
	if r.limit > 0 && due.After(e.t0.Add(r.limit)) && !r.holds {
		r.pace = 0
		return
	}
	wait := time.Until(due)
	if wait <= 0 {
		return
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-e.stopped:
		if !r.holds {
			r.pace = 0
		} else {
			<-t.C
		}
	}
}

// finish ends a stream read to its end: its time, its last sample, and
// the half-close that tells a native sender all arrived.
func (r *receiver) finish() error {
	e, s := r.e, r.s
	s.finished = e.since()
	switch {
	case e.readOn && e.isStopped():
		// Until TEST_END arrived, as iperf3's receiver counts it, or,
		// when bytes sent before it were still on their way, until the
		// last of them was read: the time they really took.
		s.finished = max(e.stoppedAt(), r.arrived)
	case e.peerCloses && e.isStopped():
		// Until TEST_END was sent (the client may have waited for the
		// server to read while the server's senders went on), or, when
		// bytes the server wrote before it were still on their way, until
		// the last of them was read: they count, and so does the time
		// they took (a stock server's -w 8M drained for 3 s after
		// TEST_END, and counting its bytes over the time to TEST_END
		// read 24 Mbit/s across a 20 Mbit/s path).
		s.finished = max(e.endedAt(), r.arrived)
	}
	err := e.finalSample(s)
	if e.peerCloses {
		return err
	}
	if cerr := s.conn.CloseWrite(); cerr != nil && err == nil {
		err = fmt.Errorf("half-close: %w", cerr)
	}
	return err
}
