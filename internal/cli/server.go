package cli

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/spf13/cobra"
	"github.com/tcpscope/tcpscope/internal/daemon"
	"github.com/tcpscope/tcpscope/internal/serve"
	"github.com/tcpscope/tcpscope/internal/server"
)

type serverFlags struct {
	config     string
	listen     string
	port       int    // iperf3's -p: replaces the port of --listen
	bind       string // iperf3's -B: replaces the host of --listen
	limits     serve.Limits
	limitsFile string
	check      bool
	health     string
	// Access tokens (native clients) and iperf3's own authentication.
	requireToken  bool
	tokenKeys     []string
	tokenAudience string
	tokenIssuer   string
	tokenLifetime time.Duration
	rsaKey        string
	usersFile     string
	skew          int
	pkcs1         bool
	tlsCert       string
	tlsKey        string
	jsonLog       bool
	debug         bool
	// iperf3's server habits.
	oneOff      bool
	daemon      bool
	pidfile     string
	logfile     string
	idleTimeout time.Duration

	// allowAffinity: clients may pin the server's process (test -A n,m).
	allowAffinity bool
}

// limitFlags are the flags a limits file replaces.
var limitFlags = []string{"max-tests", "max-duration", "max-streams", "max-total-streams", "max-tests-per-address", "max-pending-per-address", "max-pending"}

