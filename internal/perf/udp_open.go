package perf

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"syscall"
	"time"

	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// A UDP stream opens as iperf3's do: the client sends a hello datagram to
// the server's port (the TCP port's number, over UDP), and the server
// answers from a new socket bound to the same port and connected to the
// client, which from then on carries the stream. A native hello names the
// test's cookie and the stream id, and its answer carries a token the
// client echoes on the control connection in its start message: the
// server sends a stream nothing but answers until the client has shown
// that it receives at the hello's address. Another protocol's hellos
// (iperf3's: four bytes each way) may name no test and carry nothing to
// echo: the server takes them only from the address of the test's
// control connection (see udpByAddr).

// udpRetry is how often a client repeats an unanswered hello: datagrams
// may be lost, even the first ones.
const udpRetry = 250 * time.Millisecond

// udpNetwork is the UDP network matching a TCP one ("tcp4" → "udp4").
func udpNetwork(tcpNetwork string) string {
	if tcpNetwork == "" {
		return "udp"
	}
	return strings.Replace(tcpNetwork, "tcp", "udp", 1)
}

// dialUDP opens one UDP stream to addr: it sends hello until the server
// answers with a datagram accept takes, or the handshake times out.
func (c *Client) dialUDP(ctx context.Context, addr string, cfg *model.TestConfig, role model.Role, hello []byte, accept func([]byte) bool) (*net.UDPConn, error) {
	d := c.dialer(nil, "")
	if c.Bind.IsValid() {
		d.LocalAddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(c.Bind, 0))
	}
	d.Control = tcpinfo.DialControl(socketOptions(cfg, role))
	nc, err := d.DialContext(ctx, udpNetwork(c.Network), addr)
	if err != nil {
		return nil, classifyDial(err, addr)
	}
	uc := nc.(*net.UDPConn)
	deadline := time.Now().Add(handshakeTimeout)
	buf := make([]byte, 2048)
	refused := false
	for time.Now().Before(deadline) {
		if ctx.Err() != nil {
			uc.Close()
			return nil, &fault.Error{Code: fault.Aborted, Msg: "interrupted while opening UDP streams", Err: ctx.Err()}
		}
		if _, err := uc.Write(hello); err != nil && !isTransientSendError(err) {
			uc.Close()
			return nil, &fault.Error{Code: fault.Aborted, Msg: "send UDP hello", Err: err}
		}
		_ = uc.SetReadDeadline(time.Now().Add(udpRetry))
		// A reverse stream's server may already send: skip a few data
		// datagrams before the answer, as iperf3's client does.
		for range 4 {
			n, err := uc.Read(buf)
			if err != nil {
				refused = refused || errors.Is(err, syscall.ECONNREFUSED)
				break
			}
			if accept(buf[:n]) {
				_ = uc.SetReadDeadline(time.Time{})
				return uc, nil
			}
		}
	}
	uc.Close()
	if refused {
		return nil, fault.Errorf(fault.Refused, "is the server's UDP port open? (a firewall may allow TCP only)", "%s refused UDP datagrams", addr)
	}
	return nil, fault.Errorf(fault.Timeout, "a firewall may drop UDP to the server's port", "no answer to UDP hello from %s", addr)
}

// listenUDP opens the server's UDP port beside its TCP listener: the same
// address and port number, with SO_REUSEADDR so each stream's connected
// socket can bind it too.
func listenUDP(ctx context.Context, tcpAddr net.Addr) (*net.UDPConn, error) {
	ta, ok := tcpAddr.(*net.TCPAddr)
	if !ok {
		return nil, fmt.Errorf("listen udp: %v is not a TCP address", tcpAddr)
	}
	lc := net.ListenConfig{Control: reuseAddr}
	pc, err := lc.ListenPacket(ctx, "udp", (&net.UDPAddr{IP: ta.IP, Port: ta.Port, Zone: ta.Zone}).String())
	if err != nil {
		return nil, fmt.Errorf("listen udp: %w", err)
	}
	return pc.(*net.UDPConn), nil
}

func reuseAddr(network, address string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
	}); err != nil {
		return err
	}
	return serr
}

