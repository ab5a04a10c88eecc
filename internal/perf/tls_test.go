package perf

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/hex"
	"io"
	"math/big"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tcpscope/tcpscope/internal/model"
)

// selfSigned is a certificate for 127.0.0.1 and localhost.
func selfSigned(t *testing.T) (tls.Certificate, *x509.Certificate) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "tcpscope test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, cert
}

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
	cert, x := selfSigned(t)
	srv := &Server{Version: "test", TLS: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}}
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
	plainProxy, plainRec := record(t, serveWith(t, &Server{Version: "test"}))
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
	other, ox := selfSigned(t)
	_ = other
	wrong, _ := PinnedTLS(CertPin(ox))
	if _, err := (&Client{TLS: wrong}).Run(ctx, addr, quick(model.TestConfig{})); CodeOf(err) != CodeTLS || !strings.Contains(err.Error(), "pin") {
		t.Errorf("a wrong pin: %v", err)
	}
	if _, err := (&Client{TLS: &tls.Config{}}).Run(ctx, addr, quick(model.TestConfig{})); CodeOf(err) != CodeTLS || !strings.Contains(HintOf(err), "--tls-pin") {
		t.Errorf("an untrusted certificate: %v (hint %q)", err, HintOf(err))
	}
	if _, err := (&Client{}).Run(ctx, addr, quick(model.TestConfig{})); CodeOf(err) != CodeTLS || !strings.Contains(err.Error(), "TLS only") {
		t.Errorf("a plain client: %v", err)
	}
	if _, err := PinnedTLS("sha256/short"); err == nil {
		t.Error("a malformed pin was taken")
	}
}