// newServerCmd is the server command; args are the whole command line,
// which -D runs again in the background.
func newServerCmd(args []string, stdout, stderr io.Writer) *cobra.Command {
	f := &serverFlags{limits: serve.DefaultLimits, tokenLifetime: 24 * time.Hour}
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Serve tcpscope tests, many clients at once",
		Long: `Serve memory-to-memory tests. Unlike iperf3's server, several clients can
test at once, up to --max-tests; a client over a limit gets a clear
"server busy" error. SIGINT or SIGTERM stops the running tests cleanly:
their clients still get results. SIGUSR1 (or POST /lameduck on --health)
puts the server in lame-duck mode: it admits no new test, /healthz says
"draining" (503), and it exits once the running tests have finished.
GET /healthz is also served over HTTP (HTTPS with --tls-cert) on the
server's own port, which serves tcpscope and iperf3 clients too.

For a public server, --limits FILE gives each class of client networks
its own limits (allow or deny, tests, streams, duration, TCP and UDP rate
caps, protocols); --check prints what a file means and exits. An example
is deploy/limits.toml in tcpscope's source.

iperf3's server habits: -1 serves one test and exits, 0 when it completed
(the exit code of its failure otherwise); connections refused before a
test is admitted (a bad hello, failed authentication, a limit) do not use
it up, and other clients hear "server busy" while it runs. -D runs the
server in the background, detached from the terminal (output to --logfile,
or nowhere), once it listens; -I writes its pid. --idle-timeout stops a
server no test has come to for that long (iperf3 restarts a stuck server;
here every test is bounded by --max-duration, so idle only means nobody
came): exit 0, or 5 with -1, whose test never came.

--config FILE takes the settings from a TOML file whose keys are these
flags' long names (listen = ":5201", token-key = ["a.pem"], json-log =
true); a flag on the command line overrides the file.`,
		Args: noArgs("tcpscope server --listen :5201"),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := applyConfigFile(cmd, f.config); err != nil {
				return err
			}
			child := daemon.Child()
			if f.daemon && child == nil {
				return startDaemon(args, f, stdout, stderr)
			}
			if f.logfile != "" {
				lf, err := os.OpenFile(f.logfile, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
				if err != nil {
					child.Fail("--logfile: " + err.Error())
					return usagef("give a file the server may write", "--logfile: %v", err)
				}
				defer lf.Close()
				stdout, stderr = lf, lf
			}
			err := runServer(cmd, f, child, stdout, stderr)
			if err == nil {
				return nil
			}
			code, line := errorLine(err)
			child.Fail(line)
			switch {
			case f.jsonLog:
				// With --json-log even the error that ends the server
				// is a JSON line, for the log shipper that reads them.
				slog.New(slog.NewJSONHandler(stderr, nil)).Error("server failed", "err", line, "exit_code", code)
				return &exitError{code: code}
			case f.logfile != "":
				fmt.Fprintln(stderr, "tcpscope: "+line) // the log says why it ended too
			}
			return err
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "take settings from this TOML file (keys: these flags' names without --; the command line overrides it)")
	fl.StringVar(&f.listen, "listen", ":5201", "address to listen on")
	fl.IntVarP(&f.port, "port", "p", 0, "port to listen on, as iperf3 -s -p (overrides the one in --listen)")
	fl.StringVarP(&f.bind, "bind", "B", "", "address to listen on, as iperf3 -s -B (overrides the host in --listen)")
	fl.IntVar(&f.limits.MaxTests, "max-tests", f.limits.MaxTests, "concurrent tests")
	fl.Var(seconds{&f.limits.MaxDuration}, "max-duration", "longest test, omitted start included")
	fl.IntVar(&f.limits.MaxStreams, "max-streams", f.limits.MaxStreams, "streams per test, both directions counted")
	fl.IntVar(&f.limits.MaxTotalStreams, "max-total-streams", f.limits.MaxTotalStreams, "streams of all running tests together (bounds buffer memory)")
	fl.IntVar(&f.limits.MaxTestsPerAddr, "max-tests-per-address", f.limits.MaxTestsPerAddr, "concurrent tests from one client address")
	fl.IntVar(&f.limits.MaxPendingPerAddr, "max-pending-per-address", f.limits.MaxPendingPerAddr, "connections from one address not yet part of a test (more are closed at once)")
	fl.IntVar(&f.limits.MaxPending, "max-pending", f.limits.MaxPending, "connections from all addresses not yet part of a test")
	fl.StringVar(&f.limitsFile, "limits", "", "limits file: classes of client networks, each with its own limits (TOML; see deploy/limits.toml)")
	fl.BoolVar(&f.check, "check", false, "check the limits (of --limits, or the flags), print them and exit")
	fl.StringVar(&f.health, "health", "", "serve GET /healthz and POST /lameduck (from loopback) over HTTP at this address, e.g. 127.0.0.1:9201")
	fl.BoolVar(&f.requireToken, "require-token", false, "admit only tests with an access token (native clients: --token; iperf3 clients: iperf3's own authentication)")
	fl.StringArrayVar(&f.tokenKeys, "token-key", nil, "key that verifies access tokens: an Ed25519 public key (PEM or JSON Web Key) or an HMAC secret file; repeat for several")
	fl.StringVar(&f.tokenAudience, "token-audience", "", "this server's name, which a token's audience must include (recommended: a token for one server is then no pass to another)")
	fl.StringVar(&f.tokenIssuer, "token-issuer", "", "the issuer a token must name")
	fl.Var(seconds{&f.tokenLifetime}, "token-max-lifetime", "refuse tokens valid for longer than this from now")
	fl.StringVar(&f.rsaKey, "rsa-private-key-path", "", "iperf3 authentication: the RSA private key that decrypts clients' credentials (as iperf3 -s)")
	fl.StringVar(&f.usersFile, "authorized-users-path", "", "iperf3 authentication: the file of user,sha256 lines (as iperf3 -s)")
	fl.IntVar(&f.skew, "time-skew-threshold", 10, "iperf3 authentication: the largest clock difference allowed, in seconds")
	fl.BoolVar(&f.pkcs1, "use-pkcs1-padding", false, "iperf3 authentication: also accept PKCS #1 v1.5 padding, as clients before iperf3 3.17 send (a decryption-oracle risk: CVE-2024-26306)")
	fl.StringVar(&f.tlsCert, "tls-cert", "", "serve native control connections over TLS only, with this certificate (PEM; data connections stay plain)")
	fl.StringVar(&f.tlsKey, "tls-key", "", "the private key of --tls-cert (PEM)")
	fl.BoolVar(&f.jsonLog, "json-log", false, "log in JSON lines")
	fl.BoolVar(&f.debug, "debug", false, "log connection details")
	fl.BoolVarP(&f.oneOff, "one-off", "1", false, "serve one test, then exit, as iperf3 -s -1 (refused connections do not count)")
	fl.BoolVarP(&f.daemon, "daemon", "D", false, "run in the background, detached from the terminal, as iperf3 -D (output to --logfile, or discarded)")
	fl.StringVarP(&f.pidfile, "pidfile", "I", "", "write the server's process id to this file (removed at exit), as iperf3 -I")
	fl.StringVar(&f.logfile, "logfile", "", "append the server's output and log to this file instead of stdout and stderr")
	fl.Var(seconds{&f.idleTimeout}, "idle-timeout", "exit when no test has run for this long (seconds, or 10m)")
	fl.BoolVar(&f.allowAffinity, "allow-affinity", false, "let a client pin this server's process to a CPU for its test (test -A n,m), one test at a time; off: ignored with a warning (the pin holds every test, so a public server must not let a client choose it)")
	return cmd
}

// startDaemon is -D: the same command line again, in the background; this
// process exits once that one listens, or with its error.
func startDaemon(args []string, f *serverFlags, stdout, stderr io.Writer) error {
	if f.check {
		return usagef("drop -D: --check prints and exits", "-D with --check")
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("-D: find this program: %w", err)
	}
	pid, err := daemon.Start(self, args, f.logfile, 30*time.Second)
	var ce *daemon.ChildError
	if errors.As(err, &ce) {
		fmt.Fprintln(stderr, "tcpscope: "+ce.Line)
		if ce.Code <= 0 {
			ce.Code = ExitFailure
		}
		return &exitError{code: ce.Code}
	}
	if err != nil {
		return err
	}
	where := "output discarded (--logfile FILE keeps it)"
	if f.logfile != "" {
		where = "output to " + f.logfile
	}
	fmt.Fprintf(stdout, "tcpscope server running in the background, pid %d, %s\n", pid, where)
	return nil
}