// serveUDP answers UDP hellos on the server's port until it is closed,
// handing each new stream's connected socket to its test.
func (s *Server) serveUDP(ctx context.Context, pc *net.UDPConn) {
	buf := make([]byte, 2048)
	for {
		n, peer, err := pc.ReadFromUDP(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) || ctx.Err() != nil {
				return
			}
			var ne net.Error
			if !errors.As(err, &ne) && !isTransientSendError(err) {
				s.logger.Warn("udp read", "err", err)
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		msg := append([]byte(nil), buf[:n]...)
		if key, id, ok := parseUDPHello(msg); ok {
			s.udpNative(ctx, pc, peer, key, id)
		} else {
			s.udpByAddr(ctx, pc, peer, msg)
		}
	}
}

// udpNative opens the stream a native hello asks for: the first hello of
// each stream id claims it, from whatever address; the server answers it
// with a token and sends nothing else there until the client has echoed
// the token (runTest). Later hellos for the id from other addresses are
// not answered.
func (s *Server) udpNative(ctx context.Context, pc *net.UDPConn, peer *net.UDPAddr, key []byte, id int) {
	s.mu.Lock()
	ref, found := s.byKey[string(key)]
	t := ref.t
	ok := found && ref.id == id && t.udp && t.udpHello == nil && !t.full && !t.claimed[id]
	if ok {
		t.claimed[id] = true
	}
	s.mu.Unlock()
	if !ok {
		return
	}
	uc, err := s.connectUDP(ctx, pc, peer)
	if err != nil {
		s.logger.Warn("udp stream", "err", err)
		return
	}
	f := newUDPFlow(uc, true, true)
	f.token = newToken()
	f.answer = udpAnswer(id, f.token)
	f.answerAgain()
	f.answerHellos()
	s.deliverUDP(t, dataConn{udp: f, stream: id})
}

// newToken is a UDP stream's token: random, so that only a client that
// received the answer knows it.
func newToken() []byte {
	b := make([]byte, udpTokenLen)
	_, _ = rand.Read(b) // crypto/rand.Read never fails on Linux
	return b
}

// verifyUDP checks that the client echoed each UDP stream's token (the
// start message's UDPTokens, by stream id) and ends the streams' answering:
// until it returns nil, no stream has been sent anything but answers.
func verifyUDP(streams []*Stream, st *start) error {
	for i, sm := range streams {
		if sm.udp == nil {
			continue
		}
		sm.udp.stopAnswering()
		if st == nil || i >= len(st.UDPTokens) || subtle.ConstantTimeCompare(st.UDPTokens[i], sm.udp.token) != 1 {
			return fault.Errorf(fault.Unverified, "the client must receive at the address it sends from (a NAT that changes the source port between datagrams breaks this)",
				"UDP stream %d: the client did not echo the token sent to %v", i, sm.udp.conn.RemoteAddr())
		}
	}
	return nil
}

// udpTokens are the tokens of a client's UDP streams, for its start
// message.
func udpTokens(streams []*Stream) [][]byte {
	var tokens [][]byte
	for _, s := range streams {
		if s.udp != nil {
			tokens = append(tokens, s.udp.token)
		}
	}
	return tokens
}

// udpByAddr opens a UDP stream whose hello names no test (another
// protocol's, such as iperf3's): the server lets one such test per
// client address at a time ask for its streams (see awaitUDPTurn), the
// hello belongs to that test if it is its protocol's, and streams are
// numbered in arrival order.
func (s *Server) udpByAddr(ctx context.Context, pc *net.UDPConn, peer *net.UDPAddr, hello []byte) {
	s.mu.Lock()
	t := s.udpTurn[udpTurnKey(peer.IP)]
	if t != nil && (t.full || t.arrived >= t.nconn || !t.udpHello(hello)) {
		t = nil
	}
	var id int
	if t != nil {
		id = t.arrived
		t.arrived++
	}
	s.mu.Unlock()
	if t == nil {
		return
	}
	uc, err := s.connectUDP(ctx, pc, peer)
	if err != nil {
		s.logger.Warn("udp stream", "err", err)
		return
	}
	if _, err := uc.Write(t.udpReply); err != nil {
		uc.Close()
		return
	}
	s.deliverUDP(t, dataConn{udp: newUDPFlow(uc, t.wide, false), stream: id})
}

// connectUDP opens a socket on the listener's address connected to peer.
func (s *Server) connectUDP(ctx context.Context, pc *net.UDPConn, peer *net.UDPAddr) (*net.UDPConn, error) {
	d := net.Dialer{LocalAddr: pc.LocalAddr(), Control: reuseAddr}
	var c net.Conn
	err := s.inNetns(func() (err error) { c, err = d.DialContext(ctx, "udp", peer.String()); return err })
	if err != nil {
		return nil, fmt.Errorf("connect udp stream to %v: %w", peer, err)
	}
	return c.(*net.UDPConn), nil
}

// deliverUDP hands a stream to its test, or closes it if the test is
// full or gone.
func (s *Server) deliverUDP(t *serverTest, d dataConn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running[string(t.cookie)] != t || t.full {
		d.udp.conn.Close()
		return
	}
	select {
	case t.data <- d:
		t.udpPeers = append(t.udpPeers, d.udp.conn.RemoteAddr().String())
	default:
		d.udp.conn.Close()
	}
}

// openUDPStreams opens a native test's UDP streams, one after another.
func (c *Client) openUDPStreams(ctx context.Context, addr string, cfg *model.TestConfig, keys [][]byte, run *model.Run) ([]*Stream, error) {
	var streams []*Stream
	for i, d := range cfg.Directions() {
		role := model.RoleOf(model.ClientSide, d)
		var token []byte
		uc, err := c.dialUDP(ctx, addr, cfg, role, udpHello(keys[i], i), func(b []byte) (ok bool) {
			token, ok = parseUDPAnswer(b, i)
			return ok
		})
		if err != nil {
			return streams, err
		}
		f := newUDPFlow(uc, true, true)
		f.token = token
		streams = append(streams, &Stream{id: i, role: role, udp: f})
		run.Streams = append(run.Streams, model.StreamInfo{ID: i, Direction: d, ClientAddr: uc.LocalAddr().String()})
	}
	return streams, nil
}

// udpTurnWait bounds how long a UDP test whose hellos name no test waits for an earlier one
// from the same address to get its streams: that one gets them, or gives
// up after handshakeTimeout.
const udpTurnWait = handshakeTimeout + 2*time.Second

// errUDPTurn: an earlier test from the same address whose UDP hellos
// name no test held the turn for longer than udpTurnWait.
var errUDPTurn = errors.New("another UDP test from the same address was still opening its streams")

func udpTurnKey(ip net.IP) string { return string(ip.To16()) }

// awaitUDPTurn waits until t, a UDP test whose hellos name no test (an
// iperf3 client's), is the only one from its client's address waiting for
// UDP streams. Its hellos (iperf3's: four bytes from an ephemeral port)
// name no test: with two tests from one address asking
// at once, a hello could belong to either, and a wrong guess swaps their
// results. So a second test is told to open its streams (CREATE_STREAMS)
// only once the first has all of its own.
func (s *Server) awaitUDPTurn(ctx context.Context, t *serverTest) error {
	key := udpTurnKey(t.clientIP)
	deadline := time.NewTimer(udpTurnWait)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		if s.udpTurn[key] == nil {
			s.udpTurn[key] = t
			s.mu.Unlock()
			return nil
		}
		freed := s.turnFreed
		s.mu.Unlock()
		select {
		case <-freed:
		case <-deadline.C:
			return errUDPTurn
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// freeUDPTurnLocked ends t's turn, if it has it, and wakes the tests
// waiting for one. Called with s.mu held.
func (s *Server) freeUDPTurnLocked(t *serverTest) {
	if !t.udp || t.udpHello == nil {
		return
	}
	key := udpTurnKey(t.clientIP)
	if s.udpTurn[key] != t {
		return
	}
	delete(s.udpTurn, key)
	close(s.turnFreed)
	s.turnFreed = make(chan struct{})
}
