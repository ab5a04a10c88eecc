package dial

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// Dialer opens a client's connections to a test server: the control
// connection, and the data connections and UDP streams of a test, with
// the test's socket options set before connect.
type Dialer struct {
	// Network is "tcp", "tcp4" or "tcp6" ("": tcp); UDP streams use the
	// matching UDP network.
	Network string
	// Bind is the local address of the client's sockets (--bind); the
	// zero value lets the kernel choose.
	Bind netip.Addr
	// ConnectTimeout bounds reaching the server: connecting, and the
	// control handshake up to the server's first answer together (a
	// listener that never answers fails after it); and each data
	// stream's connect. Zero: 10 s to connect and 10 s for each answer.
	ConnectTimeout time.Duration
}

func (c Dialer) network() string {
	if c.Network == "" {
		return "tcp"
	}
	return c.Network
}

// dialer builds a dialer applying a stream's socket options before
// connect, where they must be set: the MSS clamp and the receive buffer
// shape the SYN. With cfg nil (the control connection) it applies none.
func (c Dialer) dialer(cfg *model.TestConfig, role model.Role) *net.Dialer {
	timeout := c.ConnectTimeout
	if timeout == 0 {
		timeout = 10 * time.Second
	}
	d := &net.Dialer{Timeout: timeout, KeepAlive: -1}
	if c.Bind.IsValid() {
		d.LocalAddr = net.TCPAddrFromAddrPort(netip.AddrPortFrom(c.Bind, 0))
	}
	if cfg != nil {
		d.Control = tcpinfo.DialControl(engine.SocketOptions(cfg, role))
	}
	return d
}

// AnswerWait is how long a client that began connecting at began still
// waits for the server's next answer in the handshake: what is left of
// ConnectTimeout, or the handshake's 10 s without one. (The iperf3
// client waits for its server's first state by it too.)
func (c Dialer) AnswerWait(began time.Time) time.Duration {
	if c.ConnectTimeout <= 0 {
		return engine.HandshakeTimeout
	}
	// At least a moment, so that a deadline already past reads as a
	// timeout rather than as no deadline.
	return max(c.ConnectTimeout-time.Since(began), time.Millisecond)
}

// dial connects d to addr. A name under .invalid fails as not found
// without a lookup: RFC 6761 reserves it never to resolve, and a
// resolver may still ask the network (tests use such names).
func (c Dialer) dial(ctx context.Context, d *net.Dialer, addr string) (net.Conn, error) {
	if host, _, err := net.SplitHostPort(addr); err == nil {
		if h := strings.ToLower(strings.TrimSuffix(host, ".")); h == "invalid" || strings.HasSuffix(h, ".invalid") {
			return nil, &net.OpError{Op: "dial", Net: c.network(),
				Err: &net.DNSError{Err: "no such host (.invalid never resolves, RFC 6761)", Name: host, IsNotFound: true}}
		}
	}
	return d.DialContext(ctx, c.network(), addr)
}

// Classify turns an error from connecting to addr into a coded Error
// with a hint, as the clients report their own: for callers that open
// connections to a server themselves (the path probe).
func Classify(err error, addr string) error {
	var dnsErr *net.DNSError
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return &fault.Error{Code: fault.Aborted, Msg: "interrupted while connecting to " + addr, Err: err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &fault.Error{Code: fault.Refused, Msg: "connection refused by " + addr,
			Hint: "is `tcpscope server` running there, on that port?"}
	case errors.Is(err, syscall.ECONNRESET):
		// A listener closed with our connection still in its queue: the
		// server is restarting or re-creating its socket.
		return &fault.Error{Code: fault.Refused, Msg: "connection reset by " + addr + " while connecting",
			Hint: "the server may be restarting; try again in a moment", Err: err}
	case errors.As(err, &dnsErr):
		return &fault.Error{Code: fault.Unreachable, Msg: "cannot resolve " + addr, Hint: "check the host name", Err: err}
	case errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH), errors.Is(err, syscall.EADDRNOTAVAIL):
		return &fault.Error{Code: fault.Unreachable, Msg: addr + " is unreachable", Hint: "check the address, {bind} and the routes", Err: err}
	case errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return &fault.Error{Code: fault.Timeout, Msg: "timed out connecting to " + addr,
			Hint: "a firewall may be dropping packets to that port"}
	case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.EPERM), errors.Is(err, syscall.EINVAL), errors.Is(err, syscall.ENOPROTOOPT):
		return &fault.Error{Code: fault.Socket, Msg: "socket option refused", Hint: socketHint(), Err: err}
	}
	return &fault.Error{Code: fault.Unreachable, Msg: "cannot connect to " + addr, Err: err}
}

func socketHint() string {
	if av := tcpinfo.AvailableCongestion(); len(av) > 0 {
		return fmt.Sprintf("congestion control algorithms available here: %v", av)
	}
	return "check {congestion}, {mss} and {fq_rate}"
}

// TCP opens a TCP connection to addr: with cfg nil a control connection,
// else a data connection for role, the test's socket options set before
// connect (where the MSS clamp and the receive buffer must be). Its
// errors are coded Errors with hints.
func (c Dialer) TCP(ctx context.Context, addr string, cfg *model.TestConfig, role model.Role) (*net.TCPConn, error) {
	nc, err := c.dial(ctx, c.dialer(cfg, role), addr)
	if err != nil {
		return nil, Classify(err, addr)
	}
	return nc.(*net.TCPConn), nil
}

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

// UDP opens one UDP stream to addr for role: it sends hello until the
// server answers with a datagram accept takes, or the handshake times
// out.
func (c Dialer) UDP(ctx context.Context, addr string, cfg *model.TestConfig, role model.Role, hello []byte, accept func([]byte) bool) (*net.UDPConn, error) {
	d := c.dialer(nil, "")
	if c.Bind.IsValid() {
		d.LocalAddr = net.UDPAddrFromAddrPort(netip.AddrPortFrom(c.Bind, 0))
	}
	d.Control = tcpinfo.DialControl(engine.SocketOptions(cfg, role))
	nc, err := d.DialContext(ctx, udpNetwork(c.Network), addr)
	if err != nil {
		return nil, Classify(err, addr)
	}
	uc := nc.(*net.UDPConn)
	deadline := time.Now().Add(engine.HandshakeTimeout)
	buf := make([]byte, 2048)
	refused := false
	for time.Now().Before(deadline) {
		if ctx.Err() != nil {
			uc.Close()
			return nil, &fault.Error{Code: fault.Aborted, Msg: "interrupted while opening UDP streams", Err: ctx.Err()}
		}
		if _, err := uc.Write(hello); err != nil && !engine.TransientUDPError(err) {
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
