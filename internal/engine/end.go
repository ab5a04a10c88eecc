package engine

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// finishGrace is how long a sender waits for its receiver to confirm the
// last byte, and how long past the planned end a receiver keeps reading.
const finishGrace = 30 * time.Second

// stream is one data connection at one end.
type Stream struct {
	id   int
	role model.Role
	conn *net.TCPConn // TCP streams
	udp  *UDPFlow     // UDP streams, instead

	moved atomic.Int64 // application bytes written or read
	// omitAt is the end's count of moved at the omit mark (End.omitBytes);
	// omitMarked says it was taken, by the stream's own loop or by the
	// sampler, whichever came first past the mark (End.markOmit).
	omitAt     *atomic.Int64
	omitMarked atomic.Bool
	// wrote is set once a sender's writes are over: moved is final (its
	// end of file, if any, comes after).
	wrote atomic.Bool

	// Set by the stream's goroutine before done is closed.
	done chan struct{}
	// arrivedByStop is, plus one, what a receiving TCP stream had read
	// or had queued when the end stopped (0: not stopped yet): bytes up
	// to it arrived by then, however late this end reads them.
	arrivedByStop atomic.Int64
	finished      time.Duration // stop of writing, or arrival of the last byte
	first         time.Duration // arrival of the first byte (receivers)
	final         model.Sample
	err           error
	// tail: how the stream's end was kept near the planned end (nil:
	// it was not); set by the stream's goroutine, or for an iperf3
	// client's cut by its ender once the stream is done (End.CutSenders).
	tail *model.Tail
}

// netConn is the stream's socket, TCP or UDP.
func (s *Stream) netConn() net.Conn {
	if s.udp != nil {
		return s.udp.conn
	}
	return s.conn
}

// close closes the stream's socket.
func (s *Stream) close() { _ = s.netConn().Close() }

// end runs one side's streams and samples them every interval.
type End struct {
	side    model.Side
	cfg     model.TestConfig
	streams []*Stream
	// budget is the bytes left to send per direction in a byte-count test.
	budget atomic.Int64
	// payload is what senders write, cfg.Length bytes.
	payload []byte
	// emit receives each interval as it completes, on the sampler goroutine.
	emit func(model.Interval)
	// hardStop bounds a test whatever its config (the server's limit).
	hardStop time.Duration
	// readCap holds each receiving TCP stream to this rate, the server's
	// share of its cap on the test (0: none). Unlike --read-rate, a slow
	// consumer that drains at full speed once the senders' planned end is
	// past, the cap holds to the last byte: what the client's sender
	// buffered is still the test's, and must not cross above the cap.
	readCap model.Bitrate
	// rateCap is the test's whole cap that readCap is a share of, for
	// the report (0: none).
	rateCap model.Bitrate
	// peerCloses: the peer ends the test by closing the streams (iperf3),
	// rather than tcpscope's half-close and confirmation.
	peerCloses bool
	// wholeBlocks: senders write exactly cfg.Length per call, paced a
	// block at a time. iperf3's -k counts its client's reads (in -R), and
	// each read takes at most one block: writes of whole blocks, as
	// iperf3's server makes them, let each read take one.
	wholeBlocks bool
	// oneCPU: the end's TCP senders all write from one CPU
	// (EndOptions.OneCPU); oneCPUOnce picks it, the CPU the first
	// sender's thread runs on, into oneCPUAt (-1: none could be had).
	oneCPU     bool
	oneCPUOnce sync.Once
	oneCPUAt   int
	// hold, if set, holds the streams until it closes: the end's setup
	// is done by then (EndOptions.Hold).
	hold <-chan struct{}
	// onRead, if set, hears of every read of a receiving TCP stream (an
	// iperf3 client ends a byte or block count test it receives when it
	// has read enough). It runs on the streams' goroutines.
	onRead func(n int)
	// readOn: once stopped, the receivers read on until the caller ends
	// their reads (drainReceivers), and their time runs to their last
	// read. The iperf3 server's: it reads until each stream has what the
	// client's results say it sent (awaitCounts).
	readOn bool

	t0  time.Time
	cpu *model.CPUUse // the process's CPU use over run
	// cpuMark is the process's CPU clock at the last interval's end (at
	// run's start before the first), for each interval's CPU use; owned
	// by the sampler. cpuMarkOK is false when the kernel refused it.
	cpuMark   cpuClock
	cpuMarkOK bool
	// settings are the end's TCP buffer settings, read in its network
	// namespace by whoever made the end (nil: not read).
	settings *model.TCPSettings
	// cpus and cpuQuota are what the process may use, read as run
	// starts; quotaDir is the cgroup whose quota it is.
	cpus     model.Opt[int]
	cpuQuota model.Opt[float64]
	quotaDir string
	// drainBy, once set, is when the receivers stop reading (Unix ns): a
	// test ended on the control connection (iperf3's).
	drainBy atomic.Int64
	// aborted is set by abort: the receivers stop at once.
	aborted atomic.Bool
	// cutting is set by CutReceivers: a receiver its deadline stops
	// notes a cut.
	cutting  atomic.Bool
	stopOnce sync.Once
	stopped  chan struct{}
	// stopTime is when stop was called (nil before): for iperf3, when the
	// client's TEST_END arrived. stop may come before run sets t0, so
	// it keeps the time itself; see stoppedAt.
	stopTime atomic.Pointer[time.Time]
	// toldEnd is when this end told its peer the test was over (an
	// iperf3 client's TEST_END; nil before, and on a server). A client
	// that sends waits for the server to read before it tells it, and a
	// server that sends too (--bidir) sends until then: its bytes of
	// that wait arrive after stop, and their time counts with them.
	toldEnd   atomic.Pointer[time.Time]
	intervals []model.Interval

	// Per-stream state at the omit boundary and peaks, owned by the
	// sampler; omitBytes is read while the streams run too (awaitCounts).
	omitBytes  []atomic.Int64
	omitSample []model.Sample
	// startMinRTT is each stream's min_rtt in its first sample, before
	// data moved: the handshake's, timed to the microsecond
	// (model.EndReport.MinRTT).
	startMinRTT []model.Opt[time.Duration]
	omitUDP     []model.Datagrams
	maxCwnd     []model.Bytes
	maxRTT      []time.Duration
	maxSndWnd   []model.Opt[model.Bytes]
}

