package perf

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"
)

// TLS protects the native control connection: the hello (with its access
// token), the welcome (the test's cookie and its streams' keys) and the
// results. The data connections stay plain TCP: they are what is
// measured, and encrypting them would measure the cipher. A stream's key
// is seen on the wire only as its stream claims it, once.

// tlsRecordHandshake is the first byte of a TLS ClientHello record: a
// connection that starts with it is TLS, not one of the protocols' magic
// strings (upper-case ASCII) or an iperf3 cookie (a-z, 2-7).
const tlsRecordHandshake = 0x16

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

// serveTLS completes a TLS handshake on a connection whose first bytes
// (head) were read, then serves the native control connection inside it.
func (s *Server) serveTLS(ctx context.Context, c *net.TCPConn, head []byte, admitted func()) {
	tc := tls.Server(&prefixConn{Conn: c, prefix: head}, s.TLS)
	_ = c.SetDeadline(time.Now().Add(handshakeTimeout))
	if err := tc.HandshakeContext(ctx); err != nil {
		s.Logger.Debug("tls handshake", "remote", c.RemoteAddr(), "err", err)
		c.Close()
		return
	}
	_ = c.SetDeadline(time.Time{})
	_ = tc.SetReadDeadline(time.Now().Add(handshakeTimeout))
	var magic [magicLen]byte
	if _, err := io.ReadFull(tc, magic[:]); err != nil || string(magic[:]) != controlMagic {
		tc.Close()
		return
	}
	s.control(ctx, tc, admitted)
}

// LoadServerTLS reads a certificate and its private key (PEM files) as
// the server's TLS configuration, TLS 1.3 only, and returns the
// certificate's pin for clients to pin it by.
func LoadServerTLS(certFile, keyFile string) (*tls.Config, string, error) {
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, "", err // tls names the file and what is wrong with it
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		return nil, "", fmt.Errorf("parse certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS13}, CertPin(leaf), nil
}

// RootsTLS is a client TLS configuration that trusts the CA certificates
// in pem; with pem nil, the system's roots.
func RootsTLS(pem []byte) (*tls.Config, error) {
	if pem == nil {
		return &tls.Config{}, nil
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, errors.New("no PEM certificate found")
	}
	return &tls.Config{RootCAs: roots}, nil
}

// CertPin is a certificate's pin as a client gives it (--tls-pin):
// "sha256/" and the base64 of the SHA-256 of its public key
// (SubjectPublicKeyInfo), as HTTP public key pinning wrote them. It
// survives a renewal that keeps the key.
func CertPin(cert *x509.Certificate) string {
	h := sha256.Sum256(cert.RawSubjectPublicKeyInfo)
	return "sha256/" + base64.StdEncoding.EncodeToString(h[:])
}

// PinnedTLS is a client TLS configuration that trusts exactly the server
// whose certificate has this pin, whoever signed it (a self-signed one
// included): the chain is not checked, the key is.
func PinnedTLS(pin string) (*tls.Config, error) {
	raw, ok := strings.CutPrefix(pin, "sha256/")
	if b, err := base64.StdEncoding.DecodeString(raw); !ok || err != nil || len(b) != sha256.Size {
		return nil, fmt.Errorf("pin %q: want sha256/ and the base64 of 32 bytes, as the server prints it", pin)
	}
	return &tls.Config{
		MinVersion:         tls.VersionTLS13,
		InsecureSkipVerify: true, // the pin below is the check
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return errors.New("the server sent no certificate")
			}
			if got := CertPin(cs.PeerCertificates[0]); got != pin {
				return fmt.Errorf("the server's certificate has pin %s, not the pinned %s", got, pin)
			}
			return nil
		},
	}, nil
}
