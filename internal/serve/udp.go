package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
	"time"

	"github.com/tcpscope/tcpscope/internal/engine"
)

// A protocol's UDP stream opens with a hello datagram to the server's
// port: one that names its stream by key (KeyedUDP, the native
// protocol's) is taken from any address, once per stream, and answered
// by its protocol with a token the client must echo before the stream
// is sent anything more; one that names no test and carries nothing to
// echo (iperf3's: four bytes each way) is taken only from the address of
// the test's control connection, one such test per address at a time
// (udpByAddr, awaitUDPTurn).

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
			if !errors.As(err, &ne) && !engine.TransientUDPError(err) {
				s.logger.Warn("udp read", "err", err)
				time.Sleep(50 * time.Millisecond)
			}
			continue
		}
		msg := append([]byte(nil), buf[:n]...)
		if !s.udpKeyed(ctx, pc, peer, msg) {
			s.udpByAddr(ctx, pc, peer, msg)
		}
	}
}

// udpKeyed opens the stream a KeyedUDP protocol's hello asks for, and
// says whether hello was one: the first hello of each stream claims it,
// from whatever address; the protocol answers it with a token, and the
// test sends nothing else there until the client has echoed the token.
// Later hellos for the stream from other addresses are not answered.
func (s *Server) udpKeyed(ctx context.Context, pc *net.UDPConn, peer *net.UDPAddr, hello []byte) bool {
	for _, p := range s.protocols {
		kp, ok := p.(KeyedUDP)
		if !ok {
			continue
		}
		key, id, ok := kp.UDPHello(hello)
		if !ok {
			continue
		}
		s.mu.Lock()
		ref, found := s.byKey[string(key)]
		t := ref.t
		ok = found && ref.id == id && t.udp && t.udpHello == nil && !t.full && !t.claimed[id]
		if ok {
			t.claimed[id] = true
		}
		s.mu.Unlock()
		if !ok {
			return true
		}
		uc, err := s.connectUDP(ctx, pc, peer)
		if err != nil {
			s.logger.Warn("udp stream", "err", err)
			return true
		}
		f, token := kp.OpenUDP(uc, id)
		s.deliverUDP(t, dataConn{udp: f, stream: id, token: token})
		return true
	}
	return false
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
	s.deliverUDP(t, dataConn{udp: engine.NewUDPFlow(uc, t.wide, false), stream: id})
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
		d.udp.Conn().Close()
		return
	}
	select {
	case t.data <- d:
		t.udpPeers = append(t.udpPeers, d.udp.Conn().RemoteAddr().String())
	default:
		d.udp.Conn().Close()
	}
}

// udpTurnWait bounds how long a UDP test whose hellos name no test waits for an earlier one
// from the same address to get its streams: that one gets them, or gives
// up after engine.HandshakeTimeout.
const udpTurnWait = engine.HandshakeTimeout + 2*time.Second

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