func newEnd(side model.Side, cfg model.TestConfig, streams []*Stream, emit func(model.Interval)) *End {
	e := &End{side: side, cfg: cfg, streams: streams, emit: emit, stopped: make(chan struct{})}
	// Each end sends one direction at most, so one budget per end serves
	// a byte count "per direction".
	e.budget.Store(int64(cfg.Bytes))
	for _, s := range streams {
		if s.role == model.Sender {
			// One buffer serves every sending stream: they only read it.
			// A pattern, not zeros, so nothing on the path can compress it.
			e.payload = make([]byte, cfg.Length)
			for i := range e.payload {
				e.payload[i] = byte(i*7 + i>>8)
			}
			break
		}
	}
	n := len(streams)
	e.omitBytes = make([]atomic.Int64, n)
	e.omitSample = make([]model.Sample, n)
	e.startMinRTT = make([]model.Opt[time.Duration], n)
	e.omitUDP = make([]model.Datagrams, n)
	e.maxCwnd = make([]model.Bytes, n)
	e.maxRTT = make([]time.Duration, n)
	e.maxSndWnd = make([]model.Opt[model.Bytes], n)
	for i, s := range streams {
		s.done = make(chan struct{})
		s.omitAt = &e.omitBytes[i]
	}
	return e
}

// markOmit takes, once, what a TCP stream had moved when the omit period
// ended, from the stream's own loop: called after each write or read
// with what the stream had moved before it, it takes that count at the
// first call that returns past the mark, so the bytes of the call that
// crossed it are the measured period's. The sampler's timer takes it
// too, for a stream that is waiting; alone, it was fired late by a busy
// machine, the bytes moved meanwhile fell out of the measured period
// (the rate read low by the lateness over the test), and an iperf3
// server counting what its client's results claim waited out its stall
// timer for bytes it had (600 ms past the end, once in six runs beside
// other packages' tests).
func (e *End) markOmit(s *Stream, before int64) {
	if e.cfg.Omit <= 0 || s.omitMarked.Load() || e.since() < e.cfg.Omit {
		return
	}
	if s.omitMarked.CompareAndSwap(false, true) {
		s.omitAt.Store(before)
	}
}

