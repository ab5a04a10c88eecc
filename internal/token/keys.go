package token

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
)

// ParseKey reads a key file's contents: an Ed25519 private key (PEM
// "PRIVATE KEY", as openssl genpkey -algorithm ed25519 writes it) or
// public key (PEM "PUBLIC KEY"), an Ed25519 JSON Web Key (as M-Lab
// publishes its token-verifying keys), or an HMAC secret (any other
// text, at least 32 bytes, surrounding whitespace ignored).
func ParseKey(data []byte) (*Key, error) {
	t := bytes.TrimSpace(data)
	switch {
	case bytes.HasPrefix(t, []byte("-----BEGIN")):
		return parsePEM(t)
	case bytes.HasPrefix(t, []byte("{")):
		return parseJWK(t)
	}
	return NewHMAC(secretID(t), t)
}

func parsePEM(data []byte) (*Key, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("not a PEM block")
	}
	switch b.Type {
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("private key: %w", err)
		}
		priv, ok := k.(ed25519.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("a %T private key: tokens take Ed25519", k)
		}
		return NewEd25519(publicID(priv.Public().(ed25519.PublicKey)), priv), nil
	case "PUBLIC KEY":
		k, err := x509.ParsePKIXPublicKey(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("public key: %w", err)
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("a %T public key: tokens take Ed25519", k)
		}
		return NewEd25519Public(publicID(pub), pub), nil
	}
	return nil, fmt.Errorf("a PEM %q block: want PRIVATE KEY or PUBLIC KEY (Ed25519)", b.Type)
}

// jwk is an Ed25519 JSON Web Key (RFC 8037): kty OKP, crv Ed25519, the
// public key in x and, for a private one, the seed in d.
type jwk struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	D   string `json:"d"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
}

func parseJWK(data []byte) (*Key, error) {
	var j jwk
	if err := json.Unmarshal(data, &j); err != nil {
		return nil, fmt.Errorf("JSON Web Key: %w", err)
	}
	if j.Kty != "OKP" || j.Crv != "Ed25519" || (j.Alg != "" && j.Alg != EdDSA) {
		return nil, fmt.Errorf("a JSON Web Key of kty %q, crv %q, alg %q: want OKP, Ed25519, EdDSA", j.Kty, j.Crv, j.Alg)
	}
	x, err := b64.DecodeString(j.X)
	if err != nil || len(x) != ed25519.PublicKeySize {
		return nil, errors.New("JSON Web Key: x is not an Ed25519 public key")
	}
	pub := ed25519.PublicKey(x)
	id := j.Kid
	if id == "" {
		id = publicID(pub)
	}
	if j.D == "" {
		return NewEd25519Public(id, pub), nil
	}
	d, err := b64.DecodeString(j.D)
	if err != nil || len(d) != ed25519.SeedSize {
		return nil, errors.New("JSON Web Key: d is not an Ed25519 seed")
	}
	priv := ed25519.NewKeyFromSeed(d)
	if !bytes.Equal(priv.Public().(ed25519.PublicKey), pub) {
		return nil, errors.New("JSON Web Key: d and x are not one key")
	}
	return NewEd25519(id, priv), nil
}

// publicID names a public key: a short hash of it, the same wherever the
// key is loaded from.
func publicID(pub ed25519.PublicKey) string {
	h := sha256.Sum256(pub)
	return b64.EncodeToString(h[:9])
}

// secretID names a secret by a hash that does not reveal it (a 256-bit
// secret cannot be found from 72 bits of its hash).
func secretID(secret []byte) string {
	h := sha256.Sum256(append([]byte("tcpscope token secret "), secret...))
	return b64.EncodeToString(h[:9])
}

// GenerateEd25519 makes a new Ed25519 key pair from random (the
// caller's source: crypto/rand's Reader for a real key) as PEM: the
// private key (PKCS #8) to issue with, the public key (PKIX) for servers
// to verify with.
func GenerateEd25519(random io.Reader) (private, public []byte, err error) {
	pub, priv, err := ed25519.GenerateKey(random)
	if err != nil {
		return nil, nil, err
	}
	pk, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, nil, err
	}
	pb, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: pk}), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pb}), nil
}

// GenerateSecret makes a new HMAC secret: 32 bytes from random (the
// caller's source: crypto/rand's Reader for a real secret), as base64url
// text (the text is the secret).
func GenerateSecret(random io.Reader) ([]byte, error) {
	b := make([]byte, 32)
	if _, err := io.ReadFull(random, b); err != nil {
		return nil, err
	}
	return []byte(b64.EncodeToString(b) + "\n"), nil
}
