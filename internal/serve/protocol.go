package serve

import (
	"context"
	"crypto/tls"
	"net"
	"slices"
	"time"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/frontdoor"
	"github.com/tcpscope/tcpscope/internal/gate"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
)

// The server speaks the protocols added to it on one port: the front
// door (package frontdoor) tells which by each connection's first bytes.
// A Protocol claims connections by their first bytes (Handle); TLS and
// HTTP are the server's own. A protocol that runs throughput tests on
// the engine admits them through the server (Admit), so that one set of
// limits counts every test whatever its protocol.

// HeadLen is how many first bytes of a connection the server reads to
// tell its protocol.
const HeadLen = frontdoor.HeadLen

// Protocol is a protocol the server serves.
type Protocol interface {
	// Name names the protocol in the server's counts (Served) and logs.
	Name() string
	// Match reports whether head, a connection's first HeadLen bytes,
	// begins a connection of this protocol.
	Match(head []byte) bool
	// Serve takes the connection over, and closes it.
	Serve(ctx context.Context, c *Conn)
}

// TLSProtocol is a Protocol that speaks inside TLS too, when the server
// has TLS: the front door hands it a TLS connection whose client asked
// for ALPN by name, or whose first bytes inside TLS it matches.
type TLSProtocol interface {
	Protocol
	ALPN() string
}

// KeyedUDP is a Protocol whose UDP hellos name their test's stream by
// the key the server gave the client (TestSpec.StreamKeys): the server
// takes such a hello from any address, once per stream.
type KeyedUDP interface {
	Protocol
	// UDPHello reads a hello: its stream's key and index.
	UDPHello(b []byte) (key []byte, id int, ok bool)
	// OpenUDP makes stream id's flow on sock, a socket on the server's
	// port connected to the hello's sender, and answers the hello; token
	// is what the client must show on its control connection before the
	// test sends it anything more (Test.UDPTokens).
	OpenUDP(sock *net.UDPConn, id int) (flow *engine.UDPFlow, token []byte)
}

// Handle adds a protocol, tried in the order added. It is called before
// Serve.
func (s *Server) Handle(p Protocol) { s.protocols = append(s.protocols, p) }

// Conn is a connection handed to a Protocol.
type Conn struct {
	*net.TCPConn
	// Conn is where a TLSProtocol reads and writes: the TCP connection,
	// or the TLS connection inside it. Head was read from it already.
	Conn net.Conn
	// TLS is the TLS connection's state when the front door terminated
	// TLS (a TLSProtocol's connection); nil on a plain connection.
	TLS *tls.ConnectionState
	// Head is the connection's first bytes, already read from it. A read
	// deadline of HandshakeTimeout from the accept is set.
	Head []byte
	// Seq is the connection's place in the server's accept order.
	Seq uint64
	// Server is the server that accepted it.
	Server   *Server
	admitted func()
}

// Admitted ends the connection's pending time (see Limits.MaxPending):
// call it once the connection is part of a test.
func (c *Conn) Admitted() { c.admitted() }

// TestSpec is a test that asks to be admitted.
type TestSpec struct {
	// Key names the test: its data connections carry it (Join).
	Key []byte
	// StreamKeys, for a protocol whose data connections and UDP hellos
	// name their stream, are the streams' keys (JoinStream, KeyedUDP).
	StreamKeys [][]byte
	// Protocol names the test's protocol for the gate's subscribers
	// ("iperf3").
	Protocol string
	// Client is the address of the test's control connection.
	Client net.Addr
	// Config is the test, normalized and checked (CheckLimits).
	Config model.TestConfig
	// Class is the client's class in the server's policy (Class).
	Class *limits.Class
	// UDPHello, for a protocol whose UDP hellos name no test, tells its
	// hello datagram: the server gives such a hello to the one test of
	// the sender's address that holds the UDP turn (AwaitUDPTurn), and
	// answers it with UDPReply.
	UDPHello func([]byte) bool
	UDPReply []byte
}

