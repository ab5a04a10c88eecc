package perf

import (
	"context"
	"net"
	"slices"
	"time"

	"github.com/tcpscope/tcpscope/internal/frontdoor"
	"github.com/tcpscope/tcpscope/internal/gate"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
)

// The server speaks its native protocol, and others beside it on the
// same port: the front door (package frontdoor) tells which by each
// connection's first bytes. A Protocol claims connections by their first
// bytes (Handle); the native protocol, TLS and HTTP are the server's own,
// tried first. A protocol that runs throughput
// tests on the engine admits them through the server (Admit), so that
// one set of limits counts every test whatever its protocol.

// HeadLen is how many first bytes of a connection the server reads to
// tell its protocol: the native magic's length.
const HeadLen = frontdoor.HeadLen

// Protocol is a protocol the server serves beside its own.
type Protocol interface {
	// Name names the protocol in the server's counts (Served) and logs.
	Name() string
	// Match reports whether head, a connection's first HeadLen bytes,
	// begins a connection of this protocol.
	Match(head []byte) bool
	// Serve takes the connection over, and closes it.
	Serve(ctx context.Context, c *Conn)
}

// Handle adds a protocol, tried in the order added after the server's
// own. It is called before Serve.
func (s *Server) Handle(p Protocol) { s.protocols = append(s.protocols, p) }

// Conn is a connection handed to a Protocol.
type Conn struct {
	*net.TCPConn
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

// TestSpec is a test of another protocol that asks to be admitted.
type TestSpec struct {
	// Key names the test: its data connections carry it (Join).
	Key []byte
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
		udpHello: spec.UDPHello, udpReply: spec.UDPReply}
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

// Release ends the test's registration.
func (t *Test) Release() { t.s.release(t.t) }

// Pin pins the server's process to cpu for the test (nil: no pin asked),
// by the policy a native client's -A n,m meets: only on a server that
// allows it (AllowAffinity) and while no other test holds a pin; else
// the request is ignored and the server's log warns. It returns the CPU
// pinned to (nil: none) and what undoes the pin, to call when the test
// ends.
func (t *Test) Pin(cpu *int) (pinned *int, unpin func()) { return t.s.pin(cpu) }

// Admitted is when the test was admitted.
func (t *Test) Admitted() time.Time { return t.t.admitted }

// AwaitUDPTurn waits until the test is the only one from its client's
// address waiting for UDP streams whose hellos name no test (TestSpec's
// UDPHello): with two asking at once, a hello could belong to either.
func (t *Test) AwaitUDPTurn(ctx context.Context) error { return t.s.awaitUDPTurn(ctx, t.t) }

// AwaitStreams collects the test's data connections or UDP streams as
// they arrive. The ones gathered so far are returned with an error
// (ErrStreamsLate, or ctx's), for the caller to close.
func (t *Test) AwaitStreams(ctx context.Context) ([]*Stream, error) {
	return t.s.awaitStreams(ctx, t.t, t.dirs)
}

// ErrStreamsLate: a test's data connections did not all arrive in time.
var ErrStreamsLate = errStreamsLate

// UDPPeers are the addresses the test's UDP streams send to.
func (t *Test) UDPPeers() []string { return t.s.udpPeersOf(t.t) }

// ServerEnd is the server's end of the test on streams: cfg under the
// client's class (a TCP rate cap paces the senders and holds the
// receivers), the test's socket options applied to the streams (the
// first error is returned beside the end, which runs without it), and
// senders writing cfg's Length per call, as the client asked.
func (t *Test) ServerEnd(cfg model.TestConfig, streams []*Stream, o EndOptions) (*End, error) {
	capped, readCap := serverEnd(cfg, t.t.class)
	var first error
	for _, sm := range streams {
		if err := applyOptions(sm, &capped); err != nil && first == nil {
			first = err
		}
	}
	e := newEnd(model.ServerSide, capped, streams, t.t.ticket.Interval)
	e.setOptions(o)
	e.settings = t.s.tcpSettings()
	e.hardStop = t.t.class.MaxDuration
	e.readCap = readCap
	if readCap > 0 {
		e.rateCap = t.t.class.MaxRate
	}
	return e, first
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
