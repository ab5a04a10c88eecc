// Package token issues and verifies access tokens for a test server: JSON
// Web Tokens in compact form (RFC 7519), signed with Ed25519 ("EdDSA",
// RFC 8037) as M-Lab's locate service signs the access_token it hands to
// ndt7 clients, or with a shared secret (HMAC-SHA256, "HS256") for a
// single operator. A token names its issuer, its subject (who tests), the
// servers it is for (audience) and when it expires; the server admits a
// test only with a token that verifies on all four.
//
// Only these two algorithms are accepted, and a key is bound to its
// algorithm: a token cannot choose "none", nor have an Ed25519 public
// key used as an HMAC secret.
package token

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Algorithms.
const (
	EdDSA = "EdDSA"
	HS256 = "HS256"
)

// maxTokenLen bounds what a client may hand in: a token is a few hundred
// bytes; anything far larger is not one, and is not decoded.
const maxTokenLen = 4096

// Claims are what a token says.
type Claims struct {
	Issuer    string
	Subject   string
	Audience  []string
	Expiry    time.Time
	NotBefore time.Time // zero: none
	IssuedAt  time.Time // zero: none
	ID        string
}

// wireClaims is the JSON of a token's claims: times in seconds since
// the epoch, an audience as a string or a list (RFC 7519 allows both).
type wireClaims struct {
	Iss string   `json:"iss,omitempty"`
	Sub string   `json:"sub,omitempty"`
	Aud audience `json:"aud,omitempty"`
	Exp *int64   `json:"exp,omitempty"`
	Nbf *int64   `json:"nbf,omitempty"`
	Iat *int64   `json:"iat,omitempty"`
	Jti string   `json:"jti,omitempty"`
}

type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = audience{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return errors.New("aud is neither a string nor a list of strings")
	}
	*a = many
	return nil
}

type header struct {
	Alg string `json:"alg"`
	Typ string `json:"typ,omitempty"`
	Kid string `json:"kid,omitempty"`
}

// Key signs or verifies tokens of one algorithm.
type Key struct {
	ID  string // the header's kid: which key, when a server knows several
	alg string
	// One of these, by alg: an Ed25519 private key (signs and verifies),
	// an Ed25519 public key (verifies), or an HMAC secret (both).
	priv   ed25519.PrivateKey
	pub    ed25519.PublicKey
	secret []byte
}

// Alg is the key's algorithm.
func (k *Key) Alg() string { return k.alg }

// CanSign says whether the key can issue tokens (a public key cannot).
func (k *Key) CanSign() bool { return k.priv != nil || k.secret != nil }

// minSecret is the shortest HMAC secret taken: RFC 7518 asks for a key
// as long as the hash.
const minSecret = 32

// NewEd25519 is a key from an Ed25519 private key.
func NewEd25519(id string, priv ed25519.PrivateKey) *Key {
	return &Key{ID: id, alg: EdDSA, priv: priv, pub: priv.Public().(ed25519.PublicKey)}
}

// NewEd25519Public is a verifying key from an Ed25519 public key.
func NewEd25519Public(id string, pub ed25519.PublicKey) *Key {
	return &Key{ID: id, alg: EdDSA, pub: pub}
}

// NewHMAC is a key from a shared secret of at least 32 bytes.
func NewHMAC(id string, secret []byte) (*Key, error) {
	if len(secret) < minSecret {
		return nil, fmt.Errorf("an HMAC secret of %d bytes is too short: use at least %d", len(secret), minSecret)
	}
	return &Key{ID: id, alg: HS256, secret: slices.Clone(secret)}, nil
}

// b64 encodes; b64Strict decodes, refusing non-zero padding bits, so
// that one token has one text: any change to it is a change the
// signature sees.
var (
	b64       = base64.RawURLEncoding
	b64Strict = base64.RawURLEncoding.Strict()
)

// Issue signs claims into a token.
func Issue(k *Key, c Claims) (string, error) {
	if !k.CanSign() {
		return "", errors.New("a public key cannot sign: issue with the private key or the secret")
	}
	if c.Expiry.IsZero() {
		return "", errors.New("a token needs an expiry")
	}
	h, err := json.Marshal(header{Alg: k.alg, Typ: "JWT", Kid: k.ID})
	if err != nil {
		return "", err
	}
	w := wireClaims{Iss: c.Issuer, Sub: c.Subject, Aud: c.Audience, Jti: c.ID}
	exp := c.Expiry.Unix()
	w.Exp = &exp
	if !c.NotBefore.IsZero() {
		nbf := c.NotBefore.Unix()
		w.Nbf = &nbf
	}
	if !c.IssuedAt.IsZero() {
		iat := c.IssuedAt.Unix()
		w.Iat = &iat
	}
	p, err := json.Marshal(w)
	if err != nil {
		return "", err
	}
	signing := b64.EncodeToString(h) + "." + b64.EncodeToString(p)
	return signing + "." + b64.EncodeToString(k.sign([]byte(signing))), nil
}