// Test is a test a Protocol runs, admitted by the server.
type Test struct {
	s    *Server
	t    *serverTest
	dirs []model.Direction
}

// Class is the server's policy class for a client address.
func (s *Server) Class(a net.Addr) *limits.Class { return s.theGate().Class(a) }

// CheckLimits checks a normalized test against the client's class;
// foreign is the protocol of a client that is not tcpscope's
// (limits.Iperf3), which the class must admit too, or 0.
func CheckLimits(cfg *model.TestConfig, cl *limits.Class, foreign limits.Protocols) error {
	return checkLimits(cfg, cl, foreign)
}

// Refused notes a refusal of a client at addr in the server's refusal
// log: kind names it ("" takes it from err's Code).
func (s *Server) Refused(kind string, addr net.Addr, err error) { s.theGate().Refused(kind, addr, err) }

// Admit registers a test, or says why not (a busy or draining server).
// The caller runs it and then calls Release.
func (s *Server) Admit(spec TestSpec) (*Test, error) {
	dirs := spec.Config.Directions()
	t := &serverTest{cookie: spec.Key, nconn: len(dirs), data: make(chan dataConn, len(dirs)),
		udp: spec.Config.IsUDP(), wide: spec.Config.Counters64, admitted: time.Now(), class: spec.Class,
		udpHello: spec.UDPHello, udpReply: spec.UDPReply, keys: spec.StreamKeys, claimed: make([]bool, len(dirs))}
	if ta, ok := spec.Client.(*net.TCPAddr); ok {
		t.clientIP = ta.IP
	}
	if err := s.admit(t, spec.Protocol); err != nil {
		return nil, err
	}
	return &Test{s: s, t: t, dirs: dirs}, nil
}

// Join hands a data connection to the running test named key, if there
// is one: found says there is; taken, that it took c (it has no room
// left otherwise). Data connections name no stream: they are numbered
// in the server's accept order (Conn.Seq).
func (s *Server) Join(key []byte, c *Conn) (found, taken bool) {
	s.mu.Lock()
	t := s.running[string(key)]
	if t == nil {
		s.mu.Unlock()
		return false, false
	}
	if t.full || t.udp || t.arrived >= t.nconn {
		s.mu.Unlock()
		return true, false
	}
	t.arrived++
	s.mu.Unlock()
	_ = c.SetReadDeadline(time.Time{})
	t.data <- dataConn{conn: c.TCPConn, stream: -1, seq: c.Seq}
	c.Admitted()
	return true, true
}

// JoinStream hands c, a data connection naming its stream by key and
// index (TestSpec.StreamKeys), to its test: taken says it took c (no
// such stream running, or one already there, and it did not).
func (s *Server) JoinStream(key []byte, id int, c *Conn) (taken bool) {
	s.mu.Lock()
	ref, found := s.byKey[string(key)]
	if t := ref.t; found && ref.id == id && !t.full && !t.udp {
		select {
		case t.data <- dataConn{conn: c.TCPConn, stream: id}:
			taken = true
		default: // more connections than the test has streams
		}
	}
	s.mu.Unlock()
	if taken {
		_ = c.SetReadDeadline(time.Time{})
		c.Admitted()
	}
	return taken
}

// Release ends the test's registration.
func (t *Test) Release() { t.s.release(t.t) }

// Pin pins the server's process to cpu for the test (nil: no pin asked),
// by the policy a native client's -A n,m meets: only on a server that
// allows it (AllowAffinity) and while no other test holds a pin; else
// the request is ignored and the server's log warns. It returns the CPU
// pinned to (nil: none) and what undoes the pin, to call when the test
// ends.
func (t *Test) Pin(cpu *int) (pinned *int, unpin func()) { return t.s.pin(cpu) }

// Key is the test's key (TestSpec.Key).
func (t *Test) Key() []byte { return t.t.cookie }

// Admitted is when the test was admitted.
func (t *Test) Admitted() time.Time { return t.t.admitted }

