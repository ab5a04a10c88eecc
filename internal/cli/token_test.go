package cli

import (
	"path/filepath"
	"strings"
	"testing"
)

// keygen, issue and verify as an operator runs them, and the server's
// token and iperf3 authentication flags refused when incomplete.
func TestTokenCommands(t *testing.T) {
	dir := t.TempDir()
	prefix := filepath.Join(dir, "t")
	if code, out, errs := run("token", "keygen", "--out", prefix); code != 0 || !strings.Contains(out, "t.pub") {
		t.Fatalf("keygen: exit %d %s %s", code, out, errs)
	}
	if code, _, errs := run("token", "keygen", "--out", prefix); code != ExitUsage || !strings.Contains(errs, "file exists") {
		t.Errorf("keygen over an existing key: exit %d %s", code, errs)
	}
	code, tok, errs := run("token", "issue", "--key", prefix+".key", "--subject", "alice", "--audience", "ts1", "--ttl", "5m")
	if code != 0 || strings.Count(strings.TrimSpace(tok), ".") != 2 {
		t.Fatalf("issue: exit %d %q %s", code, tok, errs)
	}
	tok = strings.TrimSpace(tok)
	if code, out, _ := run("token", "verify", "--key", prefix+".pub", "--audience", "ts1", tok); code != 0 || !strings.Contains(out, `subject "alice"`) {
		t.Errorf("verify: exit %d %s", code, out)
	}
	if code, _, errs := run("token", "verify", "--key", prefix+".pub", "--audience", "ts2", tok); code != ExitBusy || !strings.Contains(errs, "not for this server") {
		t.Errorf("verify for another server: exit %d %s", code, errs)
	}
	if code, _, errs := run("token", "issue", "--key", prefix+".pub", "--subject", "a"); code != ExitUsage || !strings.Contains(errs, "public key") {
		t.Errorf("issue with a public key: exit %d %s", code, errs)
	}
	if code, out, _ := run("token", "keygen", "--hmac", "--out", prefix+"h"); code != 0 || !strings.Contains(out, "th.secret") {
		t.Errorf("keygen --hmac: exit %d %s", code, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--require-token"}, "--require-token without --token-key"},
		{[]string{"--token-key", prefix + ".pub"}, "--token-key without --require-token"},
		{[]string{"--require-token", "--token-key", filepath.Join(dir, "none")}, "read --token-key"},
		{[]string{"--require-token", "--token-key", prefix + ".key", "--rsa-private-key-path", prefix + ".key"}, "go together"},
		{[]string{"--rsa-private-key-path", prefix + ".key", "--authorized-users-path", prefix + ".pub"}, "--rsa-private-key-path"},
	} {
		code, _, errs := run(append([]string{"server", "--listen", "127.0.0.1:0"}, tc.args...)...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("server %v: exit %d, %q; want %q", tc.args, code, errs, tc.want)
		}
	}
}

// The TLS flags refused when they cannot work together.
func TestTLSFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"server", "--listen", "127.0.0.1:0", "--tls-cert", "x.pem"}, "--tls-cert and --tls-key go together"},
		{[]string{"server", "--listen", "127.0.0.1:0", "--tls-cert", "x.pem", "--tls-key", "y.pem"}, "load --tls-cert"},
		{[]string{"test", "127.0.0.1:9", "--tls-pin", "sha256/short"}, "want sha256/"},
		{[]string{"test", "127.0.0.1:9", "--tls-pin", "sha256/AAAA", "--tls-ca", "x.pem"}, "--tls-pin and --tls-ca together"},
		{[]string{"test", "127.0.0.1:9", "--tls-ca", "/nonexistent.pem"}, "read --tls-ca"},
	} {
		code, _, errs := run(tc.args...)
		if code != ExitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, %q; want %q", tc.args, code, errs, tc.want)
		}
	}
}