// stop makes the senders stop early; receivers keep reading to the end.
func (e *End) stop() {
	e.stopOnce.Do(func() {
		now := time.Now()
		e.stopTime.Store(&now)
		close(e.stopped)
		for _, s := range e.streams {
			if s.role == model.Sender {
				// A deadline in the past wakes a blocked Write at once.
				_ = s.netConn().SetWriteDeadline(time.Unix(1, 0))
			} else if s.conn != nil {
				// What was read, then what is queued: a read between
				// the two counts in neither, so the mark errs early.
				moved := s.moved.Load()
				if smp, err := tcpinfo.Read(s.conn); err == nil {
					if q, ok := smp.RecvQ.Get(); ok {
						s.arrivedByStop.Store(moved + int64(q) + 1)
					}
				}
			}
		}
	})
}

// stoppedAt is when stop was called, on this end's clock (at least 0),
// for the stream goroutines, which start after t0 is set.
func (e *End) stoppedAt() time.Duration {
	if t := e.stopTime.Load(); t != nil {
		return max(t.Sub(e.t0), 0)
	}
	return e.since()
}

// tellEnd records that this end has just told its peer the test is over.
func (e *End) tellEnd() {
	now := time.Now()
	e.toldEnd.Store(&now)
}

// endedAt is when the test ended for the peer's senders, on this end's
// clock: when this end told the peer so (tellEnd), or when it stopped.
func (e *End) endedAt() time.Duration {
	d := e.stoppedAt()
	if t := e.toldEnd.Load(); t != nil {
		d = max(d, t.Sub(e.t0))
	}
	return d
}

// isStopped reports whether stop was called.
func (e *End) isStopped() bool {
	select {
	case <-e.stopped:
		return true
	default:
		return false
	}
}

// finishReceivers ends the receiving streams' reads now, for a test ended
// on the control connection (iperf3's TEST_END).
func (e *End) finishReceivers() { e.drainReceivers(0) }

// drainReceivers ends the receiving streams' reads after d: what is
// queued or arrives by then still counts. A reader moving its own
// deadline keeps this one (drainDeadline).
func (e *End) drainReceivers(d time.Duration) {
	by := time.Unix(1, 0) // in the past: now
	if d > 0 {
		by = time.Now().Add(d)
	}
	for {
		old := e.drainBy.Load()
		if old != 0 && old <= by.UnixNano() {
			by = time.Unix(0, old) // an earlier end stands
			break
		}
		if e.drainBy.CompareAndSwap(old, by.UnixNano()) {
			break
		}
	}
	for _, s := range e.streams {
		if s.role == model.Receiver {
			_ = s.netConn().SetReadDeadline(by)
		}
	}
}

// drainDeadline is when drainReceivers ends the reads, if it was called.
func (e *End) drainDeadline() (time.Time, bool) {
	if by := e.drainBy.Load(); by != 0 {
		return time.Unix(0, by), true
	}
	return time.Time{}, false
}

// setReadDeadline sets a receiver's read deadline to d, or to the end
// drainReceivers set, if it did: that end stands. It sets d before it
// looks, so a drainReceivers in between still has the last word.
func (e *End) setReadDeadline(c net.Conn, d time.Time) {
	_ = c.SetReadDeadline(d)
	if by, ok := e.drainDeadline(); ok {
		_ = c.SetReadDeadline(by)
	}
}

// countPoll is how often awaitCounts looks at the receivers' counts.
const countPoll = time.Millisecond