// AwaitUDPTurn waits until the test is the only one from its client's
// address waiting for UDP streams whose hellos name no test (TestSpec's
// UDPHello): with two asking at once, a hello could belong to either.
func (t *Test) AwaitUDPTurn(ctx context.Context) error { return t.s.awaitUDPTurn(ctx, t.t) }

// AwaitStreams collects the test's data connections or UDP streams as
// they arrive. The ones gathered so far are returned with an error
// (ErrStreamsLate, or ctx's), for the caller to close.
func (t *Test) AwaitStreams(ctx context.Context) ([]*engine.Stream, error) {
	return t.s.awaitStreams(ctx, t.t, t.dirs)
}

// ErrStreamsLate: a test's data connections did not all arrive in time.
var ErrStreamsLate = errStreamsLate

// UDPPeers are the addresses the test's UDP streams send to.
func (t *Test) UDPPeers() []string { return t.s.udpPeersOf(t.t) }

// Class is the client's class in the server's policy.
func (t *Test) Class() *limits.Class { return t.t.class }

// UDPTokens are, by stream, the tokens a KeyedUDP protocol's streams
// were answered with (nil for a stream without), once AwaitStreams has
// returned.
func (t *Test) UDPTokens() [][]byte { return t.t.tokens }

// Capped is cfg as the server's end runs it under the client's class,
// and the rate its TCP receivers read at most (0: any): a TCP rate cap
// paces the senders (each stream's share) and holds the receivers.
func (t *Test) Capped(cfg model.TestConfig) (model.TestConfig, model.Bitrate) {
	return Capped(cfg, t.t.class)
}

// NewEnd is the server's end of the test on streams, for cfg (Capped's),
// its receivers held to readCap; each interval goes to the gate's
// subscribers, then to emit if set.
func (t *Test) NewEnd(cfg model.TestConfig, streams []*engine.Stream, readCap model.Bitrate, emit func(model.Interval), o engine.EndOptions) *engine.End {
	publish := t.t.ticket.Interval
	if emit != nil {
		publish = func(iv model.Interval) {
			t.t.ticket.Interval(iv)
			emit(iv)
		}
	}
	return engine.NewEnd(model.ServerSide, cfg, streams, publish, t.s.endOptions(o, t.t, readCap))
}

// ServerEnd is the server's end of the test on streams: cfg under the
// client's class (a TCP rate cap paces the senders and holds the
// receivers), the test's socket options applied to the streams (the
// first error is returned beside the end, which runs without it), and
// senders writing cfg's Length per call, as the client asked.
func (t *Test) ServerEnd(cfg model.TestConfig, streams []*engine.Stream, o engine.EndOptions) (*engine.End, error) {
	capped, readCap := t.Capped(cfg)
	var first error
	for _, sm := range streams {
		if err := sm.Apply(&capped); err != nil && first == nil {
			first = err
		}
	}
	return t.NewEnd(capped, streams, readCap, nil, o), first
}

// AdmissionAttrs are the attributes of a test's admission log line: who
// asked for what.
func AdmissionAttrs(version string, cfg model.TestConfig, cl *limits.Class) []any {
	return admissionAttrs(version, cfg, cl)
}

// SummaryAttrs are the attributes of a test's log line once done: what
// its end moved, and how fast.
func SummaryAttrs(rep model.EndReport) []any { return summaryAttrs(rep) }

// PeerAttrs are the attributes of a log line naming a test's UDP peers,
// if it had any.
func PeerAttrs(udpPeers []string) []any { return peerAttrs(udpPeers) }

// Ended tells the server's subscribers how the test went (before
// Release).
func (t *Test) Ended(rec gate.Record) { t.t.ticket.Ended(rec) }

// protocolFor is the added protocol that claims head, or nil.
func (s *Server) protocolFor(head []byte) Protocol {
	i := slices.IndexFunc(s.protocols, func(p Protocol) bool { return p.Match(head) })
	if i < 0 {
		return nil
	}
	return s.protocols[i]
}
