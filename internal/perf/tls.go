package perf

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// TLS protects the native control connection: the hello (with its access
// token), the welcome (the test's cookie and its streams' keys) and the
// results. The data connections stay plain TCP: they are what is
// measured, and encrypting them would measure the cipher. A stream's key
// is seen on the wire only as its stream claims it, once.

// ALPN is the native protocol's ID in TLS's application-layer protocol
// negotiation: the server's port also serves HTTP/2 and HTTP/1.1 inside
// TLS, and a client that names its protocol goes to it directly.
const ALPN = "tcpscope/1"

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
		return &tls.Config{NextProtos: []string{ALPN}}, nil
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return nil, errors.New("no PEM certificate found")
	}
	return &tls.Config{RootCAs: roots, NextProtos: []string{ALPN}}, nil
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
		NextProtos:         []string{ALPN},
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
