package server

import (
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/tcpscope/tcpscope/internal/fault"
	"github.com/tcpscope/tcpscope/internal/i3auth"
	"github.com/tcpscope/tcpscope/internal/limits"
	"github.com/tcpscope/tcpscope/internal/perf"
	"github.com/tcpscope/tcpscope/internal/serve"
	"github.com/tcpscope/tcpscope/internal/token"
)

// Config is a server as its operator describes it.
type Config struct {
	Version string
	// Listen is the address to listen on (":5201").
	Listen string
	// Limits are the flags' limits; LimitsFile, when set, replaces them
	// with a limits file's classes.
	Limits     serve.Limits
	LimitsFile string
	// Health is the operator's HTTP listener (GET /healthz, POST
	// /lameduck from loopback); "" for none.
	Health string
	// Access tokens for native clients: required with these key files,
	// audience, issuer and longest lifetime.
	RequireToken  bool
	TokenKeys     []string
	TokenAudience string
	TokenIssuer   string
	TokenLifetime time.Duration
	// iperf3's own authentication: the RSA key, the users file, the
	// clock skew allowed, PKCS #1 v1.5 padding accepted.
	RSAKey    string
	UsersFile string
	Skew      time.Duration
	PKCS1     bool
	// TLSCert and TLSKey serve native control connections (and HTTPS)
	// over TLS.
	TLSCert, TLSKey string
	// OneTest serves one test, then stops (iperf3 -s -1); IdleTimeout
	// stops a server no test came to.
	OneTest     bool
	IdleTimeout time.Duration
	// AllowAffinity lets a client pin the server's process for its test.
	AllowAffinity bool
	// JSONLog: every line the server writes is JSON (stdout's too), and
	// iperf3 clients asking for the server's output get JSON.
	JSONLog bool
	// Pidfile, when set, holds the server's process ID while it runs.
	Pidfile string
	Logger  *slog.Logger
	// Stdout takes the server's announcements (when not JSONLog).
	Stdout io.Writer
	// Ready is called once the server listens (-D's child tells its
	// parent then).
	Ready func()
}

func badConfig(hint, format string, args ...any) error {
	return fault.Errorf(fault.BadConfig, hint, format, args...)
}

// policy is the server's policy: the limits file's, or the flags'.
func (c *Config) policy() (limits.Table, error) {
	if c.LimitsFile == "" {
		l := c.Limits
		if l.MaxTests < 1 || l.MaxStreams < 1 || l.MaxTotalStreams < 1 || l.MaxDuration < time.Second ||
			l.MaxTestsPerAddr < 1 || l.MaxPendingPerAddr < 1 || l.MaxPending < 1 {
			return limits.Table{}, badConfig("limits must be positive, --max-duration at least 1s", "bad server limits")
		}
		t := l.Table()
		if err := t.Check(); err != nil {
			return limits.Table{}, badConfig("see tcpscope server --help for each limit's range", "bad server limits: %v", err)
		}
		return t, nil
	}
	data, err := os.ReadFile(c.LimitsFile)
	if err != nil {
		return limits.Table{}, badConfig("give the path of a limits file; deploy/limits.toml is an example", "read limits: %v", err)
	}
	t, err := limits.Parse(data, limits.Builtin())
	if err != nil {
		return limits.Table{}, badConfig("fix the file, then check it with tcpscope server --limits FILE --check", "limits file %s: %v", c.LimitsFile, err)
	}
	t.Source = c.LimitsFile
	return t, nil
}

// tokens is the verifier of native clients' access tokens (nil when not
// required).
func (c *Config) tokens() (*token.Verifier, error) {
	switch {
	case c.RequireToken && len(c.TokenKeys) == 0:
		return nil, badConfig("give the key that verifies them: --token-key FILE (tcpscope token keygen makes one)", "--require-token without --token-key")
	case !c.RequireToken && len(c.TokenKeys) > 0:
		return nil, badConfig("add --require-token, or drop --token-key", "--token-key without --require-token")
	case !c.RequireToken:
		return nil, nil
	}
	v := &token.Verifier{Issuer: c.TokenIssuer, Audience: c.TokenAudience, MaxLifetime: c.TokenLifetime, Leeway: 30 * time.Second}
	for _, name := range c.TokenKeys {
		data, err := os.ReadFile(name)
		if err != nil {
			return nil, badConfig("give a readable key file", "read --token-key: %v", err)
		}
		k, err := token.ParseKey(data)
		if err != nil {
			return nil, badConfig("an Ed25519 public key (PEM or JSON Web Key), or an HMAC secret of 32 bytes or more", "--token-key %s: %v", name, err)
		}
		v.Keys = append(v.Keys, k)
	}
	return v, nil
}

// iperf3Auth is stock iperf3's authentication of its clients (nil when
// not set).
func (c *Config) iperf3Auth() (*i3auth.Authenticator, error) {
	if (c.RSAKey == "") != (c.UsersFile == "") {
		return nil, badConfig("iperf3 authentication needs both, as iperf3 -s does", "--rsa-private-key-path and --authorized-users-path go together")
	}
	if c.RSAKey == "" {
		return nil, nil
	}
	data, err := os.ReadFile(c.RSAKey)
	if err != nil {
		return nil, badConfig("give a readable RSA private key (PEM)", "read --rsa-private-key-path: %v", err)
	}
	key, err := i3auth.ParsePrivateKey(data)
	if err != nil {
		return nil, badConfig("an RSA private key in PEM, e.g. from openssl genrsa -out private.pem 2048", "--rsa-private-key-path %s: %v", c.RSAKey, err)
	}
	if _, err := os.Stat(c.UsersFile); err != nil {
		return nil, badConfig("give the authorized-users file (lines of user,sha256 of {user}password)", "--authorized-users-path: %v", err)
	}
	if c.Skew < time.Second {
		return nil, badConfig("use a positive number of seconds", "bad --time-skew-threshold %d", int(c.Skew/time.Second))
	}
	return &i3auth.Authenticator{Key: key, UsersFile: c.UsersFile, Skew: c.Skew, PKCS1: c.PKCS1}, nil
}

// tls loads the certificate and its key into srv, and says its pin for
// clients to pin it by ("" without TLS).
func (c *Config) tls(srv *serve.Server) (string, error) {
	if c.TLSCert == "" && c.TLSKey == "" {
		return "", nil
	}
	if c.TLSCert == "" || c.TLSKey == "" {
		return "", badConfig("give both, the certificate and its key", "--tls-cert and --tls-key go together")
	}
	cfg, pin, err := perf.LoadServerTLS(c.TLSCert, c.TLSKey)
	if err != nil {
		return "", badConfig("PEM files of a certificate and its private key", "load --tls-cert and --tls-key: %v", err)
	}
	srv.TLS = cfg
	return pin, nil
}
