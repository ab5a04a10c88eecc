package perf

import (
	"bufio"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/dial"
	"github.com/tcpscope/tcpscope/internal/engine"
	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/gate"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf/perftest"
	"github.com/tcpscope/tcpscope/internal/serve"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// The server's defences, each against an attack reproduced over real
// sockets: every test here failed on the server before its fix.

// serveWith runs srv on a fresh loopback port until the test ends.
func serveWith(t *testing.T, srv *serve.Server) string {
	t.Helper()
	addr, _ := serveOn(t, srv)
	return addr
}

// session is a native client spoken by hand, for clients that misbehave
// as tcpscope's own never does.
type session struct {
	t      *testing.T
	addr   string
	ctrl   *net.TCPConn
	r      *bufio.Reader
	cookie []byte
	keys   [][]byte
}

// openSession says hello with cfg and expects a welcome.
func openSession(t *testing.T, addr string, cfg model.TestConfig) *session {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return helloOn(t, addr, c.(*net.TCPConn), cfg)
}

// helloOn says hello with cfg on c and expects a welcome.
func helloOn(t *testing.T, addr string, c *net.TCPConn, cfg model.TestConfig) *session {
	t.Helper()
	s := &session{t: t, addr: addr, ctrl: c, r: bufio.NewReader(c)}
	c.Write([]byte(controlMagic))
	if err := writeMessage(c, &message{Type: msgHello, Hello: &hello{Protocol: ProtocolVersion, Config: cfg}}); err != nil {
		t.Fatal(err)
	}
	m := s.recv()
	if m.Type != msgWelcome {
		t.Fatalf("hello: got %+v, want a welcome", m)
	}
	s.cookie = m.Welcome.Cookie
	s.keys = m.Welcome.StreamKeys
	return s
}

func (s *session) recv() *message {
	s.t.Helper()
	s.ctrl.SetReadDeadline(time.Now().Add(10 * time.Second))
	m, err := readMessage(s.r, maxMessage)
	if err != nil {
		s.t.Fatal(err)
	}
	if m.Type == msgError {
		s.t.Logf("server: %+v", m.Error)
	}
	return m
}

// data opens stream id's data connection.
func (s *session) data(id int) *net.TCPConn {
	s.t.Helper()
	c, err := net.Dial("tcp", s.addr)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { c.Close() })
	c.Write(dataPreamble(s.keys[id], id))
	return c.(*net.TCPConn)
}

// start starts the test and reads the server's started.
func (s *session) start() {
	s.t.Helper()
	if err := writeMessage(s.ctrl, &message{Type: msgStart}); err != nil {
		s.t.Fatal(err)
	}
	if m := s.recv(); m.Type != msgStarted {
		s.t.Fatalf("start: got %+v", m)
	}
}

// A client that resets its control connection while its sender goes on
// frees its test at once. Before, the server's receiver read on while data
// came, moving its deadline 5 s at a time, up to the planned end and 30 s
// past it: a slot held for the whole of a test nobody would see.
func TestAbortEndsReceivers(t *testing.T) {
	records := make(chan gate.Record, 1)
	srv := Add(&serve.Server{Version: "test"})
	srv.Subscribe(gate.OnEnded(func(r gate.Record) { records <- r }))
	addr := serveWith(t, srv)
	s := openSession(t, addr, model.TestConfig{Duration: 20 * time.Second})
	dc := s.data(0)
	s.start()
	writeErr := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, err := dc.Write(buf); err != nil {
				writeErr <- err
				return
			}
		}
	}()
	// Data flowing: the server's application has read more than any
	// receive buffer holds.
	waitFor(t, "32 MiB acknowledged", func() bool {
		smp, err := tcpinfo.Read(dc)
		return err == nil && smp.BytesAcked.V > 32*model.MiB
	})
	s.ctrl.SetLinger(0)
	s.ctrl.Close() // a reset
	reset := time.Now()
	select {
	case rec := <-records:
		t.Logf("test ended %q %v after the reset: %v", rec.Ended, time.Since(reset).Round(time.Millisecond), rec.Err)
	case <-time.After(5 * time.Second):
		t.Fatal("the server still ran the test 5 s after its client reset the control connection")
	}
	select {
	case <-writeErr:
	case <-time.After(5 * time.Second):
		t.Fatal("the server still read the data connection 5 s after the test ended")
	}
}

