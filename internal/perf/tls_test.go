package perf

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf/perftest"
	"github.com/tcpscope/tcpscope/internal/serve"
)

// recorder is a TCP proxy to addr that keeps the first 4 KiB that
// cross it each way on every connection (the handshakes and preambles,
// not the test's bulk), as they cross: what an eavesdropper sees.
type recorder struct {
	mu    sync.Mutex
	flows []*bytes.Buffer
}

// flow is one direction of one connection, recorded.
type flow struct {
	r   *recorder
	buf *bytes.Buffer
}

func (f flow) Write(b []byte) (int, error) {
	f.r.mu.Lock()
	defer f.r.mu.Unlock()
	if left := 4096 - f.buf.Len(); left > 0 {
		f.buf.Write(b[:min(len(b), left)])
	}
	return len(b), nil
}

func (r *recorder) newFlow() flow {
	r.mu.Lock()
	defer r.mu.Unlock()
	b := &bytes.Buffer{}
	r.flows = append(r.flows, b)
	return flow{r, b}
}

func (r *recorder) saw(b []byte) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, f := range r.flows {
		if bytes.Contains(f.Bytes(), b) {
			return true
		}
	}
	return false
}

func record(t *testing.T, addr string) (string, *recorder) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	r := &recorder{}
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", addr)
			if err != nil {
				c.Close()
				continue
			}
			pipe := func(dst, src net.Conn) {
				io.Copy(dst, io.TeeReader(src, r.newFlow()))
				if tc, ok := dst.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
			}
			go pipe(s, c)
			go pipe(c, s)
		}
	}()
	return ln.Addr().String(), r
}

// inClear says whether a run's cookie crossed the recorder in any of the
// forms it could take: raw, hex, or base64 as the welcome's JSON has it.
func inClear(t *testing.T, rec *recorder, run *model.Run) bool {
	t.Helper()
	cookie, err := hex.DecodeString(run.Cookie)
	if err != nil || len(cookie) != cookieLen {
		t.Fatalf("the run's cookie %q", run.Cookie)
	}
	return rec.saw(cookie) || rec.saw([]byte(run.Cookie)) || rec.saw([]byte(base64.StdEncoding.EncodeToString(cookie)))
}

// With TLS on, a test runs with the client verifying the server (by its
// certificate, or by a pin), the control connection's cookie, stream keys
// and token are never seen in clear on the path, and a plain control
// connection is refused with a reason.
func TestTLSControl(t *testing.T) {
	cert, x := perftest.SelfSigned(t)
	srv := Add(&serve.Server{Version: "test", TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}})
	addr := serveWith(t, srv)
	proxy, rec := record(t, addr)
	roots := x509.NewCertPool()
	roots.AddCert(x)
	ctx := context.Background()
	run, err := (&Client{TLS: &tls.Config{RootCAs: roots}}).Run(ctx, proxy, quick(model.TestConfig{Parallel: 2}))
	if err != nil {
		t.Fatalf("verified by a trusted root: %v", err)
	}
	if inClear(t, rec, run) {
		t.Errorf("the cookie %s crossed in clear", run.Cookie)
	}
	// The check can fail: without TLS the same recorder sees it.
	plainProxy, plainRec := record(t, serveWith(t, Add(&serve.Server{Version: "test"})))
	plainRun, err := (&Client{}).Run(ctx, plainProxy, quick(model.TestConfig{}))
	if err != nil {
		t.Fatal(err)
	}
	if !inClear(t, plainRec, plainRun) {
		t.Error("the recorder did not see a plain control connection's cookie")
	}
	if !rec.saw([]byte(dataMagic)) || rec.saw([]byte(controlMagic)) {
		t.Error("the recorder did not see the plain data connections, or saw the control connection in clear")
	}
	pinned, err := PinnedTLS(CertPin(x))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := (&Client{TLS: pinned}).Run(ctx, addr, quick(model.TestConfig{})); err != nil {
		t.Fatalf("pinned: %v", err)
	}
	other, ox := perftest.SelfSigned(t)
	_ = other
	wrong, _ := PinnedTLS(CertPin(ox))
	if _, err := (&Client{TLS: wrong}).Run(ctx, addr, quick(model.TestConfig{})); fault.CodeOf(err) != fault.TLS || !strings.Contains(err.Error(), "pin") {
		t.Errorf("a wrong pin: %v", err)
	}
	if _, err := (&Client{TLS: &tls.Config{}}).Run(ctx, addr, quick(model.TestConfig{})); fault.CodeOf(err) != fault.TLS || !strings.Contains(fault.HintOf(err), "{tls_pin}") {
		t.Errorf("an untrusted certificate: %v (hint %q)", err, fault.HintOf(err))
	}
	if _, err := (&Client{}).Run(ctx, addr, quick(model.TestConfig{})); fault.CodeOf(err) != fault.TLS || !strings.Contains(err.Error(), "TLS only") {
		t.Errorf("a plain client: %v", err)
	}
	if _, err := PinnedTLS("sha256/short"); err == nil {
		t.Error("a malformed pin was taken")
	}
}