func (k *Key) sign(msg []byte) []byte {
	if k.alg == EdDSA {
		return ed25519.Sign(k.priv, msg)
	}
	m := hmac.New(sha256.New, k.secret)
	m.Write(msg)
	return m.Sum(nil)
}

func (k *Key) verify(msg, sig []byte) bool {
	if k.alg == EdDSA {
		return len(sig) == ed25519.SignatureSize && ed25519.Verify(k.pub, msg, sig)
	}
	return hmac.Equal(k.sign(msg), sig)
}

// Verifier checks tokens against its keys and expectations.
type Verifier struct {
	Keys []*Key
	// Issuer, when set, must be the token's; Audience, when set, must be
	// among the token's.
	Issuer   string
	Audience string
	// Leeway tolerates clocks this far apart on expiry and not-before.
	Leeway time.Duration
	// MaxLifetime, when set, refuses tokens valid for longer than this
	// from now: a leaked long-lived token is a standing pass.
	MaxLifetime time.Duration
}

// Error is why a token was refused; its text is safe to tell the client.
type Error struct{ Reason string }

func (e *Error) Error() string { return "access token " + e.Reason }

func refuse(format string, args ...any) error { return &Error{Reason: fmt.Sprintf(format, args...)} }

// Verify checks a token at time now and returns its claims.
func (v *Verifier) Verify(tok string, now time.Time) (Claims, error) {
	if tok == "" {
		return Claims{}, refuse("missing")
	}
	if len(tok) > maxTokenLen {
		return Claims{}, refuse("too long (%d bytes)", len(tok))
	}
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return Claims{}, refuse("malformed: not three dot-separated parts")
	}
	hb, err1 := b64Strict.DecodeString(parts[0])
	pb, err2 := b64Strict.DecodeString(parts[1])
	sig, err3 := b64Strict.DecodeString(parts[2])
	if err := errors.Join(err1, err2, err3); err != nil {
		return Claims{}, refuse("malformed: bad base64url")
	}
	var h header
	if err := json.Unmarshal(hb, &h); err != nil {
		return Claims{}, refuse("malformed: bad header")
	}
	key := v.keyFor(h)
	if key == nil {
		return Claims{}, refuse("signed with an unknown key or algorithm (alg %q, kid %q)", h.Alg, h.Kid)
	}
	if !key.verify([]byte(parts[0]+"."+parts[1]), sig) {
		return Claims{}, refuse("signature does not verify")
	}
	var w wireClaims
	if err := json.Unmarshal(pb, &w); err != nil {
		return Claims{}, refuse("malformed: bad claims")
	}
	c := Claims{Issuer: w.Iss, Subject: w.Sub, Audience: w.Aud, ID: w.Jti}
	if w.Exp == nil {
		return Claims{}, refuse("has no expiry")
	}
	c.Expiry = time.Unix(*w.Exp, 0)
	if w.Nbf != nil {
		c.NotBefore = time.Unix(*w.Nbf, 0)
	}
	if w.Iat != nil {
		c.IssuedAt = time.Unix(*w.Iat, 0)
	}
	switch {
	case !now.Before(c.Expiry.Add(v.Leeway)):
		return Claims{}, refuse("expired at %s", c.Expiry.UTC().Format(time.RFC3339))
	case !c.NotBefore.IsZero() && now.Add(v.Leeway).Before(c.NotBefore):
		return Claims{}, refuse("not valid before %s", c.NotBefore.UTC().Format(time.RFC3339))
	case v.MaxLifetime > 0 && c.Expiry.Sub(now) > v.MaxLifetime+v.Leeway:
		return Claims{}, refuse("valid for longer than this server allows (%v)", v.MaxLifetime)
	case v.Issuer != "" && c.Issuer != v.Issuer:
		return Claims{}, refuse("from issuer %q, not %q", c.Issuer, v.Issuer)
	case v.Audience != "" && !slices.Contains(c.Audience, v.Audience):
		return Claims{}, refuse("not for this server (audience %q)", strings.Join(c.Audience, ","))
	}
	return c, nil
}

// keyFor is the key that verifies a token with header h, of the
// token's algorithm: the one whose ID is the token's kid, or, failing
// that, the only one of the algorithm without an ID. (The algorithm
// must be the key's own: the token does not choose how it is checked.)
func (v *Verifier) keyFor(h header) *Key {
	var unnamed []*Key
	for _, k := range v.Keys {
		if k.alg != h.Alg {
			continue
		}
		if h.Kid != "" && k.ID == h.Kid {
			return k
		}
		if k.ID == "" || h.Kid == "" {
			unnamed = append(unnamed, k)
		}
	}
	if len(unnamed) == 1 {
		return unnamed[0]
	}
	return nil
}