// A duration and an omitted start whose sum overflows time.Duration are
// refused. Before, the sum wrapped negative, passed --max-duration, and
// the test ran until its client hung up.
func TestOverflowingDurationRefused(t *testing.T) {
	addr := serveWith(t, Add(&serve.Server{Version: "test", Limits: serve.Limits{MaxDuration: 10 * time.Second}}))
	for _, cfg := range []model.TestConfig{
		{Omit: math.MaxInt64 - time.Second, Duration: 2 * time.Second},
		{Omit: 9_200_000_000_000_000_000, Duration: 100_000_000_000_000_000},
		{Duration: math.MaxInt64},
	} {
		m := rawHello(t, addr, hello{Protocol: ProtocolVersion, Config: cfg})
		if m.Type != msgError || (m.Error.Code != fault.BadConfig && m.Error.Code != fault.Limit) {
			t.Errorf("-O %d ns -t %d ns: got %+v, want a refusal", int64(cfg.Omit), int64(cfg.Duration), m)
		}
	}
}

// fuzzClass is the class fuzzed configs are checked against: the
// built-in default, with rate caps.
func fuzzClass() *limits.Class {
	c := limits.Builtin().Default
	c.MaxRate = model.GbitPerSecond
	c.MaxUDPRate = 100 * model.MbitPerSecond
	return &c
}

// acceptedWithin fails t unless cfg, which engine.Normalize and checkLimits
// accepted, runs for a positive time within cl's duration limit (or is a
// byte count, which the limit ends), with streams within its limit, and
// at a rate within its caps: what the client asked for, and what the
// server's end runs.
func acceptedWithin(t *testing.T, cfg model.TestConfig, cl *limits.Class) {
	t.Helper()
	d := engine.Span(&cfg)
	n := float64(len(cfg.Directions()))
	switch {
	case cfg.Parallel < 1 || cfg.Parallel > engine.MaxParallel || cfg.Length < 1:
		t.Fatalf("accepted %+v", cfg)
	case len(cfg.Directions()) > cl.MaxStreams:
		t.Fatalf("accepted %d streams over a limit of %d", len(cfg.Directions()), cl.MaxStreams)
	case cfg.Bytes == 0 && (d <= 0 || d > cl.MaxDuration):
		t.Fatalf("accepted a test of %v (-t %v, -O %v) under a limit of %v", d, cfg.Duration, cfg.Omit, cl.MaxDuration)
	case cfg.Bytes < 0 || cfg.Bitrate < 0 || cfg.Omit < 0:
		t.Fatalf("accepted %+v", cfg)
	case cfg.IsUDP() && (cfg.Bitrate == 0 || float64(cfg.Bitrate)*n > float64(cl.MaxUDPRate)):
		t.Fatalf("accepted UDP at -b %v per stream, %v streams, over a cap of %v", cfg.Bitrate, n, cl.MaxUDPRate)
	case !cfg.IsUDP() && float64(cfg.Bitrate)*n > float64(cl.MaxRate):
		t.Fatalf("accepted TCP at -b %v per stream, %v streams, over a cap of %v", cfg.Bitrate, n, cl.MaxRate)
	}
	if e, readCap := serve.Capped(cfg, cl); !cfg.IsUDP() && (e.FQRate <= 0 || readCap <= 0 ||
		float64(e.FQRate)*n > float64(cl.MaxRate) || float64(readCap)*n > float64(cl.MaxRate)) {
		t.Fatalf("the server's end paces at %v and reads at %v per stream, %v streams, under a cap of %v", e.FQRate, readCap, n, cl.MaxRate)
	}
}