// awaitCounts waits until each receiving stream with a count in want
// (indexed as e.streams; absent: none to wait for) has it: for TCP, the
// bytes it read in the measured period (past the omit mark), for UDP the
// highest datagram it saw. It gives up once no receiving stream that is
// still short has moved for stall, at by, or when ctx ends. It only
// waits: what a stream reports is what it read, whatever want says.
func (e *End) awaitCounts(ctx context.Context, want []model.Opt[int64], stall time.Duration, by time.Time) {
	moved := make([]int64, len(e.streams))
	lastMove := time.Now()
	tick := time.NewTicker(countPoll)
	defer tick.Stop()
	for {
		short := false
		now := time.Now()
		for i, s := range e.streams {
			w, ok := want[i].Get()
			if !ok || s.role != model.Receiver {
				continue
			}
			select {
			case <-s.done:
				continue // it read to its end: there is no more
			default:
			}
			m := s.moved.Load()
			if m != moved[i] {
				moved[i], lastMove = m, now
			}
			have := m - e.omitBytes[i].Load()
			if s.udp != nil {
				have = s.udp.packets.Load()
			}
			if have < w {
				short = true
			}
		}
		if !short || now.Sub(lastMove) >= stall || !now.Before(by) {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// abort breaks off every stream, readers included: a reader past its
// deadline then stops whatever still arrives (it reads on after a plain
// stop, while data comes), so a client that vanishes or resets the control
// connection while its senders go on frees its test at once.
func (e *End) abort() {
	e.aborted.Store(true)
	e.stop()
	e.finishReceivers()
	for _, s := range e.streams {
		_ = s.netConn().SetDeadline(time.Unix(1, 0))
	}
}

// run starts the clock (unless t0 is set), runs all streams and the
// sampler, and returns when every stream has finished. ctx cancellation
// aborts.
func (e *End) run(ctx context.Context) error {
	if e.t0.IsZero() {
		e.t0 = time.Now() // unless the caller started the clock
	}
	e.cpus, e.cpuQuota, e.quotaDir = cpuHost()
	cpu0, cpuOK := readCPUClock(e.quotaDir)
	e.cpuMark, e.cpuMarkOK = cpu0, cpuOK
	if cpuOK {
		// The whole process's: a server running several tests at once
		// counts them all, as one iperf3 process runs one.
		defer func() {
			if cpu1, ok := readCPUClock(e.quotaDir); ok {
				e.cpu = cpuUse(cpu0, cpu1)
			}
		}()
	}
	for i, s := range e.streams {
		if s.udp != nil {
			continue // no kernel samples for datagrams
		}
		// The first sample anchors the deltas of the first interval.
		first, err := tcpinfo.Read(s.conn)
		if err != nil {
			return fmt.Errorf("read tcp_info of stream %d: %w", s.id, err)
		}
		e.omitSample[i] = first
		e.startMinRTT[i] = first.MinRTT
	}
	stopAbort := context.AfterFunc(ctx, e.abort)
	defer stopAbort()

	var wg sync.WaitGroup
	for _, s := range e.streams {
		wg.Go(func() {
			defer close(s.done)
			if e.hold != nil {
				select {
				case <-e.hold:
				case <-e.stopped:
				case <-ctx.Done():
				}
			}
			if s.udp == nil && s.role == model.Sender && e.oneCPU {
				defer e.toOneCPU()()
			}
			switch {
			case s.udp != nil && s.role == model.Sender:
				s.err = e.sendUDP(s)
			case s.udp != nil:
				s.err = e.receiveUDP(s)
			case s.role == model.Sender:
				s.err = e.send(s)
			default:
				s.err = e.receive(s)
			}
		})
	}
	e.sample()
	wg.Wait()
	var errs []error
	for _, s := range e.streams {
		if s.err != nil {
			errs = append(errs, fmt.Errorf("stream %d: %w", s.id, s.err))
		}
	}
	return errors.Join(errs...)
}

// toOneCPU locks the calling sender's goroutine to its thread and pins
// the thread to the end's one CPU; the returned function, deferred by
// the sender, gives the thread its mask back and unlocks it. Threads
// are not ended on purpose: a child process started with a parent-death
// signal (the lab's hosts, a lab shell) takes it when the thread that
// started it ends, whichever thread that was. Where the kernel refuses
// to pin, the stream runs where the runtime puts it; where it refuses
// to restore, the goroutine ends locked and the runtime ends the thread
// rather than hand the narrowed mask to other goroutines.
func (e *End) toOneCPU() (done func()) {
	runtime.LockOSThread()
	e.oneCPUOnce.Do(func() {
		e.oneCPUAt = -1
		if cpu, err := currentCPU(); err == nil {
			e.oneCPUAt = cpu
		}
	})
	if e.oneCPUAt < 0 {
		runtime.UnlockOSThread()
		return func() {}
	}
	undo, err := pinThread(e.oneCPUAt)
	if err != nil {
		runtime.UnlockOSThread()
		return func() {}
	}
	return func() {
		if undo() {
			runtime.UnlockOSThread()
		}
	}
}

func (e *End) since() time.Duration { return time.Since(e.t0) }

// awaitDue waits until n bytes are due at rate r from the start: the
// average rate holds, and a late wake-up catches up at once. It reports
// whether stop cut the wait short.
func (e *End) awaitDue(n int64, r model.Bitrate) (stopped bool) {
	due := e.t0.Add(time.Duration(float64(n) / r.BytesPerSecond() * float64(time.Second)))
	wait := time.Until(due)
	if wait <= 0 {
		return false
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
		return false
	case <-e.stopped:
		return true
	}
}

// stallLimit is how long a finished sender waits without any byte
// acknowledged before it takes the path for dead.
const stallLimit = 5 * time.Second

// ackedBytes is the kernel's count of bytes the peer acknowledged, or -1
// when it cannot be read.
func ackedBytes(s *Stream) int64 {
	smp, err := tcpinfo.Read(s.conn)
	if err != nil || !smp.BytesAcked.OK {
		return -1
	}
	return int64(smp.BytesAcked.V)
}

// finalSample records the stream's last kernel state, stamped now.
func (e *End) finalSample(s *Stream) error {
	if s.udp != nil {
		return nil
	}
	smp, err := tcpinfo.Read(s.conn)
	if err != nil {
		return fmt.Errorf("final sample: %w", err)
	}
	smp.At = e.since()
	s.final = smp
	return nil
}

// receiverRTT is a receiving socket's RTT by its kernel: the larger of
// its smoothed RTT (from the handshake, and what it sends) and its
// receive-side estimate; 0 when it cannot be read.
func receiverRTT(c *net.TCPConn) time.Duration {
	smp, err := tcpinfo.Read(c)
	if err != nil {
		return 0
	}
	return max(smp.RTT, smp.RcvRTT)
}

// cut ends a receiving stream whose sender's queue is still draining
// past the planned end (tail.go): it counts what its kernel has received
// by now, read or queued, and no more, takes the final sample then, and
// half-closes, which ends the sender's wait; what is still on its way is
// never counted (closing the socket resets it).
func (e *End) cut(s *Stream, buf []byte) error {
	smp, err := tcpinfo.Read(s.conn)
	if err != nil {
		s.finished = e.since()
		return fmt.Errorf("cut: %w", err)
	}
	smp.At = e.since()
	s.final, s.finished = smp, smp.At
	s.tail = &model.Tail{CutAt: model.Some(smp.At)}
	// What was queued when the kernel was read is there: read exactly
	// that, at once.
	queued := int64(smp.RecvQ.V)
	_ = s.conn.SetReadDeadline(time.Now().Add(drainLimit))
	for queued > 0 {
		n, rerr := s.conn.Read(buf[:min(int64(len(buf)), queued)])
		s.moved.Add(int64(n))
		queued -= int64(n)
		if rerr != nil {
			return fmt.Errorf("cut: read what was queued: %w", rerr)
		}
	}
	if err := s.conn.CloseWrite(); err != nil {
		return fmt.Errorf("half-close: %w", err)
	}
	return nil
}

// drainQueued hands got what has already arrived on c, without waiting
// for more, until the queue is empty or, on TCP, end of file. Its
// caller's reads were cut short by a deadline in the past, which Go
// checks before it reads: the deadline is cleared, and the socket (non-
// blocking, as Go opens all) is read directly until it would block. A
// peer that keeps sending cannot hold it past drainLimit.
func drainQueued(c interface {
	syscall.Conn
	SetReadDeadline(time.Time) error
}, buf []byte, got func([]byte)) error {
	_ = c.SetReadDeadline(time.Time{})
	rc, err := c.SyscallConn()
	if err != nil {
		return fmt.Errorf("drain: %w", err)
	}
	_, udp := c.(*net.UDPConn)
	for until := time.Now().Add(drainLimit); time.Now().Before(until); {
		var n int
		var rerr error
		if err := rc.Read(func(fd uintptr) bool {
			n, rerr = syscall.Read(int(fd), buf)
			return true // never wait for readiness
		}); err != nil {
			return fmt.Errorf("drain: %w", err)
		}
		switch {
		case errors.Is(rerr, syscall.EINTR):
			continue
		case errors.Is(rerr, syscall.EAGAIN):
			return nil
		case rerr != nil:
			return fmt.Errorf("drain: %w", rerr)
		case n == 0 && !udp:
			return nil // end of file
		}
		got(buf[:n])
	}
	return nil
}

// drainLimit bounds drainQueued.
const drainLimit = time.Second

// read samples a stream's socket, or returns its final sample once done.
func (e *End) read(s *Stream) (model.Sample, bool) {
	if s.udp != nil {
		return model.Sample{}, false
	}
	select {
	case <-s.done:
		return s.final, s.final.KernelLen > 0
	default:
	}
	smp, err := tcpinfo.Read(s.conn)
	if err != nil {
		return model.Sample{}, false
	}
	smp.At = e.since()
	return smp, true
}

func (e *End) observe(i int, s *model.Sample) {
	e.maxCwnd[i] = max(e.maxCwnd[i], s.CwndBytes())
	e.maxRTT[i] = max(e.maxRTT[i], s.RTT)
	if w, ok := s.SndWnd.Get(); ok && (!e.maxSndWnd[i].OK || w > e.maxSndWnd[i].V) {
		e.maxSndWnd[i] = model.Some(w)
	}
}

// totals summarises each stream over the measured period.
func (e *End) totals() []model.StreamTotal {
	out := make([]model.StreamTotal, len(e.streams))
	for i, s := range e.streams {
		all := s.moved.Load()
		measured := model.Bytes(all - e.omitBytes[i].Load())
		// A receiver's time starts with its first byte: its clock started
		// when the test did, a one-way delay or more before data could
		// arrive, and counting that wait would bias goodput low on long paths.
		// Not in an iperf3 test: its client sets both ends' results side by
		// side, and iperf3's receiver counts from the start, as this one
		// then does. (The first byte is when the first read returned,
		// which a busy server makes late: timing from it overstated the
		// rate.)
		from := e.cfg.Omit
		if s.role == model.Receiver && !e.peerCloses {
			from = max(from, s.first)
		}
		to := s.finished
		if t := e.toldEnd.Load(); t != nil && s.role == model.Sender {
			// An iperf3 client's senders run to its TEST_END, as stock's
			// do: the server's time runs to it too, and this client
			// sends it only once the server has read what they wrote
			// (the ender), milliseconds past their last write: timed to
			// the last write, a 1 s -M 1200 test's sender read 3.0%
			// above the server's receiver, a 50 ms -k 1000 one 7.3%.
			to = max(to, t.Sub(e.t0))
		}
		dur := max(to-from, 0)
		o := &e.omitSample[i]
		t := model.StreamTotal{
			Stream:    s.id,
			Role:      s.role,
			Bytes:     measured,
			Duration:  dur,
			Rate:      model.RateOf(measured, dur.Seconds()),
			AllBytes:  model.Bytes(all),
			MaxSndWnd: e.maxSndWnd[i],
			Tail:      s.tail,
		}
		if s.udp == nil {
			t.StartMinRTT = e.startMinRTT[i]
		}
		if s.udp == nil {
			// A TCP stream's kernel state; a UDP stream has none.
			final := s.final
			t.Final = &final
			t.MaxCwnd, t.MaxRTT = model.Some(e.maxCwnd[i]), model.Some(e.maxRTT[i])
			if s.role == model.Sender {
				t.RetransSegs = model.Some(s.final.TotalRetrans - o.TotalRetrans)
			}
		}
		if a, ok := o.BytesRetrans.Get(); ok && s.final.BytesRetrans.OK {
			t.RetransBytes = model.Some(s.final.BytesRetrans.V - a)
		}
		if s.udp != nil {
			t.UDP = datagramsSince(e.omitUDP[i], s.udp.datagrams())
			if e.cfg.Omit > 0 {
				o := e.omitUDP[i]
				t.UDPOmitted = &o
			}
		}
		if s.role == model.Sender && s.udp == nil {
			t.Limited = model.LimitedBetween(o, &s.final)
			if a, ok := o.BytesSent.Get(); ok && s.final.BytesSent.OK {
				t.SentBytes = model.Some(s.final.BytesSent.V - a)
			}
		}
		out[i] = t
	}
	return out
}

func (e *End) report(version string) model.EndReport {
	return model.EndReport{
		Side:      e.side,
		Version:   version,
		Kernel:    tcpinfo.KernelRelease(),
		Intervals: e.intervals,
		Totals:    e.totals(),
		CPU:       e.cpu,
		CPUs:      e.cpus,
		CPUQuota:  e.cpuQuota,
		RateCap:   e.rateCap,
		Settings:  e.settings,
	}
}

// idle reports an interval in which no stream moved a byte.
func idle(iv *model.Interval) bool {
	for _, s := range iv.Streams {
		// Bytes acknowledged in the sliver are news too: the sender's
		// intervals would otherwise fall short of what the receiver read.
		if s.Bytes != 0 || s.AckedBytes.V != 0 {
			return false
		}
	}
	return true
}
