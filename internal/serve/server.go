package serve

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/frontdoor"
	"github.com/tcpscope/tcpscope/internal/gate"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
	"github.com/tcpscope/tcpscope/internal/token"
)

// Server serves the protocols added to it (Handle) on one listener: it
// routes each connection by its first bytes, admits their tests through
// one gate, pairs data connections and UDP streams with their tests, and
// builds the server's end of each on the engine. Unlike iperf3's server
// it runs many tests at once, up to Limits.MaxTests.
type Server struct {
	// Limits are the same for every client address; Policy, when set,
	// replaces them with classes of addresses.
	Limits Limits
	Policy *limits.Table
	// Tokens, when set, admits only tests with an access token it
	// verifies: the protocols check their clients' tokens with it (a
	// native client's in its hello). A protocol whose clients cannot
	// carry one refuses them, or admits them by its own authentication.
	Tokens *token.Verifier
	// TLS, when set, serves TLS on the port: HTTPS, and the protocols
	// that speak inside TLS (TLSProtocol), told by ALPN or by their
	// first bytes inside. The native protocol then takes its control
	// connections over TLS only.
	TLS *tls.Config
	// HTTP, when set, serves HTTP requests on the server's port (and
	// HTTPS, with TLS): the front door routes them to it.
	HTTP    http.Handler
	Version string
	Logger  *slog.Logger
	// InNetns, when set, runs code that opens sockets in the listener's
	// network namespace (UDP streams open their own sockets); nil runs
	// it where the caller is.
	InNetns func(func() error) error
	// ShutdownGrace bounds how long Serve waits for running tests after its
	// context ends (default 15 s).
	ShutdownGrace time.Duration
	// OneTest serves one test, as iperf3 -s -1: the first test admitted
	// (of any protocol) is the only one, and Serve returns once it has
	// ended, however it ended. Connections refused before admission (a
	// bad hello, a failed token or iperf3 authentication, a limit) do not
	// count: a port scanner or a mistyped client does not use the test up.
	OneTest bool
	// IdleTimeout, when set, ends Serve with ErrIdle once no test has run
	// for that long (from Serve's start, or the end of the last test).
	// iperf3's --idle-timeout restarts a server stuck in a test; a test
	// here is bounded by its class's duration instead, so idle means
	// only "nobody came".
	IdleTimeout time.Duration
	// AllowAffinity lets a client pin the server's process to a CPU for
	// its test (-A n,m), one test at a time. Off by default: the pin
	// holds every test the server runs, so a public server must not let
	// a client choose it; the request is then ignored, and the client
	// told (the welcome names no CPU) and warned.
	AllowAffinity bool
	pinMu         sync.Mutex
	pinned        bool // a test holds the server pinned

	// gate admits the tests (theGate builds it from the settings above
	// once, at Serve or an earlier call), and logger is Logger or a
	// discarding one, set then too; subs are the subscribers given
	// before the gate was built.
	gate     *gate.Gate
	logger   *slog.Logger
	gateOnce sync.Once
	subs     []func(gate.Event)
	mu       sync.Mutex
	running  map[string]*serverTest // by cookie
	// protocols are the ones served, in the order added (Handle).
	protocols []Protocol
	// udpTurn is, per client address, the one test whose UDP hellos
	// name no test (another protocol's) whose streams may open now (see awaitUDPTurn); turnFreed is closed and
	// replaced whenever a turn ends.
	udpTurn   map[string]*serverTest
	turnFreed chan struct{}
	wg        sync.WaitGroup
	// byKey finds a running test's stream by the key its data
	// connection or UDP hello carries (under mu).
	byKey map[string]streamRef
	// finish ends Serve's accepting, as its context's end does (OneTest,
	// IdleTimeout).
	finish context.CancelFunc
	// door is the port's front door, from Serve on (under mu).
	door *frontdoor.Door
}

// ErrIdle: Serve returned because no test ran for its IdleTimeout.
var ErrIdle = errors.New("idle timeout: no test came")

