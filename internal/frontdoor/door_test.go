package frontdoor

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/perf/perftest"
)

const nativeALPN = "test-native/1"

// pendingCounter is a Door.Enter that bounds connections per address.
type pendingCounter struct {
	mu    sync.Mutex
	n     int
	max   int
	total int
}

func (p *pendingCounter) enter(net.Addr) (func(), bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.n >= p.max {
		return nil, false
	}
	p.n++
	p.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			p.mu.Lock()
			p.n--
			p.mu.Unlock()
		})
	}, true
}

func (p *pendingCounter) pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

type doorFixture struct {
	addr    string
	door    *Door
	roots   *x509.CertPool
	pending *pendingCounter
}

// startDoor serves a door on loopback with an echo route for the native
// magic (plain and in TLS), a route for lower-case heads (plain only),
// and an HTTP handler that reports what it saw of its connection.
func startDoor(t *testing.T, maxPending int) *doorFixture {
	t.Helper()
	cert, leaf := perftest.SelfSigned(t)
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	f := &doorFixture{roots: roots, pending: &pendingCounter{max: maxPending}}
	echo := func(ctx context.Context, c *Conn) {
		defer c.Close()
		c.Admitted()
		_ = c.SetReadDeadline(time.Time{})
		tlsNote := "plain"
		if c.TLS != nil {
			tlsNote = "tls " + c.TLS.NegotiatedProtocol
		}
		fmt.Fprintf(c, "%s %s\n", c.Head, tlsNote)
		_, _ = io.Copy(c, c)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/conn", func(w http.ResponseWriter, r *http.Request) {
		fc, ok := ConnFrom(r.Context())
		if !ok || fc.TCP == nil {
			http.Error(w, "no door connection", http.StatusInternalServerError)
			return
		}
		// The socket beneath: its descriptor answers a syscall.
		raw, err := fc.TCP.SyscallConn()
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fd := -1
		_ = raw.Control(func(f uintptr) { fd = int(f) })
		fmt.Fprintf(w, "proto %s tls %v remote %s local %s fd>0 %v",
			r.Proto, r.TLS != nil, fc.TCP.RemoteAddr(), fc.TCP.LocalAddr(), fd > 0)
	})
	f.door = &Door{
		Routes: []Route{
			{Name: "native", Match: func(h []byte) bool { return string(h) == "TCPSCOPE" }, Serve: echo, Plain: true, InTLS: true, ALPN: nativeALPN},
			{Name: "lower", Match: func(h []byte) bool { return h[0] >= 'a' && h[0] <= 'z' }, Serve: echo, Plain: true},
		},
		HTTP:        mux,
		TLS:         &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13},
		Enter:       f.pending.enter,
		HeadTimeout: 2 * time.Second,
		Grace:       2 * time.Second,
	}
	f.addr = perftest.Serve(t, f.door)
	return f
}

func (f *doorFixture) client(protos func(*http.Protocols)) *http.Client {
	var p http.Protocols
	protos(&p)
	return &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		Protocols:       &p,
		TLSClientConfig: &tls.Config{RootCAs: f.roots},
	}}
}

func get(t *testing.T, c *http.Client, url string) string {
	t.Helper()
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %q %v", url, resp.Status, b, err)
	}
	return string(b)
}

