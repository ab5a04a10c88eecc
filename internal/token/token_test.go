package token

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func keys(t *testing.T) (ed, hm *Key) {
	t.Helper()
	priv, _, err := GenerateEd25519(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if ed, err = ParseKey(priv); err != nil {
		t.Fatal(err)
	}
	secret, err := GenerateSecret(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	if hm, err = ParseKey(secret); err != nil {
		t.Fatal(err)
	}
	return ed, hm
}

func claims() Claims {
	return Claims{Issuer: "gigasunet", Subject: "alice", Audience: []string{"ts1.example.net"}, Expiry: t0.Add(5 * time.Minute), IssuedAt: t0, ID: "x1"}
}

func TestRoundTrip(t *testing.T) {
	ed, hm := keys(t)
	for _, k := range []*Key{ed, hm} {
		tok, err := Issue(k, claims())
		if err != nil {
			t.Fatal(err)
		}
		v := &Verifier{Keys: []*Key{ed, hm}, Issuer: "gigasunet", Audience: "ts1.example.net"}
		c, err := v.Verify(tok, t0.Add(time.Minute))
		if err != nil {
			t.Fatalf("%s: %v", k.Alg(), err)
		}
		if c.Subject != "alice" || !c.Expiry.Equal(t0.Add(5*time.Minute)) || c.ID != "x1" || !c.IssuedAt.Equal(t0) {
			t.Errorf("%s: claims %+v", k.Alg(), c)
		}
	}
}

func TestRefusals(t *testing.T) {
	ed, hm := keys(t)
	good, _ := Issue(ed, claims())
	v := &Verifier{Keys: []*Key{ed}, Issuer: "gigasunet", Audience: "ts1.example.net", MaxLifetime: 10 * time.Minute}
	other, _ := keys(t)
	byOther, _ := Issue(other, claims())
	byHMAC, _ := Issue(hm, claims())
	noExp := sign(t, hm, `{"alg":"HS256"}`, `{"sub":"a"}`)
	pub := ed.pub
	// The classic confusion: an HMAC token whose secret is the server's
	// public key, which anybody has.
	confused := sign(t, &Key{alg: HS256, secret: pub}, `{"alg":"HS256","kid":"`+ed.ID+`"}`, `{"exp":9999999999,"aud":"ts1.example.net","iss":"gigasunet"}`)
	none := b64.EncodeToString([]byte(`{"alg":"none"}`)) + "." + b64.EncodeToString([]byte(`{"exp":9999999999}`)) + "."
	c := claims()
	c.Audience = []string{"ts2.example.net", "ts3.example.net"}
	otherAud, _ := Issue(ed, c)
	c = claims()
	c.Issuer = "mallory"
	otherIss, _ := Issue(ed, c)
	c = claims()
	c.Expiry = t0.Add(24 * time.Hour)
	long, _ := Issue(ed, c)
	c = claims()
	c.NotBefore = t0.Add(3 * time.Minute)
	later, _ := Issue(ed, c)
	parts := strings.Split(good, ".")
	tampered := parts[0] + "." + b64.EncodeToString([]byte(`{"sub":"root","exp":9999999999,"aud":"ts1.example.net","iss":"gigasunet"}`)) + "." + parts[2]
	for _, tc := range []struct {
		name, tok, want string
		at              time.Time
	}{
		{"empty", "", "missing", t0},
		{"other key", byOther, "unknown key", t0},
		{"hmac without its key", byHMAC, "unknown key", t0},
		{"alg confusion", confused, "unknown key", t0},
		{"alg none", none, "unknown key", t0},
		{"tampered claims", tampered, "signature does not verify", t0},
		{"expired", good, "expired", t0.Add(5 * time.Minute)},
		{"not yet", later, "not valid before", t0},
		{"audience", otherAud, "not for this server", t0},
		{"issuer", otherIss, `issuer "mallory"`, t0},
		{"lifetime", long, "longer than this server allows", t0},
		{"two parts", "a.b", "malformed", t0},
		{"huge", strings.Repeat("a", 5000), "too long", t0},
		{"bad base64", "a.b.c*", "malformed", t0},
	} {
		_, err := v.Verify(tc.tok, tc.at)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
	v2 := &Verifier{Keys: []*Key{hm}}
	if _, err := v2.Verify(noExp, t0); err == nil || !strings.Contains(err.Error(), "no expiry") {
		t.Errorf("no expiry: %v", err)
	}
	// Leeway tolerates a clock a little behind.
	v.Leeway = 30 * time.Second
	if _, err := v.Verify(good, t0.Add(5*time.Minute+10*time.Second)); err != nil {
		t.Errorf("within the leeway: %v", err)
	}
}

func sign(t *testing.T, k *Key, header, payload string) string {
	t.Helper()
	in := b64.EncodeToString([]byte(header)) + "." + b64.EncodeToString([]byte(payload))
	m := hmac.New(sha256.New, k.secret)
	m.Write([]byte(in))
	return in + "." + b64.EncodeToString(m.Sum(nil))
}

// Several keys: a token names its key; without a kid it needs a key of its
// algorithm that is the only one.
func TestKeySelection(t *testing.T) {
	a, _ := keys(t)
	b, _ := keys(t)
	tok, _ := Issue(b, claims())
	v := &Verifier{Keys: []*Key{a, b}}
	if _, err := v.Verify(tok, t0); err != nil {
		t.Fatalf("by kid: %v", err)
	}
	a.ID, b.ID = "", ""
	tok, _ = Issue(b, claims())
	if _, err := v.Verify(tok, t0); err == nil {
		t.Fatal("two unnamed Ed25519 keys: a token without kid verified")
	}
	v.Keys = []*Key{b}
	if _, err := v.Verify(tok, t0); err != nil {
		t.Fatalf("one unnamed key: %v", err)
	}
}

func TestKeyFiles(t *testing.T) {
	priv, pub, err := GenerateEd25519(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	sk, err := ParseKey(priv)
	if err != nil || !sk.CanSign() {
		t.Fatalf("private: %v", err)
	}
	pk, err := ParseKey(pub)
	if err != nil || pk.CanSign() || pk.ID != sk.ID {
		t.Fatalf("public: %v, id %q vs %q", err, pk.ID, sk.ID)
	}
	if _, err := Issue(pk, claims()); err == nil {
		t.Error("issued with a public key")
	}
	tok, _ := Issue(sk, claims())
	if _, err := (&Verifier{Keys: []*Key{pk}}).Verify(tok, t0); err != nil {
		t.Errorf("public key verifying its private key's token: %v", err)
	}
	// A JSON Web Key, as M-Lab publishes its verifying keys.
	j, _ := json.Marshal(map[string]string{"kty": "OKP", "crv": "Ed25519", "alg": "EdDSA", "kid": "locate_20200409", "x": b64.EncodeToString(sk.pub)})
	jk, err := ParseKey(j)
	if err != nil || jk.ID != "locate_20200409" || jk.CanSign() {
		t.Fatalf("JWK: %v %+v", err, jk)
	}
	seed := sk.priv.Seed()
	j, _ = json.Marshal(map[string]string{"kty": "OKP", "crv": "Ed25519", "x": b64.EncodeToString(sk.pub), "d": b64.EncodeToString(seed)})
	if jk, err := ParseKey(j); err != nil || !jk.CanSign() {
		t.Fatalf("private JWK: %v", err)
	}
	for _, bad := range []string{"short secret", `{"kty":"RSA"}`, "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"} {
		if _, err := ParseKey([]byte(bad)); err == nil {
			t.Errorf("%q taken as a key", bad)
		}
	}
}

// A key openssl made is taken: operators make keys with the tools they
// have.
func TestOpenSSLKey(t *testing.T) {
	if _, err := exec.LookPath("openssl"); err != nil {
		t.Skip("openssl not installed")
	}
	dir := t.TempDir()
	key := filepath.Join(dir, "k.pem")
	if out, err := exec.Command("openssl", "genpkey", "-algorithm", "ed25519", "-out", key).CombinedOutput(); err != nil {
		t.Skipf("openssl genpkey: %v %s", err, out)
	}
	b, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	if k, err := ParseKey(b); err != nil || !k.CanSign() {
		t.Fatalf("openssl's Ed25519 key: %v", err)
	}
}

// Any change to a token's text makes it fail: there is one text per token.
func FuzzVerify(f *testing.F) {
	k, _ := NewHMAC("k", []byte(strings.Repeat("s", 32)))
	good, _ := Issue(k, claims())
	f.Add(good, 0, byte('A'))
	f.Add(good, len(good)-1, byte('B'))
	f.Fuzz(func(t *testing.T, tok string, at int, b byte) {
		if at >= 0 && at < len(tok) {
			tok = tok[:at] + string(b) + tok[at+1:]
		}
		v := &Verifier{Keys: []*Key{k}}
		if _, err := v.Verify(tok, t0); err == nil && tok != good {
			t.Fatalf("a changed token verified: %q", tok)
		}
	})
}