// streamRef is a stream of a running test.
type streamRef struct {
	t  *serverTest
	id int
}

type dataConn struct {
	conn *net.TCPConn
	udp  *engine.UDPFlow // a UDP stream's, instead of conn
	// token is a keyed UDP stream's (KeyedUDP): the server sent it in answer to
	// the hello, and sends nothing more until the client echoes it.
	token  []byte
	stream int // the stream index, or -1: number it by seq
	// seq is the connection's place in the server's accept order: an
	// iperf3 data connection names no stream, and iperf3 assigns roles
	// in the order its server accepted the connections.
	seq uint64
}

func (d dataConn) close() {
	if d.udp != nil {
		d.udp.Conn().Close()
		return
	}
	d.conn.Close()
}

type serverTest struct {
	cookie []byte
	nconn  int
	// ticket is its place at the gate (nil until admitted).
	ticket *gate.Ticket
	data   chan dataConn
	// full is set, under Server.mu, once every stream has arrived; later
	// connections with the same cookie are closed, not queued.
	full bool
	// arrived counts an iperf3 test's data connections and UDP hellos,
	// which carry no stream index (under Server.mu).
	arrived int
	// udp: the streams are UDP; wide: its datagrams carry 64-bit
	// counters.
	udp, wide bool
	// udpHello, for another protocol's test, tells its UDP hellos, which
	// name no test: they are matched by clientIP (see udpByAddr) and
	// answered with udpReply.
	udpHello func([]byte) bool
	udpReply []byte
	clientIP net.IP
	admitted time.Time
	// claimed marks a keyed UDP test's stream ids whose hello came
	// (under Server.mu): one socket per stream, whatever else asks.
	claimed []bool
	// udpPeers are the addresses its UDP streams send to (under
	// Server.mu), for the log.
	udpPeers []string
	// class is the client's in the server's policy.
	class *limits.Class
	// keys are its streams' keys (TestSpec.StreamKeys).
	keys [][]byte
	// tokens are its UDP streams' tokens, by stream (keyed tests; see
	// dataConn.token), set as awaitStreams gathers them.
	tokens [][]byte
}

// Listen opens the TCP listener a server serves on: addr as net.Listen
// takes it (":5201", "[::1]:5201"), the error naming it.
func Listen(ctx context.Context, addr string) (net.Listener, error) {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, &fault.Error{Code: fault.AddrInUse, Msg: "listen on " + addr, Err: err,
			Hint: "another server is listening on " + addr + ": stop it, or listen on another port"}
	}
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", addr, err)
	}
	return ln, nil
}

// Serve accepts connections until ctx ends, then stops the running tests
// (their clients are told and get their results) and returns.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	// Serve writes none of the settings: Status, LameDuck and the
	// protocols read them from other goroutines meanwhile.
	grace := s.ShutdownGrace
	if grace == 0 {
		grace = 15 * time.Second
	}
	g := s.theGate()
	s.mu.Lock()
	s.running = make(map[string]*serverTest)
	s.udpTurn = make(map[string]*serverTest)
	s.turnFreed = make(chan struct{})
	s.byKey = make(map[string]streamRef)
	ctx, s.finish = context.WithCancel(ctx)
	defer s.finish()
	s.mu.Unlock()
	// A one-test server after its test, or an idle one, stops accepting.
	go func() {
		select {
		case <-g.Done():
			s.finish()
		case <-ctx.Done():
		}
	}()
	g.Start()

	// UDP tests use the same port number over UDP. A server that cannot
	// open it still serves TCP; UDP clients then time out with a hint.
	var pc *net.UDPConn
	uerr := s.inNetns(func() (err error) { pc, err = listenUDP(ctx, ln.Addr()); return err })
	if uerr != nil {
		s.logger.Warn("UDP tests unavailable", "err", uerr)
	} else {
		defer pc.Close()
		stopUDP := context.AfterFunc(ctx, func() { _ = pc.Close() })
		defer stopUDP()
		s.wg.Go(func() { s.serveUDP(ctx, pc) })
	}
	door := &frontdoor.Door{
		Routes:      s.routes(),
		HTTP:        s.HTTP,
		TLS:         s.TLS,
		Enter:       g.Enter,
		HeadTimeout: engine.HandshakeTimeout,
		// Running tests are stopped with ctx, and their clients told:
		// that takes up to a sender's finishing grace.
		Grace:  grace + engine.FinishGrace,
		Logger: s.logger,
	}
	s.mu.Lock()
	s.door = door
	s.mu.Unlock()
	err := door.Serve(ctx, ln)
	// The UDP socket closed with ctx: its reader returns at once.
	s.wg.Wait()
	if err == nil && g.IdledOut() {
		err = ErrIdle
	}
	return err
}

