package iperf3

import (
	"encoding/binary"
	"encoding/json"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/perf/perftest"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// serveWith runs srv, with the iperf3 Handler added, on a fresh loopback
// port until the test ends.
func serveWith(t *testing.T, srv *serve.Server) string {
	t.Helper()
	srv.Handle(&Handler{})
	return perftest.Serve(t, srv)
}

// Durations whose sum overflows time.Duration are refused (see perf's
// TestOverflowingDurationRefused): iperf3's parameters are seconds in
// float64s.
func TestOverflowingDurationRefused(t *testing.T) {
	addr := serveWith(t, perf.Add(&serve.Server{Version: "test", Limits: serve.Limits{MaxDuration: 10 * time.Second}}))
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
		if st := i3Handshake(t, addr, i3TestCookie(i3Next), params); st != stateServerError {
			t.Errorf("%s: server answered %d, want SERVER_ERROR", params, st)
		}
	}
}

// i3TestCookie is a valid iperf3 cookie of one repeated letter.
func i3TestCookie(c byte) []byte {
	b := make([]byte, cookieLen)
	for i := range cookieLen - 1 {
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
	if _, err := io.ReadFull(c, st[:]); err != nil || st[0] != stateParamExchange {
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
	addr := serveWith(t, perf.Add(&serve.Server{Version: "test", Limits: serve.Limits{MaxTests: 2, MaxTotalStreams: 512}}))
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
			if i3SendParams(t, c, string(params)) == stateCreateStreams {
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

// An iperf3 UDP hello forged from an address other than the control
// connection's is not answered, and its test gets no stream from it.
func TestForgedIperf3UDPHelloIgnored(t *testing.T) {
	t.Parallel() // no test runs; a window for nothing to arrive
	addr := serveWith(t, perf.Add(&serve.Server{Version: "test"}))
	server, _ := net.ResolveUDPAddr("udp4", addr)
	to, received := perftest.Victim(t, "127.0.0.3")
	c := i3Open(t, addr, i3TestCookie('u'))
	params := `{"udp":true,"time":2,"parallel":1,"len":1400,"bandwidth":100000000,"reverse":true}`
	if st := i3SendParams(t, c, params); st != stateCreateStreams {
		t.Fatalf("parameters: state %d, want CREATE_STREAMS", st)
	}
	perftest.SpoofUDP(t, to, server, udpHello)
	// Nothing comes: no event says so, so the time passing is the check,
	// long enough for an answer or a test's datagrams to have arrived.
	time.Sleep(500 * time.Millisecond)
	if n, b := received(); n > 0 {
		t.Errorf("a forged iperf3 hello from another address got %d datagrams, %d bytes", n, b)
	}
}
