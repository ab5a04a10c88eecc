package frontdoor

import (
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
	"time"
)

// HeadLen is how many first bytes of a connection the door reads to
// tell its protocol: enough for tcpscope's magic (8 bytes), an iperf3
// cookie's first, a TLS record's type, and an HTTP method with its space
// ("OPTIONS ").
const HeadLen = 8

// tlsHandshakeRecord is the first byte of a TLS ClientHello record. No
// route's first bytes can begin so: tcpscope's magic and HTTP methods are
// upper-case ASCII, an iperf3 cookie lower-case letters and digits.
const tlsHandshakeRecord = 0x16

// Route is a protocol the door hands connections to.
type Route struct {
	// Name names the route in the door's counts and logs.
	Name string
	// Match reports whether head, a connection's first HeadLen bytes,
	// begins a connection of this protocol.
	Match func(head []byte) bool
	// Serve takes the connection over and closes it.
	Serve func(ctx context.Context, c *Conn)
	// Plain and InTLS say where the route is served: on a plain
	// connection, inside TLS the door terminated, or both.
	Plain, InTLS bool
	// ALPN is the protocol ID the route's clients offer in TLS, if any:
	// the door offers it back.
	ALPN string
}

// Conn is a connection handed to a route.
type Conn struct {
	// Conn is where the protocol reads and writes: the TCP connection,
	// or the TLS connection inside it. Head was read from it already.
	net.Conn
	// TCP is the socket beneath, for the kernel's view of it.
	TCP *net.TCPConn
	// Head is the connection's first bytes, already read; a read
	// deadline of the door's HeadTimeout from the accept is set.
	Head []byte
	// Seq is the connection's place in the door's accept order.
	Seq uint64
	// TLS is the TLS connection's state when the door terminated TLS;
	// nil on a plain connection.
	TLS *tls.ConnectionState
	// leave ends the connection's pending time (Door.Enter).
	leave func()
}

// Admitted ends the connection's pending time (Door.Enter): a route
// calls it once the connection is part of a test. Calling it again does
// nothing.
func (c *Conn) Admitted() { c.leave() }

// Door accepts a server's connections and hands each to its route.
type Door struct {
	// Routes are tried in order against each connection's first bytes.
	Routes []Route
	// HTTP, when set, serves the connections whose first bytes are an
	// HTTP request or HTTP/2's preface, plain or inside TLS (where a
	// client that negotiated h2 or http/1.1 goes straight to it).
	HTTP http.Handler
	// TLS, when set, terminates TLS on connections that begin with a
	// ClientHello; its NextProtos are the routes' ALPN IDs, h2 and
	// http/1.1 (when HTTP is set).
	TLS *tls.Config
	// Enter counts a new connection as pending (not yet part of a
	// test), or says it is over a bound: then it is closed at once.
	// leave ends its pending time, once. Nil bounds nothing.
	Enter func(remote net.Addr) (leave func(), ok bool)
	// HeadTimeout bounds how long a connection may take to send its
	// first bytes, its TLS handshake and an HTTP request's header
	// (default 10 s).
	HeadTimeout time.Duration
	// Grace bounds how long Serve waits for its routes' connections
	// after its context ends (default 15 s).
	Grace  time.Duration
	Logger *slog.Logger

	mu     sync.Mutex
	served map[string]uint64
	// byConn finds the Conn of a connection handed to the HTTP server,
	// for its handlers' contexts (ConnFrom).
	byConn sync.Map
	wg     sync.WaitGroup
}

// RouteHTTP names the door's HTTP route in its counts.
const RouteHTTP = "http"

// Served is how many connections the door has handed to each route, by
// name (RouteHTTP for HTTP).
func (d *Door) Served() map[string]uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]uint64, len(d.served))
	for k, v := range d.served {
		out[k] = v
	}
	return out
}

func (d *Door) count(route string) {
	d.mu.Lock()
	if d.served == nil {
		d.served = map[string]uint64{}
	}
	d.served[route]++
	d.mu.Unlock()
}

// Serve accepts connections on ln until ctx ends, then closes ln, stops
// the HTTP server and waits for the routes' connections (at most Grace).
func (d *Door) Serve(ctx context.Context, ln net.Listener) error {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	if d.HeadTimeout == 0 {
		d.HeadTimeout = 10 * time.Second
	}
	if d.Grace == 0 {
		d.Grace = 15 * time.Second
	}
	tlsConf := d.tlsConfig()
	var web *webServer
	if d.HTTP != nil {
		web = d.startHTTP(ln.Addr())
	}
	stopAccept := context.AfterFunc(ctx, func() { _ = ln.Close() })
	defer stopAccept()
	err := d.accept(ctx, ln, func(c net.Conn, seq uint64, leave func()) {
		d.handle(ctx, c, seq, leave, tlsConf, web)
	})
	done := make(chan struct{})
	go func() {
		if web != nil {
			web.shutdown(d.Grace)
		}
		d.wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(d.Grace):
		d.Logger.Warn("shutdown: connections still open after the grace period")
	}
	return err
}

