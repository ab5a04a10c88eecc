package engine

import (
	"context"
	"net"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// This file is the engine's API for the protocols tcpscope speaks
// (internal/perf's native one, internal/iperf3): they open the data
// connections and run the control dialogue their own way, and hand the
// streams to an End, which moves the bytes, samples both kernels' state
// and keeps the totals.

// Timing shared with the protocols' handshakes and endings.
const (
	// HandshakeTimeout bounds each step of a test's setup.
	HandshakeTimeout = 10 * time.Second
	// FinishGrace is how long past a test's end its last bytes and the
	// peer's results are waited for.
	FinishGrace = finishGrace
	// StallLimit is how long a sender waits with no acknowledgement
	// progress before it gives its last bytes up.
	StallLimit = stallLimit
	// CutAfter is how long past a timed test's planned end its end waits
	// at least for a sender's queue to drain before it cuts the wait.
	CutAfter = cutAfter
)

// NewTCPStream is stream id of a test, on c, in role at this end.
func NewTCPStream(id int, role model.Role, c *net.TCPConn) *Stream {
	return &Stream{id: id, role: role, conn: c}
}

// NewStream is stream id of a test in role at this end: on a TCP
// connection, or on a UDP flow (tcp nil).
func NewStream(id int, role model.Role, tcp *net.TCPConn, udp *UDPFlow) *Stream {
	return &Stream{id: id, role: role, conn: tcp, udp: udp}
}

// NewUDPStream is UDP stream id of a test, on a connected socket; wide:
// its datagrams carry 64-bit counters (iperf3's --udp-counters-64bit).
func NewUDPStream(id int, role model.Role, c *net.UDPConn, wide bool) *Stream {
	return &Stream{id: id, role: role, udp: NewUDPFlow(c, wide, false)}
}

// ID is the stream's index in its test.
func (s *Stream) ID() int { return s.id }

// Role is what the stream does at this end.
func (s *Stream) Role() model.Role { return s.role }

// TCP is the stream's TCP connection, nil for a UDP stream.
func (s *Stream) TCP() *net.TCPConn { return s.conn }

// UDP is the stream's datagram side, nil for a TCP stream.
func (s *Stream) UDP() *UDPFlow { return s.udp }

// IsUDP says whether the stream carries datagrams.
func (s *Stream) IsUDP() bool { return s.udp != nil }

// LocalAddr is the address of the stream's socket.
func (s *Stream) LocalAddr() net.Addr { return s.netConn().LocalAddr() }

// RemoteAddr is the peer's address of the stream's socket (nil for a UDP
// socket not connected to one).
func (s *Stream) RemoteAddr() net.Addr { return s.netConn().RemoteAddr() }

// Done is closed once the stream has stopped (see Finished).
func (s *Stream) Done() <-chan struct{} { return s.done }

// Finished is, once Done is closed, when the stream stopped writing or
// its last byte arrived, from the start of the test.
func (s *Stream) Finished() time.Duration { return s.finished }

// Moved is the application bytes written or read so far.
func (s *Stream) Moved() int64 { return s.moved.Load() }

// Close closes the stream's socket.
func (s *Stream) Close() { s.close() }

// Setup reads back what the kernel granted the stream's socket, and
// its type-of-service byte when tos (the test set one).
func (s *Stream) Setup(tos bool) (model.SocketSetup, error) {
	st, err := setupOf(s, tos)
	return st, wrapSocket(err, "read socket options")
}

// Apply sets the test's socket options (cfg, at this end) on the
// stream's socket: buffers, congestion control, MSS, type of service,
// pacing, and no-delay on TCP.
func (s *Stream) Apply(cfg *model.TestConfig) error {
	if s.udp != nil {
		return tcpinfo.Apply(s.udp.conn, SocketOptions(cfg, s.role))
	}
	if err := tcpinfo.Apply(s.conn, SocketOptions(cfg, s.role)); err != nil {
		return err
	}
	_ = s.conn.SetNoDelay(cfg.NoDelay)
	return nil
}

// EndOptions say how a test of another protocol runs on the engine.
type EndOptions struct {
	// Start is when the test's clock started (the peer's, as its
	// protocol says when); the zero time: when Run starts.
	Start time.Time
	// PeerCloses: the peer ends the test by closing the streams, not by
	// the native protocol's half-close and confirmation.
	PeerCloses bool
	// ReadOn: once stopped, the receivers read on until DrainReceivers
	// or FinishReceivers ends their reads, and their time runs to their
	// last read.
	ReadOn bool
	// WholeBlocks: senders write exactly the test's Length per call,
	// paced a block at a time.
	WholeBlocks bool
	// OneCPU: every TCP stream the end sends on writes from one CPU, as
	// a single-threaded peer writes its streams (iperf3 before 3.16).
	// Loopback and veth hand each packet to the sending CPU's backlog,
	// so a test's flows sent from two CPUs at once arrive out of order,
	// and the sender retransmits what was not lost: stock iperf3 -R -P 2
	// -t 1 against tcpscope server on loopback, 24-148 retransmissions
	// from senders free to run on both CPUs, 0-11 from one CPU, and
	// 0-11 against iperf3 -s. The cost is one CPU's throughput for the
	// test's sending (there 21-25 Gbit/s against 29-35; iperf3 -s
	// 15-25). Receivers stay free: pinned too, they made a stock
	// client's -P 3 retransmit 21-71 times against 0-13.
	OneCPU bool
	// OnRead, if set, hears of every read of a receiving TCP stream, on
	// the streams' goroutines.
	OnRead func(n int)
	// Hold, if set, holds the streams until it closes: the caller starts
	// Run, tells the peer to start, then closes it, so that the end's
	// own setup is done when the peer starts, and its first write
	// follows at once (iperf3's server writes its first block as it
	// sends TEST_RUNNING, before the client reads).
	Hold <-chan struct{}
	// Settings are the end's TCP buffer settings (tcpinfo.Settings), read
	// in its network namespace by whoever made the end; nil: not read.
	Settings *model.TCPSettings
	// HardStop bounds the test whatever its config: a server's limit on
	// a test's duration (0: none).
	HardStop time.Duration
	// ReadCap holds each receiving TCP stream to this rate: a server's
	// share of its cap on the test (0: none). Unlike --read-rate, a slow
	// consumer that drains at full speed once the senders' planned end
	// is past, the cap holds to the last byte. RateCap is the whole cap
	// ReadCap is a share of, for the report.
	ReadCap, RateCap model.Bitrate
}

// StartClock starts the end's clock at at, in place of EndOptions.Start,
// for a protocol whose peer starts on a message sent after the end's
// setup. Before Run.
func (e *End) StartClock(at time.Time) { e.t0 = at }

// NewEnd is one side's end of a test on streams; emit receives each
// interval as it completes.
func NewEnd(side model.Side, cfg model.TestConfig, streams []*Stream, emit func(model.Interval), o EndOptions) *End {
	e := newEnd(side, cfg, streams, emit)
	e.setOptions(o)
	return e
}

func (e *End) setOptions(o EndOptions) {
	e.t0 = o.Start
	e.peerCloses, e.readOn, e.wholeBlocks, e.onRead, e.hold = o.PeerCloses, o.ReadOn, o.WholeBlocks, o.OnRead, o.Hold
	e.oneCPU = o.OneCPU
	e.settings, e.hardStop, e.readCap, e.rateCap = o.Settings, o.HardStop, o.ReadCap, o.RateCap
}

// Run moves the bytes and samples the streams until the test ends, and
// returns the first stream's error.
func (e *End) Run(ctx context.Context) error { return e.run(ctx) }

// Stop ends the senders' writing: the test's end has come.
func (e *End) Stop() { e.stop() }

// Abort stops the test at once: the receivers stop reading too.
func (e *End) Abort() { e.abort() }

// TellEnd notes that this end has told its peer the test is over.
func (e *End) TellEnd() { e.tellEnd() }

// CutSenders notes that this end stopped waiting, now, for what its
// senders had queued to arrive (an iperf3 client ending the test while
// bytes were unacknowledged past the planned end). Call it once the
// senders are done, before Report.
func (e *End) CutSenders() {
	at := model.Some(e.since())
	for _, s := range e.streams {
		if s.role != model.Sender || s.udp != nil {
			continue
		}
		if s.tail == nil {
			s.tail = &model.Tail{}
		}
		s.tail.CutAt = at
	}
}

// CutReceivers ends the receivers' reads now, as FinishReceivers does,
// and notes a cut on each stream still reading (model.Tail): an iperf3
// client ending a timed test whose server's queue still drains.
func (e *End) CutReceivers() {
	e.cutting.Store(true)
	e.finishReceivers()
}

// FinishReceivers ends the receivers' reads now.
func (e *End) FinishReceivers() { e.finishReceivers() }

// DrainReceivers lets the receivers read what is still on its way for d
// more at most.
func (e *End) DrainReceivers(d time.Duration) { e.drainReceivers(d) }

// AwaitCounts waits, while the receivers read on, until each receiving
// stream (indexed as Streams) has read what want says its peer sent, no
// byte arriving for stall, or the time is by.
func (e *End) AwaitCounts(ctx context.Context, want []model.Opt[int64], stall time.Duration, by time.Time) {
	e.awaitCounts(ctx, want, stall, by)
}

// Streams are the end's streams.
func (e *End) Streams() []*Stream { return e.streams }

// Report is the end's report of the test, stamped with version.
func (e *End) Report(version string) model.EndReport { return e.report(version) }