// theGate is the server's gate, built at the first call from the
// server's settings (Limits or Policy, OneTest, IdleTimeout, Logger) and
// the subscribers given so far.
func (s *Server) theGate() *gate.Gate {
	s.gateOnce.Do(func() {
		policy := s.Policy
		if policy == nil {
			t := s.Limits.Table()
			policy = &t
		}
		s.logger = s.Logger
		if s.logger == nil {
			s.logger = slog.New(slog.DiscardHandler)
		}
		g := &gate.Gate{Policy: policy, OneTest: s.OneTest, IdleTimeout: s.IdleTimeout, Logger: s.logger}
		s.mu.Lock()
		for _, fn := range s.subs {
			g.Subscribe(fn)
		}
		s.subs = nil
		s.gate = g
		s.mu.Unlock()
	})
	return s.gate
}

// Subscribe calls fn with every test's admission and end (gate.Event),
// in the test's goroutine: the server's log of diagnoses, a one-test
// server's exit code, an archive. Subscribe before Serve, or at any
// time after.
func (s *Server) Subscribe(fn func(gate.Event)) {
	s.mu.Lock()
	if s.gate == nil {
		s.subs = append(s.subs, fn)
		s.mu.Unlock()
		return
	}
	g := s.gate
	s.mu.Unlock()
	g.Subscribe(fn)
}

// Gate is the server's gate: its admissions, refusals and state.
func (s *Server) Gate() *gate.Gate { return s.theGate() }

// Log is the server's logger (Logger, or one that discards), for the
// protocols it serves.
func (s *Server) Log() *slog.Logger {
	s.theGate()
	return s.logger
}

// routes are the server's protocols on its port, as the front door
// tries them, in the order added (Handle): each on plain connections,
// and inside TLS too if it speaks there (TLSProtocol).
func (s *Server) routes() []frontdoor.Route {
	var rs []frontdoor.Route
	for _, p := range s.protocols {
		r := frontdoor.Route{
			Name:  p.Name(),
			Match: p.Match,
			Serve: func(ctx context.Context, c *frontdoor.Conn) {
				p.Serve(ctx, &Conn{TCPConn: c.TCP, Conn: c.Conn, TLS: c.TLS, Head: c.Head, Seq: c.Seq, Server: s, admitted: c.Admitted})
			},
			Plain: true,
		}
		if tp, ok := p.(TLSProtocol); ok {
			r.InTLS, r.ALPN = true, tp.ALPN()
		}
		rs = append(rs, r)
	}
	return rs
}

// Served is how many connections the server's port has handed to each
// protocol since Serve began, by name (a protocol's Name, or "http").
func (s *Server) Served() map[string]uint64 {
	s.mu.Lock()
	d := s.door
	s.mu.Unlock()
	if d == nil {
		return map[string]uint64{}
	}
	return d.Served()
}