// A native UDP hello forged from another address makes the server send
// that address nothing but one answer no longer than the hello, and the
// test is refused at start: the client cannot echo the token the answer
// carried. Before, one forged 26-byte hello made the server send a test's
// datagrams (1 GB in 5 s) to an address that never asked.
func TestForgedUDPHelloGetsNothing(t *testing.T) {
	t.Parallel() // refused at start; then a window for nothing to arrive
	records := make(chan gate.Record, 1)
	srv := Add(&serve.Server{Version: "test"})
	srv.Subscribe(gate.OnEnded(func(r gate.Record) { records <- r }))
	addr := serveWith(t, srv)
	server, _ := net.ResolveUDPAddr("udp4", addr)
	to, received := perftest.Victim(t, "127.0.0.2")
	s := openSession(t, addr, model.TestConfig{Protocol: model.UDP, Reverse: true, Bitrate: 200 * model.MbitPerSecond, Duration: 2 * time.Second, Length: 1400})
	hello := udpHello(s.keys[0], 0)
	perftest.SpoofUDP(t, to, server, hello)
	// The server answers the forged hello; the attacker, who never sees
	// the answer, starts the test with the token it does not have.
	waitFor(t, "the forged hello answered", func() bool { n, _ := received(); return n > 0 })
	if err := writeMessage(s.ctrl, &message{Type: msgStart, Start: &start{UDPTokens: [][]byte{make([]byte, udpTokenLen)}}}); err != nil {
		t.Fatal(err)
	}
	m := s.recv()
	if m.Type != msgError || m.Error.Code != fault.Unverified {
		t.Errorf("start with a token never received: got %+v, want a refusal (%s)", m, fault.Unverified)
	}
	select {
	case rec := <-records:
		t.Logf("server: %v, UDP peers %v", rec.Err, rec.UDPPeers)
	case <-time.After(10 * time.Second):
		t.Fatal("the test did not end")
	}
	// Nothing more comes: no event says so, so the time passing is the
	// check, long enough for anything the server sent to have arrived.
	time.Sleep(300 * time.Millisecond)
	n, b := received()
	t.Logf("the address the hello was forged from got %d datagrams, %d bytes", n, b)
	if n > 1 || b > len(hello) {
		t.Errorf("a forged %d-byte hello made the server send %d datagrams, %d bytes, to an address that never asked", len(hello), n, b)
	}
}

// A server sending UDP stops once the client's host says again and again
// that nothing listens at the stream's port (ICMP port unreachable),
// rather than send on to the end: the client is gone.
func TestUDPSenderStopsOnRefusals(t *testing.T) {
	records := make(chan gate.Record, 1)
	srv := Add(&serve.Server{Version: "test"})
	srv.Subscribe(gate.OnEnded(func(r gate.Record) { records <- r }))
	addr := serveWith(t, srv)
	s := openSession(t, addr, model.TestConfig{Protocol: model.UDP, Reverse: true, Bitrate: 50 * model.MbitPerSecond, Duration: 20 * time.Second, Length: 1400})
	uc, err := net.Dial("udp4", addr)
	if err != nil {
		t.Fatal(err)
	}
	uc.Write(udpHello(s.keys[0], 0))
	uc.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 2048)
	n, err := uc.Read(buf)
	if err != nil {
		t.Fatal(err)
	}
	token, ok := parseUDPAnswer(buf[:n], 0)
	if !ok {
		t.Fatalf("answer %q", buf[:n])
	}
	if err := writeMessage(s.ctrl, &message{Type: msgStart, Start: &start{UDPTokens: [][]byte{token}}}); err != nil {
		t.Fatal(err)
	}
	if m := s.recv(); m.Type != msgStarted {
		t.Fatalf("start: got %+v", m)
	}
	// The server's datagrams arrive: the test runs.
	uc.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := uc.Read(buf); err != nil {
		t.Fatalf("no datagram from the server: %v", err)
	}
	uc.Close() // gone, its control connection still open
	closed := time.Now()
	select {
	case rec := <-records:
		t.Logf("the test ended %v after the port closed: %v", time.Since(closed).Round(time.Millisecond), rec.Err)
		if rec.Err == nil || !strings.Contains(rec.Err.Error(), "refused") {
			t.Errorf("the test ended with %v, want the refusals named", rec.Err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server still sent 5 s after the client's UDP port closed")
	}
}

// Hellos that never open their streams, renewed as they time out, hold at
// most MaxTestsPerAddr slots: a client at another address still gets its
// test. Before, 32 of them from one address refused everybody else for as
// long as they were renewed.
func TestHelloHoardingHoldsFewSlots(t *testing.T) {
	addr := serveWith(t, Add(&serve.Server{Version: "test", Limits: serve.Limits{MaxTests: 8}}))
	held := 0
	for range 8 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.Write([]byte(controlMagic))
		writeMessage(c, &message{Type: msgHello, Hello: &hello{Protocol: ProtocolVersion, Config: model.TestConfig{Duration: time.Second}}})
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		m, err := readMessage(bufio.NewReader(c), maxMessage)
		if err != nil {
			t.Fatal(err)
		}
		if m.Type == msgWelcome {
			held++ // and never opens its data connection
		}
	}
	if held > serve.DefaultLimits.MaxTestsPerAddr {
		t.Errorf("one address holds %d slots, over the limit of %d", held, serve.DefaultLimits.MaxTestsPerAddr)
	}
	other := &Client{Dialer: dial.Dialer{Bind: netip.MustParseAddr("127.0.0.2")}}
	run, err := other.Run(context.Background(), addr, quick(model.TestConfig{}))
	if err != nil {
		t.Fatalf("a client at another address, beside %d hoarded slots: %v", held, err)
	}
	checkRun(t, run)
}

