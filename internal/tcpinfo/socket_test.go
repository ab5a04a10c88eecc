package tcpinfo_test

import (
	"crypto/tls"
	"crypto/x509"
	"io"
	"net"
	"runtime"
	"testing"

	"github.com/tcpscope/tcpscope/internal/model"
	"github.com/tcpscope/tcpscope/internal/perf/perftest"
	"github.com/tcpscope/tcpscope/internal/tcpinfo"
)

// A connection wrapped in TLS is read through the socket beneath it; a
// connection that is no socket says so.
func TestSocketBeneathTLS(t *testing.T) {
	cert, leaf := perftest.SelfSigned(t)
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = io.Copy(c, c)
	}()
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	c, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: roots})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	sc, err := tcpinfo.Socket(c)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := sc.(*net.TCPConn); !ok {
		t.Fatalf("the socket beneath TLS is a %T", sc)
	}
	if runtime.GOOS == "linux" {
		s, err := tcpinfo.Read(sc)
		if err != nil || s.State != model.TCPEstablished {
			t.Errorf("tcp_info through TLS: state %v, %v", s.State, err)
		}
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if _, err := tcpinfo.Socket(a); err == nil {
		t.Error("a pipe read as a socket")
	}
}
