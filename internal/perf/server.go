package perf

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/frontdoor"
	"github.com/tcpscope/tcpscope/internal/gate"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
	"github.com/tcpscope/tcpscope/internal/token"
)

// Server serves tests on a listener. Unlike iperf3's server it runs many
// tests at once, up to Limits.MaxTests.
type Server struct {
	// Limits are the same for every client address; Policy, when set,
	// replaces them with classes of addresses.
	Limits Limits
	Policy *limits.Table
	// Tokens, when set, admits only tests with an access token it
	// verifies: a native client's in its hello. (A protocol whose clients
	// cannot carry one refuses them, or admits them by its own
	// authentication.)
	Tokens *token.Verifier
	// TLS, when set, serves native control connections over TLS, and
	// only over TLS: a plain one is refused, so that its cookie and
	// keys never cross in clear. (Data connections stay plain, and other
	// protocols speak their own.)
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
	// protocols are the ones served beside the native one (Handle).
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

// checkToken verifies a hello's access token when the server requires
// one, and returns its subject.
func (s *Server) checkToken(tok string) (string, error) {
	if s.Tokens == nil {
		return "", nil
	}
	c, err := s.Tokens.Verify(tok, time.Now())
	if err != nil {
		hint := "ask the server's operator for an access token, and pass it with --token"
		if tok != "" {
			hint = "ask the server's operator for a new access token"
		}
		return "", fault.Errorf(fault.Denied, hint, "%v", err)
	}
	return c.Subject, nil
}

// streamRef is a stream of a running test.
type streamRef struct {
	t  *serverTest
	id int
}

type dataConn struct {
	conn   *net.TCPConn
	udp    *udpFlow // a UDP stream's, instead of conn
	stream int      // the stream index, or -1: number it by seq
	// seq is the connection's place in the server's accept order: an
	// iperf3 data connection names no stream, and iperf3 assigns roles
	// in the order its server accepted the connections.
	seq uint64
}

func (d dataConn) close() {
	if d.udp != nil {
		d.udp.conn.Close()
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
	// claimed marks a native UDP test's stream ids whose hello came
	// (under Server.mu): one socket per stream, whatever else asks.
	claimed []bool
	// udpPeers are the addresses its UDP streams send to (under
	// Server.mu), for the log.
	udpPeers []string
	// class is the client's in the server's policy.
	class *limits.Class
	// keys are its streams' keys (native tests; see welcome.StreamKeys).
	keys [][]byte
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
		HeadTimeout: handshakeTimeout,
		// Running tests are stopped with ctx, and their clients told:
		// that takes up to a sender's finishing grace.
		Grace:  grace + finishGrace,
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
// tries them: the native control and data connections, then the
// protocols added (Handle), which are served on plain connections only.
func (s *Server) routes() []frontdoor.Route {
	rs := []frontdoor.Route{{
		Name:  "tcpscope",
		Match: func(h []byte) bool { return string(h) == controlMagic },
		Serve: s.serveControl,
		Plain: true, InTLS: true, ALPN: ALPN,
	}, {
		Name:  "tcpscope-data",
		Match: func(h []byte) bool { return string(h) == dataMagic },
		Serve: func(_ context.Context, c *frontdoor.Conn) { s.data(c.TCP, c.Admitted) },
		Plain: true,
	}}
	for _, p := range s.protocols {
		rs = append(rs, frontdoor.Route{
			Name:  p.Name(),
			Match: p.Match,
			Serve: func(ctx context.Context, c *frontdoor.Conn) {
				p.Serve(ctx, &Conn{TCPConn: c.TCP, Head: c.Head, Seq: c.Seq, Server: s, admitted: c.Admitted})
			},
			Plain: true,
		})
	}
	return rs
}

// serveControl serves a native control connection: inside TLS when the
// server has TLS, and then only there.
func (s *Server) serveControl(ctx context.Context, c *frontdoor.Conn) {
	if s.TLS != nil && c.TLS == nil {
		// The hello is read first: closing on it unread would reset
		// the connection before the client read why.
		cc := newCtrl(c.TCP, maxClientMessage)
		if _, err := cc.recv(handshakeTimeout); err == nil {
			cc.sendError(fault.TLS, "this server takes its control connections over TLS only", "test with --tls or --tls-pin")
		}
		c.Close()
		return
	}
	s.control(ctx, c.Conn, c.Admitted)
}

// Served is how many connections the server's port has handed to each
// protocol since Serve began, by name ("tcpscope", "tcpscope-data", an
// added protocol's Name, "http").
func (s *Server) Served() map[string]uint64 {
	s.mu.Lock()
	d := s.door
	s.mu.Unlock()
	if d == nil {
		return map[string]uint64{}
	}
	return d.Served()
}

// data hands a data connection to the test whose cookie it carries.
func (s *Server) data(c *net.TCPConn, admitted func()) {
	rest := make([]byte, dataPreambleLen-magicLen)
	if _, err := io.ReadFull(c, rest); err != nil {
		c.Close()
		return
	}
	key, id, err := parseDataPreamble(rest)
	if err != nil {
		c.Close()
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	s.mu.Lock()
	ref, found := s.byKey[string(key)]
	taken := false
	if t := ref.t; found && ref.id == id && !t.full && !t.udp {
		select {
		case t.data <- dataConn{conn: c, stream: id}:
			taken = true
		default: // more connections than the test has streams
		}
	}
	s.mu.Unlock()
	if !taken {
		c.Close()
		return
	}
	admitted()
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

// control runs one test from hello to bye.
func (s *Server) control(ctx context.Context, conn net.Conn, admitted func()) {
	defer conn.Close()
	log := s.logger.With("client", conn.RemoteAddr().String())
	c := newCtrl(conn, maxClientMessage)
	m, err := c.recv(handshakeTimeout)
	if err != nil || m.Type != msgHello {
		log.Debug("handshake", "err", err)
		return
	}
	if m.Hello.Protocol != ProtocolVersion {
		c.sendError(fault.Version, fmt.Sprintf("server speaks protocol %d, client %d", ProtocolVersion, m.Hello.Protocol),
			fmt.Sprintf("use the same tcpscope release on both ends (server has %s)", s.Version))
		return
	}
	subject, err := s.checkToken(m.Hello.Token)
	if err != nil {
		s.theGate().Refused("token", conn.RemoteAddr(), err)
		c.sendError(fault.CodeOf(err), err.Error(), fault.HintOf(err))
		return
	}
	cfg := m.Hello.Config
	if err := Normalize(&cfg); err != nil {
		c.sendError(fault.CodeOf(err), err.Error(), fault.HintOf(err))
		return
	}
	cl := s.theGate().Class(conn.RemoteAddr())
	if err := checkLimits(&cfg, cl, 0); err != nil {
		s.theGate().Refused("", conn.RemoteAddr(), err)
		c.sendError(fault.CodeOf(err), err.Error(), fault.HintOf(err))
		return
	}
	dirs := cfg.Directions()
	t := &serverTest{cookie: newCookie(), nconn: len(dirs), data: make(chan dataConn, len(dirs)), udp: cfg.IsUDP(), admitted: time.Now(),
		claimed: make([]bool, len(dirs)), clientIP: conn.RemoteAddr().(*net.TCPAddr).IP, class: cl, keys: newKeys(len(dirs))}
	if err := s.admit(t, "tcpscope"); err != nil {
		s.theGate().Refused("", conn.RemoteAddr(), err)
		c.sendError(fault.CodeOf(err), err.Error(), fault.HintOf(err))
		return
	}
	defer s.release(t)
	admitted()
	if subject != "" {
		log = log.With("token_subject", subject)
	}
	log.Info("test admitted", admissionAttrs(m.Hello.Version, cfg, cl)...)

	rec := gate.Record{Start: t.admitted, Client: conn.RemoteAddr().String(), Server: conn.LocalAddr().String(),
		Tool: "tcpscope", ClientVersion: m.Hello.Version, Config: cfg, TokenSubject: subject}
	log = log.With("client_version", m.Hello.Version)
	rec.Report, rec.Ended, rec.Err = s.runTest(ctx, c, t, cfg, dirs)
	rec.UDPPeers = s.udpPeersOf(t)
	if rec.Err != nil {
		log.Warn("test failed", append([]any{"err", rec.Err}, peerAttrs(rec.UDPPeers)...)...)
	} else {
		log.Info("test done", append(append([]any{"ended", rec.Ended}, peerAttrs(rec.UDPPeers)...), summaryAttrs(rec.Report)...)...)
	}
	t.ticket.Ended(rec)
}

// errStreamsLate: a test's data connections did not all arrive in time.
var errStreamsLate = errors.New("data connections did not arrive")

// awaitStreams collects a test's data connections as they arrive, then
// seals the test. Native ones name their stream index; iperf3's TCP ones
// do not, and are numbered in the order the server accepted them once all
// have arrived: iperf3 gives roles by that order (in --bidir the first P
// are the client's senders), while their cookies are read concurrently
// and reach the test in any order. The streams gathered so far are
// returned with an error (errStreamsLate, or ctx's), for the caller to
// close.
func (s *Server) awaitStreams(ctx context.Context, t *serverTest, dirs []model.Direction) ([]*Stream, error) {
	streams := make([]*Stream, len(dirs))
	var unnumbered []dataConn
	add := func(d dataConn) {
		streams[d.stream] = &Stream{id: d.stream, role: model.RoleOf(model.ServerSide, dirs[d.stream]), conn: d.conn, udp: d.udp}
	}
	deadline := time.NewTimer(handshakeTimeout)
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

// closeStreams closes the streams a test gathered.
func closeStreams(streams []*Stream) {
	for _, st := range streams {
		if st != nil {
			st.close()
		}
	}
}

// runTest runs an admitted test on its control connection: its streams
// opened and started, the test measured with its intervals sent as they
// come, and the totals exchanged for the client's bye. It returns this
// end's report and how the test ended.
func (s *Server) runTest(ctx context.Context, c *ctrl, t *serverTest, cfg model.TestConfig, dirs []model.Direction) (model.EndReport, string, error) {
	pinned, unpin := s.pin(cfg.ServerCPU)
	defer unpin()
	streams, ecfg, readCap, err := s.startStreams(ctx, c, t, cfg, dirs, pinned)
	defer closeStreams(streams)
	if err != nil {
		return model.EndReport{}, "", err
	}

	tctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var tick <-chan time.Time
	if cfg.Interval < batchEvery {
		ticker := time.NewTicker(batchEvery)
		defer ticker.Stop()
		tick = ticker.C
	}
	// A client that falls a queue behind is not reading, and the test is
	// aborted rather than left to pile up.
	out := startIntervalSender(c.send, tick, cancel)
	e := newEnd(model.ServerSide, ecfg, streams, func(iv model.Interval) {
		t.ticket.Interval(iv)
		if !out.add(iv) {
			cancel()
		}
	})
	e.settings = s.tcpSettings()
	e.hardStop = t.class.MaxDuration
	e.readCap = readCap
	if readCap > 0 {
		e.rateCap = t.class.MaxRate
	}
	var ended endedAs
	bye := watchClient(c, e, &ended, cancel)
	stopBy := func(reason string) {
		ended.set(reason)
		_ = c.send(&message{Type: msgStop, Stop: &stop{Reason: reason}})
		e.stop()
	}
	stopOnShutdown := context.AfterFunc(ctx, func() { stopBy("server-shutdown") })
	defer stopOnShutdown()
	// A byte-count test has no duration to check on admission; the limit
	// ends it cleanly, both ends' senders told. (A timed test was checked
	// on admission and ends by itself.)
	if span(&cfg) == 0 {
		limit := time.AfterFunc(t.class.MaxDuration, func() { stopBy("server-limit") })
		defer limit.Stop()
	}

	runErr := e.run(tctx)
	sendErr := out.close()
	rep := e.report(s.Version)
	how := ended.get()
	if runErr != nil {
		return rep, how, runErr
	}
	if sendErr != nil {
		return rep, how, sendErr
	}
	return rep, how, sendDone(c, rep, bye)
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
	restore, err := PinProcess(*cpu)
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

// startStreams welcomes an admitted test, waits for its data connections
// and the client's start, sets the streams' options and tells the client
// they are set. It returns the streams (to close, even on an error),
// this end's configuration and the rate its receivers may read at.
func (s *Server) startStreams(ctx context.Context, c *ctrl, t *serverTest, cfg model.TestConfig, dirs []model.Direction, pinned *int) ([]*Stream, model.TestConfig, model.Bitrate, error) {
	var rateCap model.Bitrate
	if !t.udp {
		rateCap = t.class.MaxRate
	}
	if err := c.send(&message{Type: msgWelcome, Welcome: &welcome{
		Protocol: ProtocolVersion, Version: s.Version, Kernel: tcpinfo.KernelRelease(), Cookie: t.cookie, StreamKeys: t.keys, RateCap: rateCap,
		ServerCPU: pinned,
	}}); err != nil {
		return nil, cfg, 0, err
	}
	streams, err := s.awaitStreams(ctx, t, dirs)
	switch {
	case errors.Is(err, errStreamsLate):
		c.sendError(fault.Timeout, "data connections did not arrive in time", "a firewall may block new connections to the server's port")
		return streams, cfg, 0, err
	case err != nil:
		c.sendError(fault.Shutdown, "server shutting down", "run again later")
		return streams, cfg, 0, err
	}
	m, err := c.recv(handshakeTimeout)
	if err != nil || m.Type != msgStart {
		return streams, cfg, 0, fmt.Errorf("wait for start: %v", err)
	}
	if err := verifyUDP(streams, m.Start); err != nil {
		c.sendError(fault.CodeOf(err), err.Error(), fault.HintOf(err))
		return streams, cfg, 0, err
	}
	ecfg, readCap := serverEnd(cfg, t.class)
	st, err := setStreams(c, streams, &ecfg)
	if err != nil {
		return streams, cfg, 0, err
	}
	return streams, ecfg, readCap, c.send(&message{Type: msgStarted, Started: st})
}

// setStreams applies this end's socket options to its streams, telling
// the client when the kernel refuses one, and says what the kernel
// granted and where each stream is bound.
func setStreams(c *ctrl, streams []*Stream, ecfg *model.TestConfig) (*started, error) {
	st := &started{Setups: make([]model.SocketSetup, len(streams)), Addrs: make([]string, len(streams))}
	for i, sm := range streams {
		if err := applyOptions(sm, ecfg); err != nil {
			c.sendError(fault.Socket, fmt.Sprintf("server: %v", err), "check -C/-M/--fq-rate against the server's kernel")
			return nil, err
		}
		var err error
		if st.Setups[i], err = setupOf(sm, ecfg.TOS != 0); err != nil {
			return nil, err
		}
		st.Addrs[i] = sm.netConn().LocalAddr().String()
	}
	return st, nil
}

// endedAs is how a test ended: complete, unless something ended it
// first (the first reason given stands).
type endedAs struct {
	mu  sync.Mutex
	how string
}

func (e *endedAs) set(how string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.how == "" {
		e.how = how
	}
}

func (e *endedAs) get() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.how == "" {
		return "complete"
	}
	return e.how
}

// watchClient reads the client's control messages while its test runs:
// it may ask to stop, say bye, or vanish. The bye, or the loss of the
// connection (which aborts the test), comes on the returned channel.
func watchClient(c *ctrl, e *End, ended *endedAs, cancel func()) <-chan error {
	bye := make(chan error, 1)
	go func() {
		for {
			m, err := c.recv(0)
			if err != nil {
				ended.set("aborted")
				bye <- err
				cancel()
				return
			}
			switch m.Type {
			case msgStop:
				ended.set("interrupted")
				e.stop()
			case msgBye:
				bye <- nil
				return
			}
		}
	}()
	return bye
}

// sendDone sends the client this end's totals (its intervals went out
// live) and waits for the client's bye.
func sendDone(c *ctrl, rep model.EndReport, bye <-chan error) error {
	done := rep
	done.Intervals = nil
	if err := c.send(&message{Type: msgDone, Done: &done}); err != nil {
		return err
	}
	select {
	case err := <-bye:
		if err != nil {
			return fmt.Errorf("wait for bye: %w", err)
		}
	case <-time.After(handshakeTimeout):
		return errors.New("client did not acknowledge the results")
	}
	return nil
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

// applyOptions sets the test's socket options on a server's stream.
func applyOptions(st *Stream, cfg *model.TestConfig) error {
	if st.udp != nil {
		return tcpinfo.Apply(st.udp.conn, socketOptions(cfg, st.role))
	}
	if err := tcpinfo.Apply(st.conn, socketOptions(cfg, st.role)); err != nil {
		return err
	}
	_ = st.conn.SetNoDelay(cfg.NoDelay)
	return nil
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