// Idle connections from one address beyond MaxPendingPerAddr are closed at
// once, and a client at another address is served meanwhile. Before, one
// address's idle connections ran the server out of file descriptors.
func TestIdleConnectionsPerAddress(t *testing.T) {
	srv := Add(&serve.Server{Version: "test"})
	addr := serveWith(t, srv)
	const idle = 64
	conns := make([]net.Conn, idle)
	for i := range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		conns[i] = c
	}
	// Read them all at once: a connection closed at once reads its end of
	// file within the 100 ms, one kept open times out (together, not
	// 100 ms each in turn).
	var closed atomic.Int32
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			c.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			var b [1]byte
			if _, err := c.Read(b[:]); err == io.EOF {
				closed.Add(1)
			}
		})
	}
	wg.Wait()
	want := idle - serve.DefaultLimits.MaxPendingPerAddr
	t.Logf("%d idle connections: %d closed at once; refusals %v", idle, closed.Load(), srv.Refusals())
	if int(closed.Load()) != want {
		t.Errorf("%d of %d idle connections from one address closed at once, want %d (all over the limit of %d)", closed.Load(), idle, want, serve.DefaultLimits.MaxPendingPerAddr)
	}
	if n := srv.Refusals()["pending-per-address"]; n != int64(want) {
		t.Errorf("%d refusals counted, want %d", n, want)
	}
	other := &Client{Dialer: dial.Dialer{Bind: netip.MustParseAddr("127.0.0.2")}}
	run, err := other.Run(context.Background(), addr, quick(model.TestConfig{}))
	if err != nil {
		t.Fatalf("a client at another address, beside %d idle connections: %v", idle, err)
	}
	checkRun(t, run)
}

// The pending limit per address leaves room for an admitted test's own
// data connections, which are pending until read: 256 of them at once for
// -P 128 --bidir. Before, a stock client's --bidir -P 16 had connections
// closed at once ("Transport endpoint is not connected").
func TestPendingLimitLeavesRoomForStreams(t *testing.T) {
	addr := serveWith(t, Add(&serve.Server{Version: "test", Limits: serve.Limits{MaxPendingPerAddr: 2}}))
	run, err := (&Client{}).Run(context.Background(), addr, quick(model.TestConfig{Parallel: 16, Bidir: true}))
	if err != nil {
		t.Fatalf("-P 16 --bidir under a pending limit of 2: %v", err)
	}
	checkRun(t, run)
}

// A data connection joins a test only with its stream's own key: the
// test's cookie, another stream's key, or a key replayed once its stream
// has arrived open nothing. (The cookie stays on the control connection,
// encrypted under TLS; a key is seen on the wire only as its stream
// claims it.)
func TestDataNeedsItsStreamKey(t *testing.T) {
	addr := serveWith(t, Add(&serve.Server{Version: "test"}))
	s := openSession(t, addr, model.TestConfig{Duration: 2 * time.Second, Parallel: 2})
	closedAtOnce := func(preamble []byte) bool {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(preamble)
		c.SetReadDeadline(time.Now().Add(3 * time.Second))
		_, err = c.Read(make([]byte, 1))
		return errors.Is(err, io.EOF) || isReset(err)
	}
	if !closedAtOnce(dataPreamble(s.cookie, 0)) {
		t.Error("the cookie opened a data connection")
	}
	if !closedAtOnce(dataPreamble(s.keys[1], 0)) {
		t.Error("stream 1's key opened stream 0")
	}
	s.data(0)
	s.data(1)
	s.start()
	if !closedAtOnce(dataPreamble(s.keys[0], 0)) {
		t.Error("a key replayed after its stream arrived opened a connection")
	}
}