// accept runs serve on a goroutine of its own for each connection ln
// accepts, until ln fails for good or ctx ends.
func (d *Door) accept(ctx context.Context, ln net.Listener, serve func(net.Conn, uint64, func())) error {
	var seq uint64
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("accept: %w", err)
			}
			// Transient errors (EMFILE) should not end the server.
			d.Logger.Warn("accept", "err", err)
			time.Sleep(50 * time.Millisecond)
			continue
		}
		seq++
		n := seq // this connection's, not the loop's next
		leave := func() {}
		if d.Enter != nil {
			l, ok := d.Enter(c.RemoteAddr())
			if !ok {
				c.Close()
				continue
			}
			leave = l
		}
		d.wg.Go(func() { serve(c, n, leave) })
	}
}

// tlsConfig is TLS with the routes' ALPN IDs and HTTP's offered, or nil.
func (d *Door) tlsConfig() *tls.Config {
	if d.TLS == nil {
		return nil
	}
	c := d.TLS.Clone()
	var protos []string
	for _, r := range d.Routes {
		if r.ALPN != "" && r.InTLS && !slices.Contains(protos, r.ALPN) {
			protos = append(protos, r.ALPN)
		}
	}
	if d.HTTP != nil {
		protos = append(protos, "h2", "http/1.1")
	}
	c.NextProtos = protos
	return c
}

// handle reads a connection's first bytes and hands it to its route.
// leave ends its pending time; a route calls it through Conn.Admitted,
// and it is called here in any case once the route is done.
func (d *Door) handle(ctx context.Context, c net.Conn, seq uint64, leave func(), tlsConf *tls.Config, web *webServer) {
	var once sync.Once
	leaveOnce := func() { once.Do(leave) }
	tc, ok := c.(*net.TCPConn)
	if !ok {
		leaveOnce()
		c.Close()
		return
	}
	_ = tc.SetReadDeadline(time.Now().Add(d.HeadTimeout))
	head := make([]byte, HeadLen)
	if _, err := io.ReadFull(tc, head); err != nil {
		leaveOnce()
		tc.Close()
		return
	}
	fc := &Conn{Conn: tc, TCP: tc, Head: head, Seq: seq, leave: leaveOnce}
	if head[0] == tlsHandshakeRecord && tlsConf != nil {
		d.serveTLS(ctx, fc, tlsConf, web)
		return
	}
	d.route(ctx, fc, web)
}

// serveTLS completes the TLS handshake of a connection whose first bytes
// were read, then routes what comes inside.
func (d *Door) serveTLS(ctx context.Context, fc *Conn, conf *tls.Config, web *webServer) {
	tlsc := tls.Server(&prefixConn{Conn: fc.TCP, prefix: fc.Head}, conf)
	_ = fc.TCP.SetDeadline(time.Now().Add(d.HeadTimeout))
	if err := tlsc.HandshakeContext(ctx); err != nil {
		d.Logger.Debug("tls handshake", "remote", fc.TCP.RemoteAddr(), "err", err)
		fc.leave()
		fc.TCP.Close()
		return
	}
	_ = fc.TCP.SetDeadline(time.Time{})
	state := tlsc.ConnectionState()
	inner := &Conn{Conn: tlsc, TCP: fc.TCP, Seq: fc.Seq, TLS: &state, leave: fc.leave}
	if p := state.NegotiatedProtocol; (p == "h2" || p == "http/1.1") && web != nil {
		d.count(RouteHTTP)
		web.serve(inner, tlsc)
		return
	}
	_ = tlsc.SetReadDeadline(time.Now().Add(d.HeadTimeout))
	head := make([]byte, HeadLen)
	if _, err := io.ReadFull(tlsc, head); err != nil {
		fc.leave()
		tlsc.Close()
		return
	}
	inner.Head = head
	d.route(ctx, inner, web)
}

// route hands a connection to the first route its first bytes match, or
// to HTTP.
func (d *Door) route(ctx context.Context, c *Conn, web *webServer) {
	inTLS := c.TLS != nil
	for _, r := range d.Routes {
		if (inTLS && r.InTLS || !inTLS && r.Plain) && r.Match(c.Head) {
			d.count(r.Name)
			r.Serve(ctx, c)
			c.leave()
			return
		}
	}
	if web != nil && IsHTTP(c.Head) {
		d.count(RouteHTTP)
		web.serve(c, &prefixConn{Conn: c.Conn, prefix: c.Head})
		return
	}
	d.Logger.Debug("unknown protocol", "remote", c.TCP.RemoteAddr(), "tls", inTLS, "first_bytes", fmt.Sprintf("%q", c.Head))
	c.leave()
	c.Close()
}

// httpMethods are the request methods HTTP/1.1 and HTTP/2's preface
// ("PRI * HTTP/2.0") begin with.
var httpMethods = []string{"GET", "HEAD", "POST", "PUT", "DELETE", "CONNECT", "OPTIONS", "TRACE", "PATCH", "PRI"}

// IsHTTP reports whether head, a connection's first bytes, begins an
// HTTP/1.x request or HTTP/2's connection preface: a method and a space.
func IsHTTP(head []byte) bool {
	for _, m := range httpMethods {
		if len(head) > len(m) && string(head[:len(m)]) == m && head[len(m)] == ' ' {
			return true
		}
	}
	return false
}

// prefixConn is a connection whose first bytes were already read: they
// are read again first.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(b []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(b, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(b)
}

// NetConn is the connection beneath, for what unwraps connections to
// their socket (tcpinfo.Socket).
func (c *prefixConn) NetConn() net.Conn { return c.Conn }
