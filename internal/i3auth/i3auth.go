// Package i3auth is stock iperf3's own client authentication, as an
// iperf3 server checks it (iperf3 3.2 and later, built with OpenSSL): the
// client encrypts "user: NAME\npwd:  PASSWORD\nts:   UNIXTIME" to the
// server's RSA public key (--rsa-public-key-path) and sends it base64 as
// "authtoken" in its parameters; the server decrypts it with its private
// key, checks the time against its own within a skew, and the user and
// password against an authorized-users file of lines
// "name,sha256hex({name}password)" ('#' starts a comment).
//
// Padding: OAEP (OpenSSL's default, SHA-1 with MGF1-SHA-1), as iperf3
// 3.17 and later send; PKCS #1 v1.5, as earlier clients send, only when
// the operator allows it (iperf3's --use-pkcs1-padding), because a server
// that answers differently to good and bad v1.5 padding is a decryption
// oracle (CVE-2024-26306).
package i3auth

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// DefaultSkew is iperf3's default --time-skew-threshold.
const DefaultSkew = 10 * time.Second

// maxToken bounds an authtoken: base64 of one RSA block, 4096-bit keys
// and some: anything larger is not decrypted.
const maxToken = 2048

// Authenticator checks iperf3 authtokens.
type Authenticator struct {
	Key *rsa.PrivateKey
	// UsersFile is read at every check, as iperf3 reads it: users are
	// added and removed without a restart.
	UsersFile string
	Skew      time.Duration
	// PKCS1 also accepts PKCS #1 v1.5 padding (clients before 3.17).
	PKCS1 bool
}

// ErrDenied is every refusal's error: the client is told only that the
// test was not authorized, whatever failed.
var ErrDenied = errors.New("iperf3 authentication failed")

// Check decrypts and checks an authtoken at time now and returns the
// user it names. Its error says why, for the server's log; the client is
// told only ErrDenied.
func (a *Authenticator) Check(authtoken string, now time.Time) (string, error) {
	if authtoken == "" {
		return "", fmt.Errorf("%w: no credentials (the client needs --username and --rsa-public-key-path)", ErrDenied)
	}
	if len(authtoken) > maxToken {
		return "", fmt.Errorf("%w: authtoken of %d bytes", ErrDenied, len(authtoken))
	}
	ct, err := base64.StdEncoding.DecodeString(authtoken)
	if err != nil {
		return "", fmt.Errorf("%w: authtoken is not base64", ErrDenied)
	}
	pt, err := rsa.DecryptOAEP(sha1.New(), nil, a.Key, ct, nil)
	if err != nil && a.PKCS1 {
		pt, err = rsa.DecryptPKCS1v15(nil, a.Key, ct)
	}
	if err != nil {
		hint := ""
		if !a.PKCS1 {
			hint = " (clients before iperf3 3.17 pad with PKCS #1 v1.5: the server's --use-pkcs1-padding accepts them)"
		}
		return "", fmt.Errorf("%w: cannot decrypt the credentials with the server's key%s", ErrDenied, hint)
	}
	user, password, ts, err := parseText(string(pt))
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrDenied, err)
	}
	skew := a.Skew
	if skew <= 0 {
		skew = DefaultSkew
	}
	if d := now.Sub(time.Unix(ts, 0)); d > skew || d < -skew {
		way := "behind"
		if d < 0 {
			way, d = "ahead of", -d
		}
		return user, fmt.Errorf("%w: user %q: the client's clock is %v %s the server's (threshold %v)", ErrDenied, user, d.Round(time.Second), way, skew)
	}
	users, err := os.ReadFile(a.UsersFile)
	if err != nil {
		return user, fmt.Errorf("%w: read the authorized-users file: %v", ErrDenied, err)
	}
	if !authorized(users, user, password) {
		return user, fmt.Errorf("%w: user %q unknown or wrong password", ErrDenied, user)
	}
	return user, nil
}

// parseText reads iperf3's credential text. Its format is scanned with
// %s, so a name or password is one word.
func parseText(s string) (user, password string, ts int64, err error) {
	lines := strings.Split(s, "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "user: ") || !strings.HasPrefix(lines[1], "pwd:  ") || !strings.HasPrefix(lines[2], "ts:   ") {
		return "", "", 0, errors.New("credentials not in iperf3's format")
	}
	user = strings.TrimSpace(strings.TrimPrefix(lines[0], "user: "))
	password = strings.TrimSpace(strings.TrimPrefix(lines[1], "pwd:  "))
	ts, err = strconv.ParseInt(strings.TrimSpace(strings.TrimPrefix(lines[2], "ts:   ")), 10, 64)
	if err != nil || user == "" {
		return "", "", 0, errors.New("credentials not in iperf3's format")
	}
	return user, password, ts, nil
}

// authorized looks the user up in an authorized-users file's contents.
func authorized(file []byte, user, password string) bool {
	want := []byte(PasswordHash(user, password))
	ok := false
	for _, line := range strings.Split(string(file), "\n") {
		line = strings.TrimRight(line, "\r")
		if line == "" || line[0] == '#' {
			continue
		}
		name, hash, found := strings.Cut(line, ",")
		if !found || name != user {
			continue
		}
		hash, _, _ = strings.Cut(hash, ",")
		if subtle.ConstantTimeCompare([]byte(strings.ToLower(hash)), want) == 1 {
			ok = true
		}
	}
	return ok
}

// PasswordHash is a password as an authorized-users file holds it:
// SHA-256 of "{user}password", in hex.
func PasswordHash(user, password string) string {
	h := sha256.Sum256([]byte("{" + user + "}" + password))
	return hex.EncodeToString(h[:])
}

// Credentials are what an iperf3 client sends: the authtoken for user
// and password at time now, to the server's public key.
func Credentials(pub *rsa.PublicKey, user, password string, now time.Time, pkcs1 bool) (string, error) {
	text := fmt.Sprintf("user: %s\npwd:  %s\nts:   %d", user, password, now.Unix())
	var ct []byte
	var err error
	if pkcs1 {
		ct, err = rsa.EncryptPKCS1v15(rand.Reader, pub, []byte(text))
	} else {
		ct, err = rsa.EncryptOAEP(sha1.New(), rand.Reader, pub, []byte(text), nil)
	}
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(ct), nil
}

// ParsePrivateKey reads an RSA private key in PEM, PKCS #1 ("RSA PRIVATE
// KEY", openssl genrsa) or PKCS #8 ("PRIVATE KEY", openssl genpkey).
func ParsePrivateKey(data []byte) (*rsa.PrivateKey, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("not a PEM file")
	}
	switch b.Type {
	case "RSA PRIVATE KEY":
		return x509.ParsePKCS1PrivateKey(b.Bytes)
	case "PRIVATE KEY":
		k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
		if err != nil {
			return nil, err
		}
		rk, ok := k.(*rsa.PrivateKey)
		if !ok {
			return nil, fmt.Errorf("a %T key: iperf3 authentication takes RSA", k)
		}
		return rk, nil
	}
	return nil, fmt.Errorf("a PEM %q block: want an RSA private key", b.Type)
}
