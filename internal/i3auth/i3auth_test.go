package i3auth

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var now = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

func setup(t *testing.T) (*Authenticator, *rsa.PublicKey) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	users := filepath.Join(t.TempDir(), "users.csv")
	content := "# iperf3 users\n\nbob,0000\nalice," + PasswordHash("alice", "s3cret") + "\r\nnocomma\n"
	if err := os.WriteFile(users, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return &Authenticator{Key: key, UsersFile: users}, &key.PublicKey
}

func TestCheck(t *testing.T) {
	a, pub := setup(t)
	for _, pkcs1 := range []bool{false, true} {
		a.PKCS1 = pkcs1
		tok, err := Credentials(pub, "alice", "s3cret", now.Add(-3*time.Second), pkcs1)
		if err != nil {
			t.Fatal(err)
		}
		if user, err := a.Check(tok, now); err != nil || user != "alice" {
			t.Errorf("pkcs1 %v: %q %v", pkcs1, user, err)
		}
	}
	a.PKCS1 = false
	old, _ := Credentials(pub, "alice", "s3cret", now, true)
	wrong, _ := Credentials(pub, "alice", "guess", now, false)
	stranger, _ := Credentials(pub, "carol", "s3cret", now, false)
	late, _ := Credentials(pub, "alice", "s3cret", now.Add(-11*time.Second), false)
	other, _ := rsa.GenerateKey(rand.Reader, 2048)
	foreign, _ := Credentials(&other.PublicKey, "alice", "s3cret", now, false)
	for _, tc := range []struct{ name, tok, want string }{
		{"none", "", "no credentials"},
		{"v1.5 padding not allowed", old, "--use-pkcs1-padding"},
		{"wrong password", wrong, `user "alice" unknown or wrong password`},
		{"unknown user", stranger, `user "carol" unknown`},
		{"clock skew", late, "clock is 11s behind the server's"},
		{"another server's key", foreign, "cannot decrypt"},
		{"not base64", "!!!", "not base64"},
		{"huge", strings.Repeat("A", 4096), "authtoken of 4096 bytes"},
	} {
		_, err := a.Check(tc.tok, now)
		if !errors.Is(err, ErrDenied) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.want)
		}
	}
}

func TestParsePrivateKey(t *testing.T) {
	key, _ := rsa.GenerateKey(rand.Reader, 1024)
	pkcs1 := pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)})
	der, _ := x509.MarshalPKCS8PrivateKey(key)
	pkcs8 := pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})
	for _, b := range [][]byte{pkcs1, pkcs8} {
		if k, err := ParsePrivateKey(b); err != nil || !k.Equal(key) {
			t.Errorf("%.30s: %v", b, err)
		}
	}
	if _, err := ParsePrivateKey([]byte("nope")); err == nil {
		t.Error("garbage taken as a key")
	}
}
