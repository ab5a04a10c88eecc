package perf

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"math"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// The server's defences, each against an attack reproduced over real
// sockets: every test here failed on the server before its fix.

// serveWith runs srv on a fresh loopback port until the test ends.
func serveWith(t *testing.T, srv *Server) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Error("server did not stop")
		}
	})
	return ln.Addr().String()
}

// session is a native client spoken by hand, for clients that misbehave
// as tcpscope's own never does.
type session struct {
	t      *testing.T
	addr   string
	ctrl   *net.TCPConn
	r      *bufio.Reader
	cookie []byte
}

// openSession says hello with cfg and expects a welcome.
func openSession(t *testing.T, addr string, cfg model.TestConfig) *session {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	s := &session{t: t, addr: addr, ctrl: c.(*net.TCPConn), r: bufio.NewReader(c)}
	c.Write([]byte(controlMagic))
	if err := writeMessage(c, &message{Type: msgHello, Hello: &hello{Protocol: ProtocolVersion, Config: cfg}}); err != nil {
		t.Fatal(err)
	}
	m := s.recv()
	if m.Type != msgWelcome {
		t.Fatalf("hello: got %+v, want a welcome", m)
	}
	s.cookie = m.Welcome.Cookie
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
	c.Write(dataPreamble(s.cookie, id))
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
	records := make(chan TestRecord, 1)
	addr := serveWith(t, &Server{Version: "test", OnTest: func(r TestRecord) { records <- r }})
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
	time.Sleep(200 * time.Millisecond) // data flowing
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
	addr := serveWith(t, &Server{Version: "test", Limits: Limits{MaxDuration: 10 * time.Second}})
	for _, cfg := range []model.TestConfig{
		{Omit: math.MaxInt64 - time.Second, Duration: 2 * time.Second},
		{Omit: 9_200_000_000_000_000_000, Duration: 100_000_000_000_000_000},
		{Duration: math.MaxInt64},
	} {
		m := rawHello(t, addr, hello{Protocol: ProtocolVersion, Config: cfg})
		if m.Type != msgError || (m.Error.Code != CodeBadConfig && m.Error.Code != CodeLimit) {
			t.Errorf("-O %d ns -t %d ns: got %+v, want a refusal", int64(cfg.Omit), int64(cfg.Duration), m)
		}
	}
	// iperf3's parameters are seconds in float64s.
	i3Next := byte('a')
	for _, params := range []string{
		`{"tcp":true,"time":9.2e9,"omit":9.2e9,"parallel":1,"len":131072}`,
		`{"tcp":true,"time":1e300,"parallel":1,"len":131072}`,
		`{"tcp":true,"time":1,"omit":-1e300,"parallel":1,"len":131072}`,
		`{"tcp":true,"num":1e300,"parallel":1,"len":131072}`,
		`{"tcp":true,"blockcount":1e15,"parallel":1,"len":1e9}`,
	} {
		i3Next++
		if st := i3Handshake(t, addr, i3TestCookie(i3Next), params); st != i3ServerError {
			t.Errorf("%s: server answered %d, want SERVER_ERROR", params, st)
		}
	}
}

// i3TestCookie is a valid iperf3 cookie of one repeated letter.
func i3TestCookie(c byte) []byte {
	b := make([]byte, i3CookieLen)
	for i := range i3CookieLen - 1 {
		b[i] = c
	}
	return b
}

// i3Handshake opens an iperf3 control connection with cookie, sends
// params and returns the server's next state.
func i3Handshake(t *testing.T, addr string, cookie []byte, params string) byte {
	t.Helper()
	c := i3Open(t, addr, cookie)
	return i3SendParams(t, c, params)
}

// i3Open connects, sends cookie and waits for PARAM_EXCHANGE.
func i3Open(t *testing.T, addr string, cookie []byte) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.Write(cookie)
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	var st [1]byte
	if _, err := io.ReadFull(c, st[:]); err != nil || st[0] != i3ParamExchange {
		t.Fatalf("after the cookie: %v, state %d", err, st[0])
	}
	return c
}

// i3SendParams sends an iperf3 parameters message and returns the state the
// server answers with.
func i3SendParams(t *testing.T, c net.Conn, params string) byte {
	t.Helper()
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(params)))
	c.Write(append(n[:], params...))
	c.SetReadDeadline(time.Now().Add(15 * time.Second))
	var st [1]byte
	if _, err := io.ReadFull(c, st[:]); err != nil {
		t.Fatalf("after the parameters: %v", err)
	}
	return st[0]
}

// iperf3 control connections that share one cookie, each read before any
// was admitted, are each counted: 8 under --max-tests 2 get 2 tests, and
// streams stay under --max-total-streams. Before, they were counted as
// one test, and all 8 ran, 1,024 streams under a limit of 512.
func TestCookieReuseCountsEveryTest(t *testing.T) {
	addr := serveWith(t, &Server{Version: "test", Limits: Limits{MaxTests: 2, MaxTotalStreams: 512}})
	cookie := i3TestCookie('z')
	params, _ := json.Marshal(map[string]any{"tcp": true, "time": 3, "parallel": 128, "len": 131072})
	conns := make([]net.Conn, 8)
	for i := range conns {
		conns[i] = i3Open(t, addr, cookie) // every one read before any is admitted
	}
	var mu sync.Mutex
	admitted := 0
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Go(func() {
			if i3SendParams(t, c, string(params)) == i3CreateStreams {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if admitted > 1 {
		t.Errorf("%d tests with one cookie admitted (%d streams): want one", admitted, 128*admitted)
	}
}

// acceptedWithin fails t unless cfg, which Normalize and checkLimits
// accepted, runs for a positive time within l's duration limit (or is a
// byte count, which the limit ends), with streams within its limit.
func acceptedWithin(t *testing.T, cfg model.TestConfig, l Limits) {
	t.Helper()
	l = l.withDefaults()
	d := span(&cfg)
	switch {
	case cfg.Parallel < 1 || cfg.Parallel > MaxParallel || cfg.Length < 1:
		t.Fatalf("accepted %+v", cfg)
	case len(cfg.Directions()) > l.MaxStreams:
		t.Fatalf("accepted %d streams over a limit of %d", len(cfg.Directions()), l.MaxStreams)
	case cfg.Bytes == 0 && (d <= 0 || d > l.MaxDuration):
		t.Fatalf("accepted a test of %v (-t %v, -O %v) under a limit of %v", d, cfg.Duration, cfg.Omit, l.MaxDuration)
	case cfg.Bytes < 0 || cfg.Bitrate < 0 || cfg.Omit < 0:
		t.Fatalf("accepted %+v", cfg)
	}
}