// admit asks the gate to admit a test of protocol, and registers it
// for its data connections, or says why not.
func (s *Server) admit(t *serverTest, protocol string) error {
	ticket, err := s.theGate().Admit(gate.Request{Key: string(t.cookie), Client: &net.TCPAddr{IP: t.clientIP},
		Class: t.class, Protocol: protocol, Streams: t.nconn, DataConns: !t.udp})
	if err != nil {
		return err
	}
	s.mu.Lock()
	t.ticket = ticket
	s.running[string(t.cookie)] = t
	for i, k := range t.keys {
		s.byKey[string(k)] = streamRef{t, i}
	}
	s.mu.Unlock()
	return nil
}

// admissionAttrs are the attributes of a test's admission log line: who
// asked for what, so that the log says who tests and how hard.
func admissionAttrs(version string, cfg model.TestConfig, cl *limits.Class) []any {
	dir := "client-sends"
	switch {
	case cfg.Bidir:
		dir = "both"
	case cfg.Reverse:
		dir = "server-sends"
	}
	attrs := []any{"client_version", version, "protocol", string(cfg.Protocol), "direction", dir, "streams", len(cfg.Directions())}
	if cfg.Duration > 0 {
		attrs = append(attrs, "duration", (cfg.Omit + cfg.Duration).String())
	} else {
		attrs = append(attrs, "bytes", cfg.Bytes.Decimal())
	}
	if cfg.Bitrate > 0 {
		attrs = append(attrs, "bitrate", cfg.Bitrate.String())
	}
	attrs = append(attrs, "class", cl.Name)
	if cl.MaxRate > 0 && !cfg.IsUDP() {
		attrs = append(attrs, "rate_cap", cl.MaxRate.String())
	}
	return attrs
}

// peerAttrs are a log line's attributes naming a test's UDP peers, if
// it had any.
func peerAttrs(peers []string) []any {
	if len(peers) == 0 {
		return nil
	}
	return []any{"udp_peers", peers}
}

// udpPeersOf is a copy of t's UDP peers.
func (s *Server) udpPeersOf(t *serverTest) []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(t.udpPeers)
}

func (s *Server) release(t *serverTest) {
	s.mu.Lock()
	delete(s.running, string(t.cookie))
	for _, k := range t.keys {
		delete(s.byKey, string(k))
	}
	s.freeUDPTurnLocked(t)
	s.mu.Unlock()
	t.ticket.Release()
	s.closeLate(t)
}

// seal stops a test from taking more data connections and closes any
// that queued up beyond its streams.
func (s *Server) seal(t *serverTest) {
	s.mu.Lock()
	t.full = true
	s.freeUDPTurnLocked(t)
	s.mu.Unlock()
	if t.ticket != nil {
		t.ticket.Arrived()
	}
	s.closeLate(t)
}

func (s *Server) closeLate(t *serverTest) {
	for {
		select {
		case d := <-t.data:
			d.close()
		default:
			return
		}
	}
}

// errStreamsLate: a test's data connections did not all arrive in time.
var errStreamsLate = errors.New("data connections did not arrive")

// awaitStreams collects a test's data connections as they arrive, then
// seals the test. Keyed ones name their stream index; iperf3's TCP ones
// do not, and are numbered in the order the server accepted them once all
// have arrived: iperf3 gives roles by that order (in --bidir the first P
// are the client's senders), while their cookies are read concurrently
// and reach the test in any order. The streams gathered so far are
// returned with an error (errStreamsLate, or ctx's), for the caller to
// close.
func (s *Server) awaitStreams(ctx context.Context, t *serverTest, dirs []model.Direction) ([]*engine.Stream, error) {
	streams := make([]*engine.Stream, len(dirs))
	var unnumbered []dataConn
	t.tokens = make([][]byte, len(dirs))
	add := func(d dataConn) {
		t.tokens[d.stream] = d.token
		streams[d.stream] = engine.NewStream(d.stream, model.RoleOf(model.ServerSide, dirs[d.stream]), d.conn, d.udp)
	}
	deadline := time.NewTimer(engine.HandshakeTimeout)
	defer deadline.Stop()
	for got := 0; got < len(dirs); {
		select {
		case d := <-t.data:
			switch {
			case d.stream < 0:
				unnumbered = append(unnumbered, d)
			case streams[d.stream] != nil:
				d.close()
				continue
			default:
				add(d)
			}
			got++
		case <-deadline.C:
			for _, d := range unnumbered {
				d.close()
			}
			return streams, errStreamsLate
		case <-ctx.Done():
			for _, d := range unnumbered {
				d.close()
			}
			return streams, ctx.Err()
		}
	}
	slices.SortFunc(unnumbered, func(a, b dataConn) int { return cmp.Compare(a.seq, b.seq) })
	for i, d := range unnumbered {
		d.stream = i
		add(d)
	}
	s.seal(t)
	return streams, nil
}