// checkLimitFlags refuses the flags' limits beside a limits file,
// which replaces them.
func checkLimitFlags(cmd *cobra.Command, f *serverFlags) error {
	if f.limitsFile == "" {
		return nil
	}
	for _, name := range limitFlags {
		if cmd.Flags().Changed(name) {
			return usagef("set it in the limits file instead, in its [server] or [default] section", "--%s and --limits together", name)
		}
	}
	return nil
}

// applyConfigFile sets the flags a --config file sets and the command
// line does not.
func applyConfigFile(cmd *cobra.Command, name string) error {
	if name == "" {
		return nil
	}
	data, err := os.ReadFile(name)
	if err != nil {
		return usagef("give the path of a readable TOML file", "--config: %v", err)
	}
	fl := cmd.Flags()
	settings, err := server.ParseFile(data, func(n string) bool {
		return fl.Lookup(n) != nil && n != "config" && n != "help"
	})
	if err != nil {
		return usagef("fix the file: its keys are tcpscope server's flags without --", "--config %s: %v", name, err)
	}
	for _, st := range settings {
		if fl.Changed(st.Name) {
			continue // the command line overrides the file
		}
		for _, v := range st.Values {
			if err := fl.Set(st.Name, v); err != nil {
				return usagef("give the value as the flag takes it", "--config %s: %s = %q: %v", name, st.Name, v, err)
			}
		}
	}
	return nil
}

// listenAddr is --listen with iperf3's -p and -B applied.
func listenAddr(f *serverFlags) (string, error) {
	if f.port == 0 && f.bind == "" {
		return f.listen, nil
	}
	host, port, err := net.SplitHostPort(f.listen)
	if err != nil {
		return "", usagef("--listen takes HOST:PORT, e.g. :5201 or [::1]:5201", "bad --listen %q", f.listen)
	}
	if f.port != 0 {
		if f.port < 1 || f.port > 65535 {
			return "", usagef("a port is 1 to 65535", "bad --port %d", f.port)
		}
		port = fmt.Sprint(f.port)
	}
	if f.bind != "" {
		host = f.bind
	}
	return net.JoinHostPort(host, port), nil
}

// serverConfig is the server the flags describe.
func serverConfig(f *serverFlags, logger *slog.Logger, stdout io.Writer, ready *daemon.Reporter) (server.Config, error) {
	addr, err := listenAddr(f)
	if err != nil {
		return server.Config{}, err
	}
	return server.Config{
		Version: Version, Listen: addr, Limits: f.limits, LimitsFile: f.limitsFile, Health: f.health,
		RequireToken: f.requireToken, TokenKeys: f.tokenKeys, TokenAudience: f.tokenAudience, TokenIssuer: f.tokenIssuer,
		TokenLifetime: f.tokenLifetime, RSAKey: f.rsaKey, UsersFile: f.usersFile, Skew: time.Duration(f.skew) * time.Second,
		PKCS1: f.pkcs1, TLSCert: f.tlsCert, TLSKey: f.tlsKey, OneTest: f.oneOff, IdleTimeout: f.idleTimeout,
		AllowAffinity: f.allowAffinity, JSONLog: f.jsonLog, Pidfile: f.pidfile, Logger: logger, Stdout: stdout,
		Ready: ready.Ready,
	}, nil
}

// serverLogger logs as the flags say: text or JSON lines, debug or not.
func serverLogger(f *serverFlags, stderr io.Writer) *slog.Logger {
	level := slog.LevelInfo
	if f.debug {
		level = slog.LevelDebug
	}
	opts := &slog.HandlerOptions{Level: level}
	if f.jsonLog {
		return slog.New(slog.NewJSONHandler(stderr, opts))
	}
	return slog.New(slog.NewTextHandler(stderr, opts))
}

// runServer serves until stopped; ready hears once it listens (-D).
func runServer(cmd *cobra.Command, f *serverFlags, ready *daemon.Reporter, stdout, stderr io.Writer) error {
	if err := checkLimitFlags(cmd, f); err != nil {
		return err
	}
	cfg, err := serverConfig(f, serverLogger(f, stderr), stdout, ready)
	if err != nil {
		return err
	}
	srv, err := server.New(cfg)
	if err != nil {
		return err
	}
	if f.check {
		srv.Check(stdout)
		return nil
	}
	return srv.Run(cmd.Context())
}