// Every protocol on one port: HTTP/1.1 plain and in TLS, HTTP/2 in TLS
// (ALPN) and by prior knowledge, a native echo plain and in TLS, and a
// plain-only route; each handler reaches the TCP socket beneath.
func TestOnePortEveryProtocol(t *testing.T) {
	f := startDoor(t, 64)
	for _, tc := range []struct {
		name, scheme, want string
		protos             func(*http.Protocols)
	}{
		{"http/1.1", "http", "proto HTTP/1.1 tls false", func(p *http.Protocols) { p.SetHTTP1(true) }},
		{"h2c prior knowledge", "http", "proto HTTP/2.0 tls false", func(p *http.Protocols) { p.SetUnencryptedHTTP2(true) }},
		{"https http/1.1", "https", "proto HTTP/1.1 tls true", func(p *http.Protocols) { p.SetHTTP1(true) }},
		{"https h2", "https", "proto HTTP/2.0 tls true", func(p *http.Protocols) { p.SetHTTP2(true) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := f.client(tc.protos)
			defer c.CloseIdleConnections()
			got := get(t, c, tc.scheme+"://"+f.addr+"/conn")
			if !strings.HasPrefix(got, tc.want) || !strings.Contains(got, "local "+f.addr) || !strings.HasSuffix(got, "fd>0 true") {
				t.Errorf("got %q, want %q on the socket to %s", got, tc.want, f.addr)
			}
		})
	}
	echo := func(conn net.Conn, send string) string {
		t.Helper()
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := io.WriteString(conn, send); err != nil {
			t.Fatal(err)
		}
		line := make([]byte, 0, 64)
		b := make([]byte, 1)
		for len(line) < 64 {
			if _, err := conn.Read(b); err != nil || b[0] == '\n' {
				break
			}
			line = append(line, b[0])
		}
		return string(line)
	}
	plain := func() net.Conn {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if got := echo(plain(), "TCPSCOPE"); got != "TCPSCOPE plain" {
		t.Errorf("native plain: %q", got)
	}
	if got := echo(plain(), "abcdefgh"); got != "abcdefgh plain" {
		t.Errorf("plain-only route: %q", got)
	}
	tlsDial := func(protos ...string) net.Conn {
		c, err := tls.Dial("tcp", f.addr, &tls.Config{RootCAs: f.roots, NextProtos: protos})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if got := echo(tlsDial(nativeALPN), "TCPSCOPE"); got != "TCPSCOPE tls "+nativeALPN {
		t.Errorf("native in TLS with ALPN: %q", got)
	}
	if got := echo(tlsDial(), "TCPSCOPE"); got != "TCPSCOPE tls " {
		t.Errorf("native in TLS without ALPN: %q", got)
	}
	// A route served only on plain connections is not reached in TLS,
	// nor are unknown first bytes anywhere.
	if got := echo(tlsDial(), "abcdefgh"); got != "" {
		t.Errorf("plain-only route in TLS: answered %q, want the connection closed", got)
	}
	if got := echo(plain(), "\x00\x01\x02\x03\x04\x05\x06\x07"); got != "" {
		t.Errorf("unknown bytes: answered %q, want the connection closed", got)
	}
	served := f.door.Served()
	if served["native"] != 3 || served["lower"] != 1 || served[RouteHTTP] != 4 {
		t.Errorf("served %v: want native 3, lower 1, http 4", served)
	}
	// Every connection left its pending count: the echoes closed, and
	// the HTTP clients' idle connections were closed by them.
	deadline := time.Now().Add(3 * time.Second)
	for f.pending.pending() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := f.pending.pending(); n != 0 {
		t.Errorf("%d connections still pending after all closed", n)
	}
}

// Connections over the pending bound are closed at once, HTTP ones held
// idle by a client count against it, and closing them frees it.
func TestPendingBound(t *testing.T) {
	f := startDoor(t, 2)
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("tcp", f.addr)
		if err != nil {
			t.Fatal(err)
		}
		// An HTTP request, kept alive after its answer.
		if _, err := io.WriteString(c, "GET /conn HTTP/1.1\r\nHost: x\r\n\r\n"); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 4096)
		_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
		if n, err := c.Read(buf); err != nil || !bytes.HasPrefix(buf[:n], []byte("HTTP/1.1 200")) {
			t.Fatalf("keep-alive request: %q %v", buf[:n], err)
		}
		held = append(held, c)
	}
	over, err := net.Dial("tcp", f.addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = over.SetReadDeadline(time.Now().Add(5 * time.Second))
	if n, err := over.Read(make([]byte, 1)); err == nil {
		t.Errorf("a third connection over a bound of 2 read %d bytes, want it closed", n)
	}
	over.Close()
	for _, c := range held {
		c.Close()
	}
	deadline := time.Now().Add(3 * time.Second)
	for f.pending.pending() != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := f.pending.pending(); n != 0 {
		t.Fatalf("%d still pending after the HTTP connections closed", n)
	}
	if got := get(t, f.client(func(p *http.Protocols) { p.SetHTTP1(true) }), "http://"+f.addr+"/conn"); !strings.HasPrefix(got, "proto HTTP/1.1") {
		t.Errorf("after the bound freed: %q", got)
	}
}

func TestIsHTTP(t *testing.T) {
	for head, want := range map[string]bool{
		"GET / HT": true, "POST /a ": true, "OPTIONS ": true, "PRI * HT": true, "DELETE /": true,
		"TCPSCOPE": false, "GETX / H": false, "get / ht": false, "abcdefgh": false, "\x16\x03\x01\x02\x00\x01\x00\x01": false,
	} {
		if got := IsHTTP([]byte(head)); got != want {
			t.Errorf("IsHTTP(%q) = %v, want %v", head, got, want)
		}
	}
}

// A client that starts a request, a TLS handshake or the first bytes and
// stops is closed after HeadTimeout, and its pending place is given
// back: a slow client holds nothing for longer.
func TestSlowClientsClosed(t *testing.T) {
	f := startDoor(t, 8) // a head timeout of 2 s
	for name, start := range map[string]string{
		"first bytes":       "TCP",
		"an HTTP header":    "GET /conn HTTP/1.1\r\nHost: x\r\n",
		"a TLS ClientHello": "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03",
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			c, err := net.Dial("tcp", f.addr)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if _, err := io.WriteString(c, start); err != nil {
				t.Fatal(err)
			}
			began := time.Now()
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			_, err = io.Copy(io.Discard, c)
			took := time.Since(began)
			if err != nil || took > 2*time.Second+time.Second {
				t.Errorf("closed after %v (%v): want it closed within the 2 s head timeout", took, err)
			}
			deadline := time.Now().Add(3 * time.Second)
			for f.pending.pending() != 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := f.pending.pending(); n != 0 {
				t.Errorf("%d connections still pending after a slow client was closed", n)
			}
		})
	}
}