// CloseStreams closes the streams a test gathered (AwaitStreams).
func CloseStreams(streams []*engine.Stream) {
	for _, st := range streams {
		if st != nil {
			st.Close()
		}
	}
}

// endOptions are o with what the server sets on its end of test t: its
// namespace's buffer settings, its class's duration limit, and the rate
// its receivers read at most (readCap, a share of the class's cap).
func (s *Server) endOptions(o engine.EndOptions, t *serverTest, readCap model.Bitrate) engine.EndOptions {
	o.Settings = s.tcpSettings()
	o.HardStop = t.class.MaxDuration
	o.ReadCap = readCap
	if readCap > 0 {
		o.RateCap = t.class.MaxRate
	}
	return o
}

// pin pins the server's process to the CPU a client asked for, when the
// server allows it and no other test holds a pin; it returns the CPU
// pinned to (nil: none) and what undoes it.
func (s *Server) pin(cpu *int) (*int, func()) {
	nothing := func() {}
	if cpu == nil {
		return nil, nothing
	}
	log := s.logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if !s.AllowAffinity {
		log.Warn("a client asked to pin the server to a CPU (-A); ignored: the server allows it only with --allow-affinity", "cpu", *cpu)
		return nil, nothing
	}
	s.pinMu.Lock()
	defer s.pinMu.Unlock()
	if s.pinned {
		log.Warn("a client asked to pin the server to a CPU (-A); ignored: another test holds a pin", "cpu", *cpu)
		return nil, nothing
	}
	restore, err := engine.PinProcess(*cpu)
	if err != nil {
		log.Warn("a client asked to pin the server to a CPU (-A); not pinned", "cpu", *cpu, "err", err)
		return nil, nothing
	}
	s.pinned = true
	cpuCopy := *cpu
	return &cpuCopy, func() {
		s.pinMu.Lock()
		defer s.pinMu.Unlock()
		restore()
		s.pinned = false
	}
}

func summaryAttrs(r model.EndReport) []any {
	var sent, recv model.Bytes
	var sendDur, recvDur time.Duration
	for _, t := range r.Totals {
		if t.Role == model.Sender {
			sent += t.Bytes
			sendDur = max(sendDur, t.Duration)
		} else {
			recv += t.Bytes
			recvDur = max(recvDur, t.Duration)
		}
	}
	attrs := []any{"streams", len(r.Totals)}
	if sent > 0 {
		attrs = append(attrs, "sent", sent.Decimal(), "sent_rate", model.RateOf(sent, sendDur.Seconds()).String())
	}
	if recv > 0 {
		attrs = append(attrs, "received", recv.Decimal(), "goodput", model.RateOf(recv, recvDur.Seconds()).String())
	}
	return append(attrs, "seconds", fmt.Sprintf("%.2f", max(sendDur, recvDur).Seconds()))
}

// tcpSettings reads the TCP buffer settings of the listener's network
// namespace, which bound the windows and buffers of the server's end.
func (s *Server) tcpSettings() *model.TCPSettings {
	var st *model.TCPSettings
	_ = s.inNetns(func() error { st = tcpinfo.Settings(); return nil })
	return st
}

func (s *Server) inNetns(f func() error) error {
	if s.InNetns == nil {
		return f()
	}
	return s.InNetns(f)
}
